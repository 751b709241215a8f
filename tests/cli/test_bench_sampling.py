"""`gpusim bench --sampling`'s pieces: the h200 suite (the measured kernel sizes), the references file's
keys, a row of the table and the acceptance summary, checked against hand-made runs."""

import json
import math

import pytest

from gpusim.cli import bench_sampling as bs
from gpusim.data import data_dir


def test_the_h200_suite_is_every_measured_kernel_size_as_sasm_and_cu():
    doc = json.loads((data_dir("measurements") / "h200.json").read_text())
    suite = bs.h200_suite()
    sizes = [(k["kernel"], k["params"]) for k in doc["kernels"]]
    assert [(n, p) for n, p in suite if not n.endswith("_cu")] == sizes  # 10 kernels x 3 sizes
    ported = {n.removesuffix("_cu") for n, _ in suite if n.endswith("_cu")}
    assert ported == {"saxpy", "vecadd", "matmul_tiled", "reduce_sum", "reduce_sum_shfl", "transpose_shared",
                      "histogram", "softmax"}  # (matmul_naive and transpose_naive have no port)
    assert len(suite) == 30 + 3 * len(ported)


def test_a_reference_key_names_the_workload_its_size_the_config_and_the_model():
    a = json.loads(bs.reference_key("saxpy", {"n": 4096, "block": 256}, "a100"))
    assert a == {"workload": "saxpy", "params": {"block": 256, "n": 4096}, "config_hash": a["config_hash"],
                 "seed": 0, "model": bs.model_version()}
    assert bs.reference_key("saxpy", {"block": 256, "n": 4096}, "a100") == json.dumps(a, sort_keys=True)
    assert bs.reference_key("saxpy", {"n": 4096, "block": 256}, "h200") != json.dumps(a, sort_keys=True)


def _full(cycles, cpu, **kernel):
    return {"workload": "k", "params": {"n": 1}, "cycles": cycles, "wall_seconds": cpu * 2, "cpu_seconds": cpu,
            "warp_instructions": 1000, "kernel": kernel}


def _sampled(cycles, confidence, cpu, **whole):
    return {"decision": "sampled", "reason": "r", "cycles": cycles, "confidence": confidence, "wall_seconds": cpu * 3,
            "cpu_seconds": cpu, "warp_instructions_simulated": 10, "warp_instructions_estimated": 1000, "runs": [],
            "whole_kernel": whole}


def test_a_row_compares_the_sampled_run_with_the_full_one():
    r = bs.compare(_full(1000, 120.0, dram_bytes_read=500), _sampled(1020, 0.05, 10.0,
                                                                   dram_bytes_read={"value": 510, "low": 480,
                                                                                    "high": 530}))
    assert r["error_pct"] == pytest.approx(2.0) and r["confidence_pct"] == pytest.approx(5.0) and r["within_bound"]
    assert r["speedup"] == pytest.approx(12.0) and r["wall_speedup"] == pytest.approx(8.0)
    assert r["targets_met"] and r["stats"]["dram_bytes_read"]["within"]
    # over 3 %, or a bound that misses, or slower than 10x on a kernel of over a minute: not met
    assert not bs.compare(_full(1000, 120.0), _sampled(1040, 0.05, 10.0))["targets_met"]
    assert not bs.compare(_full(1000, 120.0), _sampled(1020, 0.01, 10.0))["targets_met"]
    assert not bs.compare(_full(1000, 120.0), _sampled(1020, 0.05, 13.0))["targets_met"]
    assert bs.compare(_full(1000, 50.0), _sampled(1020, 0.05, 13.0))["targets_met"]  # under a minute: any speed
    over = bs.compare({**_full(0, 600.0), "over_limit": True}, _sampled(1020, 0.05, 10.0))
    assert over["full_over_limit"] and "error_pct" not in over and over["sampled_cycles"] == 1020


def test_the_summary_counts_the_targets_and_takes_the_geometric_mean_error():
    rows = [bs.compare(_full(1000, 120.0), _sampled(c, 0.05, 10.0)) for c in (1010, 1040, 1000)]
    rows.append(bs.compare({**_full(0, 600.0), "over_limit": True}, _sampled(1020, 0.05, 10.0)))
    s = bs.summary(rows)
    assert (s["compared"], s["rows"], s["within_error"], s["within_bound"], s["over_limit"]) == (3, 4, 2, 3, 1)
    assert s["geomean_error_pct"] == pytest.approx(math.exp((math.log(1) + math.log(4) + math.log(1e-3)) / 3))
    assert "3 of 4 compared" in bs.summary_line(s)
    # the sampled rows alone: a full run's exact 0 % does not pull their mean down
    rows.append(bs.compare(_full(1000, 120.0), {**_sampled(1000, 0.0, 100.0), "decision": "full"}))
    s = bs.summary(rows)
    assert s["sampled"] == 3 and s["geomean_sampled_error_pct"] == pytest.approx(
        math.exp((math.log(1) + math.log(4) + math.log(1e-3)) / 3))
    assert s["geomean_error_pct"] == pytest.approx(math.exp((math.log(4) + 2 * math.log(1e-3)) / 4))
    assert "over the 3 that auto sampled" in bs.summary_line(s)


def test_stored_only_reports_a_row_without_its_full_run_sampled_alone(tmp_path):
    path = tmp_path / "refs.jsonl"
    stored = {**_full(1000, 120.0), "key": bs.reference_key("saxpy", {"n": 4096}, "a100")}
    bs.append_reference(path, stored)
    refs = bs.read_references(path)

    def never(*a):
        raise AssertionError("a full run was simulated")

    f = bs.full_reference("saxpy", {"n": 4096}, "a100", refs, path, 600.0, never, stored_only=True)
    assert f["cached"] and f["cycles"] == 1000
    missing = bs.full_reference("saxpy", {"n": 8192}, "a100", refs, path, 600.0, never, stored_only=True)
    assert missing == {"workload": "saxpy", "params": {"n": 8192}, "not_stored": True}
    rows = [bs.compare(f, _sampled(1010, 0.05, 10.0)), bs.compare(missing, _sampled(2020, 0.05, 10.0))]
    assert rows[1]["full_not_stored"] and "error_pct" not in rows[1] and rows[1]["sampled_cycles"] == 2020
    s = bs.summary(rows)
    assert (s["compared"], s["rows"], s["not_stored"]) == (1, 2, 1)
    assert "1 not stored" in bs.summary_line(s) and "not stored" in bs.table_line(rows[1])
    doc = {"suite": "h200", "config": "h200", "started": "now", "cpu_count": 2}
    md = bs.markdown(rows, s, doc).splitlines()
    assert md[5].startswith("| saxpy | n=8192 | not stored | 2,020 | - | 5.0 % | - | 10.0 | - | - |")
