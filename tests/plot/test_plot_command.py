"""`gpusim plot` through the real entry point: every kind to a file, and bad input as one-line errors
naming the file (exit status 2)."""

import json

import pytest

from gpusim.cli import main as cli_main
from gpusim.config import load_config
from gpusim.plot import render
from tests.plot.helpers import assert_png, assert_svg, sweep_row


@pytest.fixture(autouse=True)
def _plot_command_only(monkeypatch):
    """Sibling subcommands are being written; build the parser from this one."""
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", ["plot"])


def plot(capsys, *argv):
    status = cli_main.main(["plot", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("kind, names", [
    ("occupancy", ["matmul"]), ("timeline", ["saxpy"]), ("stalls", ["saxpy", "matmul"]),
    ("units", ["saxpy", "matmul"]), ("memory", ["saxpy", "matmul"]), ("roofline", ["saxpy", "matmul"]),
])
def test_each_kind_from_results(tmp_path, capsys, result_files, kind, names):
    out = tmp_path / f"{kind}.png"
    status, stdout, err = plot(capsys, *[result_files[n] for n in names], "--kind", kind, "-o", out)
    assert (status, err) == (0, "") and stdout == f"wrote {out} ({kind})\n"
    assert_png(out)


def test_sweep_kind_and_stalls_per_sweep_point(tmp_path, capsys, saxpy):
    rows = [sweep_row(saxpy, 0), {**sweep_row(saxpy, 1), "block": 128, "cycles": saxpy.cycles + 100}]
    table = tmp_path / "sweep.json"
    table.write_text(json.dumps(rows))
    assert plot(capsys, table, "--kind", "sweep", "-o", tmp_path / "s.svg", "--metric", "cycles")[0] == 0
    assert_svg(tmp_path / "s.svg")
    fig = render("stalls", [table])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a100 block=256", "a100 block=128"]


def test_config_option_replaces_the_results_config(tmp_path, capsys, result_files):
    fig = render("roofline", [result_files["saxpy"]], cfg=load_config("gtx980"))
    assert "gtx980" in fig.axes[0].get_title()
    status, _, err = plot(capsys, result_files["saxpy"], "--kind", "roofline", "-o", tmp_path / "r.png",
                          "--config-set", "chip.sm_count=54")
    assert status == 2 and "--config-set needs --config" in err


@pytest.mark.parametrize("argv, message", [
    (["{saxpy}", "--kind", "pie"], "unknown kind 'pie' (kinds: occupancy, stalls"),
    (["{saxpy}", "{matmul}", "--kind", "timeline"], "--kind timeline draws one file, a result JSON"),
    (["{saxpy}", "--kind", "sweep"], "--kind sweep draws one file, a sweep table (CSV or JSON); got {saxpy} is a"),
    (["{bad}", "--kind", "stalls"], "{bad}: neither a result"),
    (["{saxpy}", "--kind", "stalls", "-o", "{tmp}/x.gif"], "x.gif: unknown image format"),
    (["{saxpy}", "{gtx}", "--kind", "roofline"], "draws one config's roofs, but the inputs ran on 2 configs"),
    (["{saxpy}", "--kind", "roofline", "--intensity", "l3"], "unknown intensity 'l3'"),
])
def test_bad_input_is_one_line_naming_the_file(tmp_path, capsys, result_files, argv, message):
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": 1}')
    gtx = tmp_path / "gtx.json"
    r = json.loads(result_files["saxpy"].read_text())
    gtx.write_text(json.dumps({**r, "config": "gtx980", "config_hash": load_config("gtx980").hash()}))
    names = {"saxpy": result_files["saxpy"], "matmul": result_files["matmul"], "bad": bad, "gtx": gtx, "tmp": tmp_path}
    argv = [a.format(**names) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "out.png")]
    status, _, err = plot(capsys, *argv)
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("gpusim plot: error: ") and message.format(**names) in err
    assert not (tmp_path / "out.png").exists()
