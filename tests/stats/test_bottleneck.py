"""The bottleneck verdict: each rule on hand-built counters (with its boundary), the order the rules are
tried in, and each verdict on a real simulation where the workload leaves no doubt."""

import dataclasses

import pytest

from gpusim.stats import simulate
from gpusim.stats.bottleneck import (
    BANK_CONFLICTS,
    COMPUTE_BOUND,
    DIVERGENCE,
    LATENCY_BOUND,
    MEMORY_BOUND,
    THROUGHPUT_PCT,
    UNCOALESCED,
    VERDICTS,
    diagnose,
)
from gpusim.stats.metrics import kernel_metrics
from tests.stats.build import base_sms, exec_stats, quiet_memory, sm, timing


def verdict(t, stats=None):
    return diagnose(kernel_metrics(t, stats=stats))


def compute_sm(fp32_busy: int, **kw):
    """One SM, 1000 active cycles on 4 schedulers; fp32 busy `fp32_busy` of the 4000 scheduler-cycles."""
    fields = dict(issued=1000, active_cycles=1000, scheduler_active_cycles=4000, eligible_sum=3000,
                  warp_states={"selected": 1000, "math_pipe_throttle": 2000, "wait": 1000},
                  unit_busy={"fp32": fp32_busy, "int": 200}, blocks=4, warps=16, max_warps_resident=16)
    return sm(0, **(fields | kw))


def test_a_kernel_shorter_than_its_launch_keeps_its_own_verdict():
    """Nsight reports a kernel's own duration: the launch overhead belongs to the program around it."""
    v = verdict(timing(launch_overhead_cycles=1001))
    assert v.kind == MEMORY_BOUND  # what the counters say (DRAM busy 75%)
    assert v.evidence[-1].startswith("the kernel (1,000 cycles, 1.000 us) is shorter than its 1,001-cycle")
    assert v.numbers["launch_overhead_cycles"] == 1001
    equal = verdict(timing(launch_overhead_cycles=1000))  # equal is not longer
    assert "launch_overhead_cycles" not in equal.numbers and "shorter than" not in equal.evidence[-1]


def test_uncoalesced_when_half_the_sectors_are_excessive():
    # 100 L1 load sectors + 20 L2 write sectors = 120 fetched; the threads moved 1,920 B = 60 sectors' worth
    stats = exec_stats()
    stats.global_requests, stats.global_bytes_read, stats.global_bytes_written = 30, 1280, 640
    sms = base_sms()
    sms[0] = dataclasses.replace(sms[0], l1_hit_sectors=40, l1_miss_sectors=60)
    sms[1] = dataclasses.replace(sms[1], l1_hit_sectors=0, l1_miss_sectors=0)
    v = verdict(timing(sms), stats)
    assert v.kind == UNCOALESCED
    assert v.numbers["global_sectors"] == 120 and v.numbers["global_ideal_sectors"] == 60
    assert v.numbers["global_excessive_sectors_pct"] == pytest.approx(50.0)
    assert v.numbers["global_sectors_per_request"] == pytest.approx(4.0)
    assert v.summary.startswith("global accesses fetch 2.0x the sectors their bytes need (50% of them excessive)")
    # one sector fewer is below the threshold: the memory verdict
    sms[0] = dataclasses.replace(sms[0], l1_miss_sectors=59)
    assert verdict(timing(sms), stats).kind == MEMORY_BOUND


def test_memory_bound_on_dram_busy():
    v = verdict(timing())  # DRAM busy 1500 / (2 * 1000) = 75%, compute 18%
    assert v.kind == MEMORY_BOUND
    assert v.numbers["memory_throughput_pct"] == pytest.approx(75.0)
    assert v.numbers["dram_busy_pct"] == pytest.approx(75.0)
    assert any("DRAM 2.9 GB/s = 36.0% of 8 GB/s peak" in e for e in v.evidence)


def test_memory_bound_threshold_is_sixty_percent():
    at = timing(dram={"busy_cycles": 2 * 1000 * THROUGHPUT_PCT / 100})
    below = timing(dram={"busy_cycles": 2 * 1000 * (THROUGHPUT_PCT - 0.1) / 100})
    assert verdict(at).kind == MEMORY_BOUND
    assert verdict(below).kind == LATENCY_BOUND


def test_memory_bound_on_l2_alone():
    v = verdict(timing(**{**quiet_memory(), "l2": {"busy_cycles": 4 * 1000 * 0.9}}))
    assert v.kind == MEMORY_BOUND and v.summary.startswith("L2 is busy 90% of the time, at least 60%")


def test_compute_bound_on_a_math_pipe():
    v = verdict(timing([compute_sm(3000)], **quiet_memory()))  # fp32 busy 75% of the scheduler-cycles
    assert v.kind == COMPUTE_BOUND
    assert v.numbers["busiest_unit"] == "fp32" and v.numbers["busiest_unit_pct"] == pytest.approx(75.0)
    assert v.summary.startswith("the fp32 pipe runs at 75%")


def test_compute_bound_on_issue_slots():
    s = compute_sm(400, issued=3600)  # 90% of issue slots, no pipe above 10%
    v = verdict(timing([s], **quiet_memory()))
    assert v.kind == COMPUTE_BOUND and v.summary.startswith("instruction issue runs at 90%")


def test_the_higher_throughput_wins_when_both_are_saturated():
    # fp32 at 90%, DRAM at 75%: compute; fp32 at 70%, DRAM at 75%: memory
    assert verdict(timing([compute_sm(3600)])).kind == COMPUTE_BOUND
    assert verdict(timing([compute_sm(2800)])).kind == MEMORY_BOUND


def test_bank_conflicts_need_both_the_replays_and_the_stalls():
    def t(wavefronts, mio, short):
        s = compute_sm(400, warp_states={"selected": 1000, "mio_throttle": mio, "short_scoreboard": short,
                                         "wait": 4000 - 1000 - mio - short},
                       shared_requests=100, shared_wavefronts=wavefronts, shared_ideal_wavefronts=100)
        return timing([s], **quiet_memory())

    v = verdict(t(3200, 600, 400))  # 32x the ideal wavefronts; 25% of warp-cycles in mio + short
    assert v.kind == BANK_CONFLICTS
    assert v.numbers["shared_conflict_factor"] == pytest.approx(32.0)
    assert v.numbers["shared_bank_conflicts"] == 3100
    assert v.numbers["mio_throttle_pct"] == pytest.approx(15.0)
    assert verdict(t(200, 600, 400)).kind == BANK_CONFLICTS  # exactly 2x
    assert verdict(t(199, 600, 400)).kind == LATENCY_BOUND
    assert verdict(t(3200, 500, 400)).kind == LATENCY_BOUND  # 22.5% of warp-cycles: not the problem


def test_divergence_needs_divergent_branches():
    t = timing([compute_sm(400)], **quiet_memory())
    v = verdict(t, exec_stats(1000, simt=0.25, divergent=40))
    assert v.kind == DIVERGENCE
    assert v.numbers["simt_efficiency"] == pytest.approx(0.25) and v.numbers["divergent_branches"] == 40
    assert v.numbers["active_threads_per_warp"] == pytest.approx(8.0)
    # a single-thread block has 1 of 32 lanes active without any divergence
    assert verdict(t, exec_stats(1000, simt=1 / 32, divergent=0)).kind == LATENCY_BOUND
    assert verdict(t, exec_stats(1000, simt=0.6, divergent=40)).kind == LATENCY_BOUND


def test_divergence_comes_before_compute_bound():
    # divergent code keeps the pipes busy on masked-off lanes: the verdict names the cause
    t = timing([compute_sm(3600)], **quiet_memory())
    assert verdict(t, exec_stats(1000, simt=0.3, divergent=10)).kind == DIVERGENCE
    assert verdict(t, exec_stats(1000, simt=1.0, divergent=0)).kind == COMPUTE_BOUND


def test_latency_bound_names_the_top_stall_and_the_occupancy():
    v = verdict(timing(**quiet_memory()))
    assert v.kind == LATENCY_BOUND
    assert v.numbers["top_stall"] == "long_scoreboard" and v.numbers["top_stall_pct"] == pytest.approx(65.0)
    assert v.numbers["achieved_occupancy"] == pytest.approx(10000 / (1500 * 64))
    assert "too few warps" in v.summary
    assert v.to_dict()["verdict"] == LATENCY_BOUND and v.to_dict()["evidence"] == v.evidence


def test_every_verdict_is_reachable():
    assert set(VERDICTS) == {UNCOALESCED, MEMORY_BOUND, BANK_CONFLICTS, DIVERGENCE, COMPUTE_BOUND, LATENCY_BOUND}


# -- real simulations ---------------------------------------------------------------------------------

def test_stream_copy_is_memory_bound():
    r = simulate("stream_copy", "a100", n=1 << 21)
    assert r.verdict.kind == MEMORY_BOUND, r.verdict
    k = r.kernel
    assert k["dram_bytes_read"] == 8 << 20  # every source byte once, through a cold L2
    assert k["l2_hit_rate_pct"] == 0.0
    assert k["memory_throughput_pct"] >= THROUGHPUT_PCT > k["compute_throughput_pct"]


def test_pointer_chase_is_latency_bound():
    r = simulate("pointer_chase", "a100", steps=300)
    v = r.verdict
    assert v.kind == LATENCY_BOUND, v
    assert v.numbers["top_stall"] == "long_scoreboard"
    assert r.kernel["achieved_warps_per_sm"] == pytest.approx(1.0)  # one thread, one warp


def test_divergence_with_32_paths():
    r = simulate("divergence", "a100", paths=32)
    assert r.verdict.kind == DIVERGENCE, r.verdict
    assert r.kernel["simt_efficiency"] < 0.3


def test_shared_bank_conflict_stride_32():
    r = simulate("shared_bank_conflict", "a100", n=4096, stride=32, iters=32)
    assert r.verdict.kind == BANK_CONFLICTS, r.verdict
    assert r.kernel["shared_wavefronts_per_request"] > 16


def test_ffma_peak_on_one_sm_is_compute_bound():
    r = simulate("ffma_peak", "a100", overrides={"chip.sm_count": 1}, n=512, block=128, iters=32)
    assert r.verdict.kind == COMPUTE_BOUND, r.verdict
    assert r.verdict.numbers["busiest_unit"] == "fp32"


def test_small_vecadd_gets_its_own_verdict_and_the_launch_in_evidence():
    r = simulate("vecadd", "a100", n=4096)
    assert r.verdict.kind == LATENCY_BOUND and r.cycles < r.kernel["launch_overhead_cycles"]
    assert "launch: in a program of such kernels the launches set the pace" in r.verdict.evidence[-1]


def test_saxpy_at_2_to_the_18_is_dram_bound():
    """The issue's case: shorter than its launch, DRAM the busiest unit: the verdict names DRAM and its bandwidth."""
    r = simulate("saxpy", "a100", n=1 << 18)
    assert r.verdict.kind == MEMORY_BOUND
    k = r.kernel
    # the summary's figures are the kernel's metrics, rounded: DRAM busy, its bandwidth and share of peak
    assert r.verdict.summary.startswith(f"DRAM is busy {k['dram_busy_pct']:.0f}% of the time "
                                        f"({k['dram_bandwidth_gbps']:.0f} GB/s, {k['dram_bandwidth_pct']:.0f}%")
    assert 60 <= k["dram_busy_pct"] <= 70 and k["dram_bandwidth_gbps"] == pytest.approx(
        (k["dram_bytes_read"] + k["dram_bytes_written"]) / (r.cycles / 1410e6) / 1e9, rel=1e-6)
    assert r.kernel["global_excessive_sectors"] == 0 and r.kernel["global_sectors_per_request"] == 4.0


def test_transpose_naive_is_uncoalesced():
    r = simulate("transpose_naive", "a100", rows=256, cols=256)
    k = r.kernel
    assert r.verdict.kind == UNCOALESCED, r.verdict
    # reads coalesced (4 sectors a warp), writes strided (32): (4 + 32) / (4 + 4) = 4.5x the ideal
    assert k["global_sectors"] == 4.5 * k["global_ideal_sectors"]
    assert simulate("transpose_shared", "a100", rows=256, cols=256).kernel["global_excessive_sectors"] == 0
