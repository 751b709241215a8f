"""SimResult: JSON, tidy CSV rows and the terminal table, on hand-built counters and on real runs; and
what simulate() does with its configuration arguments."""

import csv
import io
import json
from pathlib import Path

import pytest

import gpusim
from gpusim.errors import ConfigError
from gpusim.stats import CSV_COLUMNS, SimResult, simulate
from gpusim.stats.report import LABEL
from tests.stats.build import timing


@pytest.fixture(scope="module")
def bare():
    return SimResult.build(None, None, timing())


@pytest.fixture(scope="module")
def saxpy():
    return simulate("saxpy", "a100", seed=3, n=5000)


def read_csv(result):
    return list(csv.DictReader(io.StringIO(result.to_csv())))


def test_bare_timing_to_dict_is_json(bare):
    d = json.loads(json.dumps(bare.to_dict()))
    assert d["mode"] == "timing" and d["workload"] is None and d["gpusim_version"] == gpusim.__version__
    assert d["kernel"]["cycles"] == 1000 and d["verdict"]["verdict"] == "memory-bandwidth-bound"
    assert len(d["sms"]) == 3 and d["timeline"][1] == {"block": 1, "sm": 0, "start": 100, "end": 1000, "cycles": 900}
    assert d["theoretical_occupancy"]["occupancy"] == 0.5


def test_bare_timing_csv_layout(bare):
    rows = read_csv(bare)
    assert tuple(rows[0]) == CSV_COLUMNS
    scopes = {}
    for r in rows:
        scopes.setdefault(r["scope"], []).append(r)
    assert set(scopes) == {"run", "kernel", "sm", "block"}  # no params without a workload
    kernel = {r["metric"]: r for r in scopes["kernel"]}
    assert kernel["cycles"]["value"] == "1000" and kernel["cycles"]["unit"] == "cycles"
    assert float(kernel["dram_busy_pct"]["value"]) == pytest.approx(75.0) and kernel["dram_busy_pct"]["unit"] == "%"
    assert kernel["warp_states.long_scoreboard"]["value"] == "6500"
    assert kernel["warp_states.long_scoreboard"]["unit"] == "warp-cycles"
    assert kernel["unit_utilisation_pct.fp32"]["unit"] == "%"
    assert kernel["simt_efficiency"]["value"] == ""  # no functional stats: empty, not 0
    assert all(r["sm"] == "" and r["block"] == "" for r in scopes["kernel"])
    sm1 = {r["metric"]: r["value"] for r in scopes["sm"] if r["sm"] == "1"}
    assert float(sm1["ipc"]) == pytest.approx(0.2) and sm1["blocks"] == "1"
    blocks = [(r["block"], r["sm"], r["metric"], r["value"]) for r in scopes["block"]]
    assert blocks[:3] == [("0", "0", "start", "0"), ("0", "0", "end", "600"), ("0", "0", "cycles", "600")]
    assert len(blocks) == 3 * 3


def test_bare_timing_summary_table(bare):
    text = bare.summary_table()
    assert "cycles               1,000 = 1.000 us at 1000 MHz" in text
    assert "long_scoreboard       65.0%           6,500" in text
    assert "bottleneck           memory-bandwidth-bound: DRAM is busy 75% of the time" in text
    assert "verified" not in text  # no workload run behind it


def test_real_run_provenance_and_consistency(saxpy):
    r = saxpy
    cfg = gpusim.load_config("a100")
    assert r.provenance == {"gpusim_version": gpusim.__version__, "config": "a100", "config_hash": cfg.hash(),
                            "config_file": str(Path(cfg.source).resolve()), "config_overrides": {}, "workload": "saxpy",
                            "params": {"n": 5000, "block": 256},
                            "launch": {"grid": [20, 1, 1], "block": [256, 1, 1]}, "seed": 3, "scheduler": "gto"}
    k, st = r.kernel, r.run.result.stats
    assert r.verified is True
    assert k["warp_instructions"] == st.warp_instructions  # the timing model issues every instruction once
    assert k["thread_instructions"] == st.thread_instructions
    assert k["blocks"] == len(r.timeline) == 20 and k["warps"] == st.warps
    assert sum(k["warp_states"].values()) == k["warp_cycles"]
    assert sum(k["warp_states_pct"].values()) == pytest.approx(100.0)
    assert max(b["end"] for b in r.timeline) == r.cycles
    assert sum(s["blocks"] for s in r.sms) == 20
    assert k["flops"] == 2 * 5000 and k["achieved_gflops"] == pytest.approx(1e4 / r.kernel_seconds / 1e9)
    assert r.total_seconds == pytest.approx((r.cycles + k["launch_overhead_cycles"]) / 1.41e9)
    assert repr(r) == (f"SimResult(workload='saxpy', config='a100', params={{'n': 5000, 'block': 256}}, "
                       f"cycles={r.cycles}, verified=True, verdict='{r.verdict.kind}')")


def test_real_run_to_dict_keeps_the_functional_record(saxpy):
    d = json.loads(json.dumps(saxpy.to_dict()))
    assert d["verified"] is True and d["mismatches"] == {} and d["params"]["n"] == 5000
    assert d["stats"]["global_bytes_read"] == 8 * 5000 and d["stats"]["warps"] == 160
    assert d["kernel"]["warp_instructions"] == d["stats"]["warp_instructions"]
    assert d["bytes_moved"] == 12 * 5000 and d["seed"] == 3
    assert set(d["verdict"]) == {"verdict", "summary", "evidence", "numbers"}


def test_real_run_csv(saxpy):
    rows = read_csv(saxpy)
    assert {r["workload"] for r in rows} == {"saxpy"} and {r["config"] for r in rows} == {"a100"}
    params = {r["metric"]: r["value"] for r in rows if r["scope"] == "param"}
    assert params == {"n": "5000", "block": "256"}
    run = {r["metric"]: r["value"] for r in rows if r["scope"] == "run"}
    assert run["verified"] == "1" and run["seed"] == "3"
    sm_rows = [r for r in rows if r["scope"] == "sm"]
    assert len(sm_rows) == 108 * (len(saxpy.sms[0]) - 1)
    for r in rows:
        if r["value"] != "":
            float(r["value"])  # every value is numeric


def test_real_run_summary_table(saxpy):
    text = saxpy.summary_table()
    lines = text.splitlines()
    assert lines[0] == f"{'workload':<{LABEL}}  saxpy"
    assert "verified             yes" in text and "SIMT efficiency" in text
    assert f"bottleneck           {saxpy.verdict.kind}: " in text
    for e in saxpy.verdict.evidence:
        assert f"- {e}" in text
    for state, cycles in saxpy.kernel["warp_states"].items():
        assert (f"\n{state:<{LABEL}}  " in text) == (cycles > 0)
    assert all(line[LABEL:LABEL + 2] == "  " for line in lines if line and not line.startswith("warp states"))


def test_scheduler_and_overrides():
    r = simulate("vecadd", "a100", scheduler="lrr", overrides={"chip.sm_count": 4}, n=2048)
    assert r.cfg.scheduler.policy == "lrr" and r.provenance["scheduler"] == "lrr"
    assert r.kernel["sms"] == 4 and len(r.sms) == 4
    cfg = gpusim.load_config("a100", overrides={"chip.sm_count": 4})
    r2 = simulate("vecadd", cfg, scheduler="two_level", n=2048)  # a Config keeps its overrides
    assert r2.kernel["sms"] == 4 and r2.cfg.scheduler.policy == "two_level"
    with pytest.raises(ConfigError, match="already differs"):
        simulate("vecadd", cfg, overrides={"dram.latency_cycles": 100}, n=2048)
    with pytest.raises(ConfigError, match="not one of lrr, gto, two_level"):
        simulate("vecadd", "a100", scheduler="fifo", n=64)
