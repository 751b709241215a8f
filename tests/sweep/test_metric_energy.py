"""`gpusim sweep --metric energy` (issue 39): the best point is the one with the least energy_j, points
without a power model are left out of the ranking, and the table shows energy and watts."""

import json

import pytest

from gpusim.cli.main import main
from gpusim.sweep.result import SweepResult


def _row(point, config, cycles, energy, clock=1410):
    return {"point": point, "workload": "saxpy", "config": config, "config_hash": "h", "label": config, "n": 65536,
            "warp_scheduler": "gto", "seed": 0, "status": "ok", "error": None, "verified": True, "cached": False,
            "wall_seconds": 0.1, "cycles": cycles, "clock_mhz": clock, "kernel_seconds": cycles / (clock * 1e6),
            "energy_j": energy, "average_power_w": None if energy is None else energy / (cycles / (clock * 1e6)),
            "achieved_occupancy": 0.4, "theoretical_occupancy": 1.0, "warp_states_pct.selected": 5.0,
            "warp_states_pct.long_scoreboard": 40.0, "verdict": "latency-bound", "verdict_reason": "few warps"}


def _sweep(metric):
    rows = [_row(0, "a100", 1000, 3e-4), _row(1, "h200", 1200, 2e-4, 1980), _row(2, "gtx980", 900, None, 1216)]
    return SweepResult.build("saxpy", {"n": 65536, "block": 256}, [], rows, {"seed": 0}, metric=metric)


def test_by_energy_the_best_is_the_least_energy_and_a_config_without_power_is_left_out():
    s = _sweep("energy")
    assert s.ranked_by() == "energy_j"
    assert s.best()["config"] == "h200" and s.worst()["config"] == "a100"
    assert [r["config"] for r in s.ok_rows()] == ["a100", "h200"]
    text = s.explain()
    assert "best        h200: 200.000 uJ" in text
    assert "vs worst    100.000 uJ less (33.3%) than a100 (300.000 uJ)" in text
    assert s.to_dict()["metric"] == "energy" and s.to_dict()["best"] == 1
    assert "energy uJ" in s.table().splitlines()[0]


def test_by_time_the_same_rows_rank_by_time():
    s = _sweep("time")
    assert s.ranked_by() == "kernel_seconds"
    assert s.best()["config"] == "h200"  # 0.606 us against a100's 0.709 and gtx980's 0.740
    assert "energy uJ" not in s.table().splitlines()[0]


def test_a_real_sweep_by_energy_picks_the_least_energy_point_and_plot_draws_energy(tmp_path):
    from gpusim.plot import load_input, sweep_figure

    out = tmp_path / "s.json"
    assert main(["sweep", "saxpy", "-c", "a100,h200", "--set", "n=65536", "--block", "128,256", "--metric",
                 "energy", "--jobs", "1", "--no-cache", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    least = min(d["points"], key=lambda p: p["energy_j"])
    assert d["ranked_by"] == "energy_j" and d["best"] == least["point"]
    for p in d["points"]:
        assert p["energy_j"] == pytest.approx(p["average_power_w"] * p["power_kernel_seconds"], rel=1e-12)
    # plot --metric takes the same words: energy draws energy_j, time what ranks the points by time
    for word, column in (("energy", "energy_j"), ("time", "kernel_seconds")):
        ax = sweep_figure(load_input(out), word).axes[0]
        assert ax.get_ylabel().startswith(column)
        heights = sorted(b.get_height() for c in ax.containers for b in c) or sorted(
            y for line in ax.lines for y in line.get_ydata())
        assert heights == pytest.approx(sorted(p[column] for p in d["points"]))
    assert main(["plot", str(out), "--kind", "sweep", "--metric", "energy", "-o", str(tmp_path / "e.png")]) == 0
