"""Every metric of a hand-built KernelTiming (tests/stats/build.py), worked out by hand from its counters.

SM 0: 400 issued in 1000 active cycles (4000 scheduler-cycles), 8000 warp-cycles; SM 1: 100 issued in 500
(1000 scheduler-cycles), 2000 warp-cycles; SM 2 idle. 1000 cycles at 1 GHz; max 64 warps per SM.
"""

import pytest

from gpusim.stats.metrics import KERNEL_METRICS, SM_METRICS, kernel_metrics, sm_metrics, timeline_rows
from gpusim.timing.decode import WARP_STATES
from tests.stats.build import exec_stats, sm, timing

approx = pytest.approx


@pytest.fixture(scope="module")
def m():
    return kernel_metrics(timing(), stats=exec_stats(simt=0.75, divergent=3), flops=4000, bytes_moved=2000,
                          peak_fp32_gflops=100.0)


def test_time_and_instructions(m):
    assert m["cycles"] == 1000 and m["clock_mhz"] == 1000.0
    assert m["kernel_seconds"] == approx(1e-6)  # 1000 cycles / 1e9 Hz
    assert m["launch_overhead_cycles"] == 200
    assert m["total_seconds"] == approx(1.2e-6)
    assert (m["sms"], m["sms_active"], m["blocks"], m["warps"]) == (3, 2, 3, 12)
    assert m["warp_instructions"] == 500  # 400 + 100, the timing model's issues
    assert m["thread_instructions"] == 500 * 32 * 0.75  # from the functional stats


def test_ipc_and_scheduler_rates(m):
    assert m["ipc"] == approx(500 / 1500)  # summed issues over summed active cycles
    assert m["ipc_sm_mean"] == approx((400 / 1000 + 100 / 500) / 2)  # idle SM 2 left out
    assert m["ipc_elapsed"] == approx(500 / (1000 * 3))
    assert m["issued_per_scheduler"] == approx(500 / 5000)
    assert m["eligible_per_scheduler"] == approx(1350 / 5000)
    assert m["active_warps_per_scheduler"] == approx(10000 / 5000)
    assert m["issue_slot_utilisation_pct"] == approx(10.0)


def test_occupancy(m):
    assert m["theoretical_occupancy"] == 0.5 and m["theoretical_warps_per_sm"] == 32
    # per SM 8000 / (1000 * 64) = 0.125 and 2000 / (500 * 64) = 0.0625, weighted by active cycles
    assert m["achieved_occupancy"] == approx((0.125 * 1000 + 0.0625 * 500) / 1500)
    assert m["achieved_warps_per_sm"] == approx(10000 / 1500)


def test_simt(m):
    assert m["simt_efficiency"] == approx(0.75)
    assert m["active_threads_per_warp"] == approx(24.0)
    assert m["divergent_branches"] == 3


def test_units(m):
    u = m["unit_utilisation_pct"]
    assert u["fp32"] == approx(100 * 900 / 5000) and u["int"] == approx(100 * 500 / 5000)
    assert u["ldst"] == approx(100 * 200 / 5000) and u["sfu"] == 0.0 and u["tensor"] == 0.0
    assert m["compute_throughput_pct"] == approx(18.0)  # fp32, above the 10% of issue slots


def test_caches_and_dram(m):
    assert (m["l1_tag_lookups"], m["l1_hit_sectors"], m["l1_miss_sectors"]) == (60, 40, 80)
    assert m["l1_hit_rate_pct"] == approx(100 * 40 / 120)
    assert m["l1_mshr_full_cycles"] == 5
    assert (m["l2_read_sectors"], m["l2_write_sectors"]) == (100, 20)
    assert m["l2_hit_rate_pct"] == approx(30.0)
    assert m["l2_busy_pct"] == approx(100 * 800 / (4 * 1000))
    assert (m["dram_bytes_read"], m["dram_bytes_written"]) == (2240, 640)
    assert m["dram_bandwidth_gbps"] == approx(2880 / 1e-6 / 1e9)
    assert m["peak_dram_bandwidth_gbps"] == approx(8.0)  # 8 B/cycle at 1 GHz
    assert m["dram_bandwidth_pct"] == approx(100 * 2.88 / 8)
    assert m["dram_busy_pct"] == approx(100 * 1500 / (2 * 1000))
    assert m["memory_throughput_pct"] == approx(75.0)  # the largest of 36, 75 and 20


def test_shared_memory(m):
    assert (m["shared_requests"], m["shared_wavefronts"], m["shared_ideal_wavefronts"]) == (10, 40, 10)
    assert m["shared_bank_conflicts"] == 30
    assert m["shared_wavefronts_per_request"] == approx(4.0)
    assert m["shared_conflict_factor"] == approx(4.0)
    assert m["shared_pipe_utilisation_pct"] == approx(100 * 40 / 1500)


def test_warp_states_sum_to_all_warp_cycles(m):
    s = m["warp_states"]
    assert list(s) == list(WARP_STATES)
    assert s == {**dict.fromkeys(WARP_STATES, 0), "selected": 500, "long_scoreboard": 6500, "wait": 1600,
                 "math_pipe_throttle": 1000, "drain": 400}
    assert sum(s.values()) == m["warp_cycles"] == 10000
    assert m["warp_states_pct"]["long_scoreboard"] == approx(65.0)
    assert sum(m["warp_states_pct"].values()) == approx(100.0)
    assert m["warp_cycles_per_issued_instruction"] == approx(20.0)


def test_throughputs_from_declarations(m):
    assert m["flops"] == 4000 and m["achieved_gflops"] == approx(4.0)  # 4000 flop in 1 us
    assert m["achieved_gflops_pct"] == approx(4.0)  # of 100 GFLOP/s
    assert m["bytes_moved"] == 2000 and m["useful_bandwidth_gbps"] == approx(2.0)
    assert m["useful_bandwidth_pct"] == approx(25.0)  # of 8 GB/s


def test_missing_inputs_are_none_not_zero():
    m = kernel_metrics(timing(sms=[sm(0)], l2={"hit_sectors": 0, "miss_sectors": 0}))
    assert m["l1_hit_rate_pct"] is None and m["l2_hit_rate_pct"] is None
    assert m["shared_wavefronts_per_request"] is None and m["shared_conflict_factor"] is None
    assert m["simt_efficiency"] is None and m["thread_instructions"] is None
    assert m["achieved_gflops"] is None and m["useful_bandwidth_gbps"] is None
    assert m["ipc"] == 0.0 and m["achieved_occupancy"] == 0.0
    assert m["warp_cycles_per_issued_instruction"] is None


def test_issue_width_scales_issue_slots():
    assert kernel_metrics(timing(), issue_width=2)["issue_slot_utilisation_pct"] == approx(5.0)


def test_every_metric_has_a_unit_and_an_nsight_name(m):
    assert list(m) == list(KERNEL_METRICS)
    rows = sm_metrics(timing())
    flat = {k.split(".")[0] for k in rows[0]}
    assert flat == set(SM_METRICS)


def test_per_sm_rows():
    rows = sm_metrics(timing())
    assert [r["sm"] for r in rows] == [0, 1, 2]
    r0, r1, r2 = rows
    assert r0["ipc"] == approx(0.4) and r1["ipc"] == approx(0.2) and r2["ipc"] == 0.0
    assert r0["issued_per_scheduler"] == approx(0.1) and r0["eligible_per_scheduler"] == approx(0.3)
    assert r0["achieved_occupancy"] == approx(0.125) and r1["achieved_occupancy"] == approx(0.0625)
    assert r0["l1_hit_rate_pct"] == approx(30.0) and r2["l1_hit_rate_pct"] is None
    assert r0["shared_bank_conflicts"] == 30
    assert r0["unit_utilisation_pct.fp32"] == approx(20.0) and r1["unit_utilisation_pct.int"] == approx(10.0)
    assert r1["warp_states_pct.long_scoreboard"] == approx(75.0)
    for r in rows[:2]:
        assert sum(v for k, v in r.items() if k.startswith("warp_states_pct.")) == approx(100.0)


def test_timeline_rows():
    assert timeline_rows(timing()) == [
        {"block": 0, "sm": 0, "start": 0, "end": 600, "cycles": 600},
        {"block": 1, "sm": 0, "start": 100, "end": 1000, "cycles": 900},
        {"block": 2, "sm": 1, "start": 0, "end": 500, "cycles": 500},
    ]
