"""The HTML report (`gpusim report`): its sections carry the result's own figures, it fetches nothing,
and it renders in a real browser (headless Chromium) with no console errors and the verdict on the page.
The browser test skips where no Chromium is installed, except in CI (`CI=true`), where it fails: .ci/run
installs Chromium, and a run where that failed must not pass without the page ever being opened."""

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpusim.cli import main as cli_main
from gpusim.errors import GpusimError
from gpusim.plot.report import report_html

VOID = {"meta", "br", "img", "input", "link", "hr", "area", "base", "col", "embed", "source", "track", "wbr"}


class _Tags(HTMLParser):
    """Every element opened is closed, in order (SVG's self-closed elements included)."""

    def __init__(self):
        super().__init__()
        self.stack, self.problems, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def page(saxpy):
    return report_html(saxpy)


def test_sections_carry_the_results_figures(saxpy, page):
    k = saxpy.kernel
    for heading in ("Summary", "Warp states", "Charts", "Occupancy"):
        assert f"<h2>{heading}</h2>" in page
    verdict = saxpy.verdict
    assert f"<b>{verdict.kind}</b>: {html.escape(verdict.summary)}" in page
    assert f"{k['cycles']:,} cycles = {k['kernel_seconds'] * 1e6:.3f} µs" in page
    # warp states in cycles per issued instruction, largest first, each = state cycles / warp instructions
    states = sorted(((s, c) for s, c in k["warp_states"].items() if c), key=lambda sc: -sc[1])
    shown = re.findall(r"<tr><th>(\w+)</th><td class=n>([\d.]+)</td>", page)
    assert [s for s, _ in shown] == [s for s, _ in states]
    for (_s, c), (_, per) in zip(states, shown, strict=True):
        assert float(per) == pytest.approx(c / k["warp_instructions"], abs=0.006)
    assert page.count("<svg") == 7 and page.count("<figcaption>") == 7


def test_the_page_is_well_formed_and_fetches_nothing(page):
    parser = _Tags()
    parser.feed(page)
    assert parser.problems == [] and parser.stack == []
    assert "<script" not in page.lower()
    # no address outside the file: only the SVG/XLink namespace names, which are never fetched
    urls = set(re.findall(r"""(?:src|href)\s*=\s*["']?(https?:[^"' >]+)""", page))
    assert urls == set()
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg",
                                                              "http://www.w3.org/1999/xlink"}


def test_a_functional_result_is_refused_with_the_reason(saxpy):
    functional = {k: v for k, v in saxpy.to_dict().items() if k != "kernel"}
    with pytest.raises(GpusimError, match=r"no kernel metrics \(a --functional result\?\)"):
        report_html(functional)


def test_the_command_writes_the_file_next_to_the_result(tmp_path, capsys, monkeypatch, result_files):
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", ["report"])
    src = tmp_path / "saxpy.json"
    src.write_text(result_files["saxpy"].read_text())
    assert cli_main.main(["report", str(src)]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'saxpy.html'}\n"
    assert (tmp_path / "saxpy.html").read_text().startswith("<!DOCTYPE html>")
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"points": [{"config": "a100", "status": "ok", "block": 64, "cycles": 5}]}))
    assert cli_main.main(["report", str(sweep), "-o", str(tmp_path / "x.html")]) == 2
    assert "a sweep table; `gpusim report` reads one result" in capsys.readouterr().err


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
NO_BROWSER = "no Chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)"


@pytest.fixture
def chromium():
    """The browser's path; without one, a skip on a developer's machine and a failure in CI."""
    if CHROMIUM is None:
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail(f"CI=true and {NO_BROWSER}: the HTML report's browser test cannot run", pytrace=False)
        pytest.skip(NO_BROWSER)
    return CHROMIUM


def test_renders_in_headless_chromium_without_console_errors(chromium, tmp_path, saxpy, page):
    path = tmp_path / "report.html"
    path.write_text(page)
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    dom = done.stdout
    assert f"<b>{saxpy.verdict.kind}</b>" in dom and dom.count("<svg") == 7


def test_the_source_view_is_in_the_report(tmp_path, monkeypatch, capsys):
    """`gpusim run --source --html`: the report has the per-line table, the FMA line with its samples."""
    from gpusim import simulate

    r = simulate("saxpy", "a100", n=4096, per_pc=True)
    page = report_html(r)
    assert "<h2>Source</h2>" in page and "saxpy.sasm" in page
    fma = next(x for x in r.source if x.get("text") and "fma" in x["text"])
    row = re.search(rf"<tr><td class=n>{fma['line']}</td>(.*?)</tr>", page).group(1)
    assert f"{fma['warp_instructions']:,}" in row and f"{fma['samples_pct']:.1f}" in row and "fma" in row
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", ["run"])
    monkeypatch.chdir(tmp_path)
    assert cli_main.main(["run", "saxpy", "--set", "n=4096", "--source", "--html", "r.html"]) == 0
    assert "<h2>Source</h2>" in (tmp_path / "r.html").read_text()
    out = capsys.readouterr().out
    assert "bottleneck" in out and "source view: saxpy on a100" in out  # (a file report leaves stdout's summary)


@pytest.mark.parametrize(("ci", "outcome"), [("true", f"Failed: CI=true and {NO_BROWSER}"),
                                             ("", "SKIPPED [1] tests/plot/test_report.py")])
def test_the_browser_test_cannot_skip_in_ci(ci, outcome, tmp_path):
    """The browser test run with no browser on PATH: in CI it fails, elsewhere it skips."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")}
    env.update(PATH=str(tmp_path), CI=ci)  # (an empty folder: no chromium, nothing else either)
    root = Path(__file__).parents[2]
    done = subprocess.run([sys.executable, "-m", "pytest", "-rsE", "-p", "no:cacheprovider", "-p", "no:xdist",
                           f"{Path(__file__)}::test_renders_in_headless_chromium_without_console_errors"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert outcome in done.stdout, done.stdout[-2000:]
    assert done.returncode == (1 if ci else 0)
