"""A sampled run's report (issue 37, item 2): `gpusim run --sample --html --json` builds the page and the
JSON from the result the terminal prints (the estimate, its bound, the verification of the blocks run
whole), says the metrics below are the whole kernel's estimate (issue 41), draws without a warning, and
`gpusim report` reads the JSON `run --json` wrote (config overrides included) into the same page."""

import json
import re
import warnings

from gpusim.cli.main import main

RUN = ["run", "ffma_peak", "--sample", "on", "--config-set", "chip.sm_count=4", "--set", "n=4096", "--set",
       "iters=20"]


def _text(page: str) -> str:
    """The page without its inline charts (whose SVG ids are random)."""
    return re.sub(r"<svg.*?</svg>", "<svg/>", page, flags=re.S)


def test_the_page_shows_what_the_terminal_prints(tmp_path, capsys):
    js, page = tmp_path / "s.json", tmp_path / "s.html"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a chart's UserWarning fails the test)
        assert main(RUN + ["--json", str(js), "--html", str(page)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    m = re.search(r"estimate +([\d,]+) cycles \+- ([\d.]+)% \(([\d,]+) - ([\d,]+)\) = ([\d,.]+) us", out)
    cycles, conf, low, high, us = m.groups()
    verified = re.search(r"\nverified +yes: (.*)\n", out).group(1)
    html = page.read_text()
    assert f"{cycles} cycles ± {conf}% ({low} – {high}) = {us} µs" in html
    assert f"{cycles} cycles ± {conf}% = {us} µs at 1410 MHz (the sampled estimate)" in html
    assert f"verified: {verified}" in html and "not verified" not in html and "not checked" not in html
    # the metrics are the whole kernel's, estimated (issue 41), not the largest sampled run's
    assert "The figures below are the whole kernel's, estimated from the sampled runs" in html
    assert "largest sampled run" not in html
    doc = json.loads(js.read_text())
    assert doc["kernel"]["cycles"] == int(cycles.replace(",", "")) and doc["kernel"]["blocks"] == 16  # the grid
    assert doc["launch"]["grid"][0] == 16 and doc["whole_kernel"]["warp_instructions"]["value"] == \
        doc["kernel"]["warp_instructions"] == doc["sampling"]["warp_instructions_estimated"]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["report", str(js), "-o", str(tmp_path / "r.html")]) == 0
    # (a sampled run has no per-block timeline: the chart's note names the source, the run's or the file)
    again = _text((tmp_path / "r.html").read_text()).replace(str(js), "&lt;result&gt;")
    assert again.split("simulated in")[0] == _text(html).split("simulated in")[0]
