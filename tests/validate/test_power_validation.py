"""`gpusim validate --power`: the power model's idle and stress microbenchmarks against the figures of
gpusim/data/validation/power.yaml."""

from __future__ import annotations

import json

import pytest

from gpusim.analysis.power_validation import references, validate_power
from gpusim.cli.main import main
from gpusim.config import load_config
from gpusim.errors import GpusimError


def test_h200_idle_is_within_15_percent_of_the_boards_readings(capsys):
    """Measured on the lent H200 (validation/cuda/results): 79.05 and 81.50 W with the clocks down, 124-126 W
    with them held at 1980 MHz; the model's idle = constant + memory + uncore leakage at 670 mV (SMs gated),
    and with every SM's leakage at 960 mV."""
    assert main(["validate", "--power", "-c", "h200", "--figure", "idle", "--figure", "idle_clocked",
                 "--json", "-"]) == 0
    rows = {r["bench"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    cfg = load_config("h200").power
    assert rows["idle"]["power_w"] == pytest.approx(cfg.constant_w + cfg.memory_static_w
                                                    + cfg.uncore_static_w * 670 / 960)
    assert rows["idle_clocked"]["power_w"] == pytest.approx(cfg.constant_w + cfg.memory_static_w
                                                            + cfg.uncore_static_w + 132 * cfg.sm_static_w)
    for bench, measured in (("idle", 80.3), ("idle_clocked", 125)):  # (79.05 + 81.50) / 2, rounded
        assert rows[bench]["reference_w"] == measured and rows[bench]["kind"] == "measured"
        assert abs(rows[bench]["power_w"] / measured - 1) <= 0.15 and rows[bench]["status"] == "ok"


def test_ffma_stress_on_h200_reaches_its_700_w_limit_and_the_clock_drops():
    v = validate_power("h200", benches=["ffma"])
    (r,) = v.rows
    assert r.unconstrained_power_w > 700 and r.power_w == pytest.approx(700, rel=1e-4)
    assert 1800 < r.clock_mhz < 1980 and r.status == "ok" and not v.failed


def test_a100_idle_and_dram_rows_carry_their_sources():
    refs = references("a100")
    assert refs["idle"]["watts"] == 60.5 and "PeerRead" in refs["idle"]["source"]
    assert refs["dram"]["known_gap"] and "Ethash" in refs["dram"]["source"]
    (idle,) = validate_power("a100", benches=["idle"]).rows
    assert idle.status == "ok" and abs(idle.error_pct) <= 15


def test_unknown_bench_and_a_config_without_a_power_model_are_refused():
    with pytest.raises(GpusimError, match="no power microbenchmark 'fma'"):
        validate_power("a100", benches=["fma"])
    with pytest.raises(GpusimError, match="config gtx980 has no power: section"):
        validate_power("gtx980")
