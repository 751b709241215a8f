"""Design sweeps an architect acts on (issue 37, items 1, 4 and 5): the best design across clocks is the
fastest in time, not in cycles; the DRAM bandwidth sweeps (its data rate moves with it) and fields vary
together with --zip; and a sweep over clocks, over configs and over DRAM bandwidth each draws its chart,
whose series are the sweep's points."""

import json

import pytest

from gpusim.cli.main import main
from gpusim.plot import load_input, sweep_figure
from gpusim.sweep.result import SweepResult

BASE = ["sweep", "stream_copy", "--set", "n=65536", "--jobs", "1", "--no-cache"]


def _row(point, clock, cycles, label=None):
    return {"point": point, "workload": "stream_copy", "config": "a100", "config_hash": "h",
            "label": label or f"a100 clock_mhz={clock}", "n": 65536, "override.chip.clock_mhz": clock,
            "warp_scheduler": "gto", "seed": 0, "status": "ok", "error": None, "verified": True, "cached": False,
            "wall_seconds": 0.1, "cycles": cycles, "clock_mhz": clock, "kernel_seconds": cycles / (clock * 1e6),
            "achieved_occupancy": 0.4, "theoretical_occupancy": 1.0, "warp_states_pct.selected": 5.0,
            "warp_states_pct.long_scoreboard": 40.0, "verdict": "latency-bound", "verdict_reason": "few warps"}


# The clock sweep: at 705 MHz the kernel takes the fewest cycles and the most time.
CLOCKS = {705: 4038, 1410: 4730, 2820: 8982}  # cycles: 5.728 us, 3.355 us, 3.185 us


def _clock_sweep():
    rows = [_row(i, clock, cycles) for i, (clock, cycles) in enumerate(CLOCKS.items())]
    return SweepResult.build("stream_copy", {"n": 1048576, "block": 256}, ["chip.clock_mhz"], rows, {"seed": 0})


def test_across_clocks_the_best_is_the_fastest_in_time_and_says_so():
    s = _clock_sweep()
    assert s.ranked_by() == "kernel_seconds"
    assert s.best()["override.chip.clock_mhz"] == 2820 and s.worst()["override.chip.clock_mhz"] == 705
    text = s.explain()
    assert "best        clock_mhz=2820: 3.185 us (8,982 cycles at 2820 MHz), the fastest of the 3 points" in text
    assert "ranked by   time, not cycles: the clocks differ (705, 1410, 2820 MHz)" in text
    assert "vs worst    2.543 us less (44.4%, 1.80x faster) than clock_mhz=705 (5.728 us)" in text
    assert json.loads(s.to_json())["ranked_by"] == "kernel_seconds" and s.to_dict()["best"] == 2


def test_at_one_clock_the_best_is_by_cycles():
    s = SweepResult.build("stream_copy", {"n": 1, "block": 256}, [], [_row(0, 1410, 900, "a100"),
                                                                       _row(1, 1410, 800, "a100")], {"seed": 0})
    assert s.ranked_by() == "cycles" and s.best()["point"] == 1
    assert "ranked by" not in s.explain()
    assert "best        a100: 800 cycles (0.567 us), the fewest of the 2 points that ran" in s.explain()


def test_a_real_clock_sweep_crowns_the_fastest_design(tmp_path, capsys):
    out = tmp_path / "clocks.json"
    assert main(BASE + ["--config-set", "clock_mhz=705,1410,2820", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    fastest = min(d["points"], key=lambda p: p["kernel_seconds"])
    assert d["best"] == fastest["point"] and fastest["override.chip.clock_mhz"] == 2820
    # compared the other way round: a100 against gtx980 (1410 and 1216 MHz) by time
    assert main(BASE + ["--config", "a100,gtx980", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    fastest = min(d["points"], key=lambda p: p["kernel_seconds"])
    assert d["best"] == fastest["point"] and d["ranked_by"] == "kernel_seconds"


def test_dram_bandwidth_sweeps_with_its_data_rate(tmp_path):
    out = tmp_path / "bw.json"
    assert main(BASE + ["--config-set", "dram.bandwidth_gbps=800,1555,3000", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert [p["status"] for p in d["points"]] == ["ok"] * 3
    assert [p["peak_dram_bandwidth_gbps"] for p in d["points"]] == pytest.approx([800, 1555, 3000], rel=1e-3)


def test_zip_varies_two_fields_together(tmp_path, capsys):
    out = tmp_path / "zip.json"
    assert main(BASE + ["--config-set", "dram.bandwidth_gbps=800,3000", "--config-set", "l2.size_bytes=20971520,"
                        "41943040", "--zip", "dram.bandwidth_gbps,l2.size_bytes", "--json", str(out)]) == 0
    pts = json.loads(out.read_text())["points"]
    assert [(p["override.dram.bandwidth_gbps"], p["override.l2.size_bytes"]) for p in pts] == [
        (800, 20971520), (3000, 41943040)]
    assert main(BASE + ["--config-set", "dram.bandwidth_gbps=800,3000", "--config-set", "l2.size_bytes=20971520",
                        "--zip", "dram.bandwidth_gbps,l2.size_bytes"]) == 2
    assert ("--zip dram.bandwidth_gbps,l2.size_bytes: the axes vary together, so they need as many values each; "
            "got dram.bandwidth_gbps 2, l2.size_bytes 1") in capsys.readouterr().err


def _series(fig) -> dict[str, list[tuple]]:
    """Each line of a chart as its label -> [(x, y)], or the bars as [(tick label, height)]."""
    ax = fig.axes[0]
    if ax.lines:
        return {line.get_label(): [tuple(p) for p in line.get_xydata().tolist()] for line in ax.lines}
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    return {c.get_label(): list(zip(ticks, [b.get_height() for b in c], strict=True)) for c in ax.containers}


@pytest.mark.parametrize(("argv", "x", "metric"), [
    (["--config-set", "clock_mhz=705,1410,2820"], "override.chip.clock_mhz", "kernel_seconds"),
    (["--config-set", "dram.bandwidth_gbps=800,1555,3000"], "override.dram.bandwidth_gbps", "cycles"),
    (["--config", "a100,gtx980,h200"], "config", "kernel_seconds"),
])
def test_design_sweeps_draw_their_points(argv, x, metric, tmp_path):
    table = tmp_path / "s.csv"
    assert main(BASE + argv + ["--csv", str(table)]) == 0
    assert main(["plot", str(table), "--kind", "sweep", "-o", str(tmp_path / "s.png")]) == 0
    rows = load_input(table).ok_rows
    fig = sweep_figure(load_input(table))
    [points] = _series(fig).values()
    if x == "config":  # categories: one bar per config, in the sweep's order
        assert points == [(r["config"], pytest.approx(r[metric])) for r in rows]
    else:
        assert points == [(r[x], pytest.approx(r[metric])) for r in rows]
    assert fig.axes[0].get_ylabel().startswith(metric)


def test_sol_of_a_sweep_on_a_config_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mygpu.yaml").write_text("extends: a100\nchip:\n  sm_count: 54\n")
    assert main(BASE + ["--config", "mygpu.yaml", "--config-set", "dram.bandwidth_gbps=800,1600",
                        "--csv", "bw.csv"]) == 0
    assert main(["plot", "bw.csv", "--kind", "sol", "-o", "sol.png"]) == 0
    assert (tmp_path / "sol.png").stat().st_size > 0
