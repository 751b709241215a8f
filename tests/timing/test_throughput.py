"""Acceptance 3 and 6: peak throughputs (stream_copy against DRAM bandwidth, ffma_peak against FP32
peak, sfu_peak against the SFU lanes) and Little's law at low occupancy.

Peak DRAM bandwidth in bytes per cycle is cfg.dram.bandwidth_gbps / clock (GHz): a100 1555 / 1.41 =
1102.8 B/clk, gtx980 224 / 1.216 = 184.2 B/clk. The model's data buses move at most `dram.efficiency`
of it (a100 0.97, gtx980 0.88); refresh, row switches and read/write turnarounds take their share of
the rest (gpusim/timing/dram.py)."""

from __future__ import annotations

import math

import pytest

from gpusim.isa.opcodes import Unit
from tests.timing.helpers import config, sim


def _peak_dram_bytes_per_cycle(cfg) -> float:
    return cfg.dram.bandwidth_gbps / (cfg.chip.clock_mhz / 1000.0)


def _dram_fraction(t, cfg) -> float:
    return (t.dram["bytes_read"] + t.dram["bytes_written"]) / t.cycles / _peak_dram_bytes_per_cycle(cfg)


# stream_copy at full occupancy (2 blocks of 1024 threads = 64 warps per SM) over the whole chip.
# a100: 216 blocks x 1024 threads x 4 elements each = 3.5 MB read; the 40 MB write-back L2 keeps the
# 3.5 MB written (no flush at kernel end), so DRAM traffic is the reads. gtx980: 32 blocks x 1024
# threads x 16 elements = 2 MB read + 2 MB written, twice its 2 MB L2, so dirty lines are evicted and
# part of the writes reach DRAM too.
STREAM = {
    "a100": {"grid": 216, "block": 1024, "n": 216 * 1024 * 4},
    "gtx980": {"grid": 32, "block": 1024, "n": 32 * 1024 * 16},
}


@pytest.mark.parametrize("cfg_name", ["a100", "gtx980"])
def test_stream_copy_reaches_70_to_95_percent_of_dram_peak(cfg_name):
    cfg = config(cfg_name)
    t = sim("stream_copy", cfg_name, **STREAM[cfg_name]).timing
    frac = _dram_fraction(t, cfg)
    assert 0.70 <= frac <= 0.95, frac
    # the channels can never move more than their sustained share of the peak
    assert frac <= cfg.dram.efficiency + 1e-9
    assert t.dram["busy_cycles"] <= t.cycles * t.dram["controllers"] * cfg.dram.channels_per_controller + 1e-6
    # every source byte came from DRAM exactly once (cold misses, 128-byte coalesced lines)
    assert t.dram["bytes_read"] == 4 * STREAM[cfg_name]["n"]


def test_stream_copy_gtx980_writes_reach_dram_when_copy_exceeds_l2():
    t = sim("stream_copy", "gtx980", **STREAM["gtx980"]).timing
    assert 8 * STREAM["gtx980"]["n"] > config("gtx980").l2.size_bytes
    assert t.dram["bytes_written"] > 0


def test_stream_copy_through_dram_never_exceeds_peak():
    # With an L2 of 256 KB the 4 MB copy's writes are evicted to DRAM as it runs: the copy's own
    # bandwidth (8 bytes moved per element) must then stay under the DRAM peak.
    cfg = config("gtx980", {"l2.size_bytes": 262144})
    p = STREAM["gtx980"]
    t = sim("stream_copy", "gtx980", overrides={"l2.size_bytes": 262144}, **p).timing
    peak = _peak_dram_bytes_per_cycle(cfg)
    assert t.dram["bytes_written"] >= 0.8 * 4 * p["n"]
    assert 8 * p["n"] / t.cycles <= peak
    assert 0.70 <= _dram_fraction(t, cfg) <= 0.95


# Steady state, differential in n (the kernel's start and end cancel): a100's copy of 3.5 MiB reads
# through DRAM and keeps its stores in the 40 MB write-back L2, a read stream, which reaches ~90 % of
# peak on the A100; gtx980's, with its L2 cut to 256 KB, writes back nearly every stored line among the
# reads (row switches, turnarounds), a copy through DRAM, ~80 % of peak on the GTX 980.
@pytest.mark.parametrize("cfg_name,overrides,lo,hi", [("a100", {}, 0.87, 0.95),
                                                      ("gtx980", {"l2.size_bytes": 262144}, 0.76, 0.84)])
def test_stream_copy_saturates_at_the_expected_fraction_of_peak(cfg_name, overrides, lo, hi):
    cfg = config(cfg_name, overrides)
    p = STREAM[cfg_name]
    one = sim("stream_copy", cfg_name, overrides=overrides, **p).timing
    two = sim("stream_copy", cfg_name, overrides=overrides, **{**p, "n": 2 * p["n"]}).timing
    moved = sum(two.dram[k] - one.dram[k] for k in ("bytes_read", "bytes_written"))
    frac = moved / (two.cycles - one.cycles) / _peak_dram_bytes_per_cycle(cfg)
    assert lo <= frac <= hi, frac
    if cfg_name == "gtx980":
        assert two.dram["bytes_written"] >= 0.8 * two.dram["bytes_read"]


# ffma_peak on 2 SMs with 2048 threads each (64 warps per SM): FP32 throughput is a per-SM resource,
# so a smaller chip with the same per-SM load keeps the percentages (and the peak scales with it).
FFMA_SMS = 2
FFMA_N = FFMA_SMS * 2048


def _ffma(cfg_name: str, iters: int):
    return sim("ffma_peak", cfg_name, overrides={"chip.sm_count": FFMA_SMS}, n=FFMA_N, block=256, iters=iters)


def _fp32_fraction(r, iters: int) -> float:
    t = r.timing
    flops = 128 * iters * FFMA_N  # workload.yaml: flops = 128 * iters * n (64 FFMAs per iteration)
    gflops = flops / (t.cycles / (t.clock_mhz / 1000.0))  # flops per ns
    return gflops / r.cfg.derived()["peak_fp32_gflops"]


# The ffma_peak loop body is 8 rounds of 8 independent FFMAs (64) plus add, setp, bra: 67 issue slots.


def test_ffma_peak_a100_reaches_90_percent_of_fp32_peak():
    # a100: 16 FP32 lanes per sub-partition, an FFMA holds the unit 2 cycles; an iteration needs 128
    # FP32 cycles and only 67 issue slots, so the FP32 unit, not issue, is the bound.
    r = _ffma("a100", 16)
    t = r.timing
    busy = sum(s.unit_busy["fp32"] for s in t.sms)
    util = busy / (t.cycles * t.subpartitions * len(t.sms))
    assert 0.90 <= util <= 1.0, util
    frac = _fp32_fraction(r, 16)
    assert 0.90 <= frac <= 1.0, frac


def test_ffma_peak_a100_steady_state():
    # 8 more iterations of 64 FFMAs on 16 warps per sub-partition: 8 x 16 x 64 x 2 = 16384 FP32 cycles
    a, b = _ffma("a100", 8).timing.cycles, _ffma("a100", 16).timing.cycles
    assert (b - a) == pytest.approx(8 * 16 * 64 * 2, rel=0.03), b - a


def test_ffma_peak_gtx980_reaches_90_percent_of_fp32_peak():
    # gtx980: 32 FP32 lanes, an FFMA holds the unit 1 cycle and the scheduler issues one instruction a
    # cycle, so issue is the bound: 64 FFMAs in 67 slots = 95.5% of FP32 peak at best.
    bound = 64 / 67
    frac = _fp32_fraction(_ffma("gtx980", 32), 32)
    assert 0.90 <= frac <= bound, frac
    # steady state: 16 more iterations x 16 warps per sub-partition x 67 issue slots
    a, b = _ffma("gtx980", 16).timing.cycles, _ffma("gtx980", 32).timing.cycles
    assert (b - a) == pytest.approx(16 * 16 * 67, rel=0.05), b - a


# sfu_peak: 4 SFU instructions (+ neg, add, setp, bra) per iteration. A warp holds an SFU of L lanes
# ceil(32/L) cycles: a100 4 lanes -> 8 cycles, gtx980 8 lanes -> 4 cycles; an SM's 4 sub-partitions
# then complete at most 4 / ceil(32/L) SFU warp instructions per cycle (a100 0.5, gtx980 1.0),
# i.e. 4 x L SFU thread operations per cycle.
def _sfu(cfg_name: str, iters: int):
    sms = 2
    return sim("sfu_peak", cfg_name, overrides={"chip.sm_count": sms}, n=sms * 2048, block=256, iters=iters)


@pytest.mark.parametrize("cfg_name", ["a100", "gtx980"])
def test_sfu_peak_bounded_by_sfu_lanes(cfg_name):
    cfg = config(cfg_name)
    lanes = cfg.units["sfu"].lanes_per_subpartition
    bound = cfg.sm.subpartitions / math.ceil(cfg.sm.warp_size / lanes)  # SFU warp instructions / cycle / SM
    r = _sfu(cfg_name, 24)
    t = r.timing
    sfu_warp_instr = r.run.result.stats.by_unit[Unit.SFU]
    assert sfu_warp_instr == 4 * 24 * 2 * 64  # 4 per iteration x iters x 128 warps
    per_sm_per_cycle = sfu_warp_instr / len(t.sms) / t.cycles
    assert per_sm_per_cycle <= bound
    assert per_sm_per_cycle >= 0.75 * bound, (per_sm_per_cycle, bound)
    # the SFU port-busy counter agrees: ceil(32/L) cycles per SFU warp instruction
    assert sum(s.unit_busy["sfu"] for s in t.sms) == sfu_warp_instr * math.ceil(32 / lanes)
    # steady state: 16 more iterations x 64 warps x 4 SFU ops per SM, at the bound
    extra = _sfu(cfg_name, 24).timing.cycles - _sfu(cfg_name, 8).timing.cycles
    assert 16 * 64 * 4 / extra == pytest.approx(bound, rel=0.05)


# Little's law at low occupancy: in stream_copy's loop the store needs the load's value and the next
# load waits behind the store, so a warp has at most one load (one 128-byte line) in flight. With W
# warps and an unloaded DRAM latency L, bandwidth <= W x 128 / L bytes per cycle. A stream's reads are
# mostly row hits (a 1 KB HBM2 row holds 8 lines of one controller, a 2 KB GDDR5 row 16: one
# activation, then hits), `dram.latency_cycles` less tRCD, and a 128-byte read's burst is longer than
# the 32 bytes the latency includes: L is within 5 % of `dram.latency_cycles`, and no read is faster
# than latency - tRCD. One L2 partition and no refresh keep every read the same (a100's far partition
# would add 2 x 105 cycles to half the lines; tests/timing/test_l2_partitions.py checks that).
# Every source line is a cold miss, and the L2 absorbs the stores (write-back), so DRAM traffic is the
# reads.
SAME_LATENCY = {"chip.sm_count": 1, "l2.partitions": 1, "dram.t_refi_ns": 0}


def _low_occupancy_copy(cfg_name: str, block: int, iters: int):
    # the loop as written (the hand derivations below count its instructions), not as the ptxas model unrolls it
    return sim("stream_copy", cfg_name, overrides=SAME_LATENCY, n=block * iters, grid=1, block=block,
               program_order=True).timing


@pytest.mark.parametrize("cfg_name,block", [("a100", 32), ("a100", 128), ("gtx980", 32), ("gtx980", 128)])
def test_littles_law_bounds_low_occupancy_bandwidth(cfg_name, block):
    cfg = config(cfg_name)
    iters = 16
    t = _low_occupancy_copy(cfg_name, block, iters)
    warps = block // 32
    fastest = cfg.dram.latency_cycles - cfg.dram.t_rcd_ns * cfg.chip.clock_mhz / 1000  # a row hit
    bound = warps * cfg.l1.line_size_bytes / fastest
    achieved = (t.dram["bytes_read"] + t.dram["bytes_written"]) / t.cycles
    assert t.dram["bytes_read"] == 4 * block * iters  # every line comes from DRAM once
    assert achieved <= bound, (achieved, bound)
    # latency-bound, but not slower than it should be: see the per-iteration figure below
    assert achieved >= 0.8 * bound, (achieved, bound)


@pytest.mark.parametrize("cfg_name", ["a100", "gtx980"])
def test_low_occupancy_copy_iteration_is_one_dram_latency(cfg_name):
    # By hand, one warp: the load issues at T, its data lands at T + L (DRAM, cold), then
    #   T+L st; T+L+1 add.u32 %r2; +int setp; +int bra; +branch mul.wide; +int add.u64 %rd3;
    #   add.u64 %rd4 (a100: int unit busy 2 cycles, so at +2; it is off the critical path);
    #   +int ld (needs %rd3).
    # Per iteration: L + 1 + 4 x int latency + branch latency (a100 400 + 21, gtx980 350 + 31), L within
    # 5 % of dram.latency_cycles (above).
    cfg = config(cfg_name)
    u = cfg.units
    expect = cfg.dram.latency_cycles + 1 + 4 * u["int"].latency_cycles + u["branch"].latency_cycles
    per_iter = (_low_occupancy_copy(cfg_name, 32, 32).cycles - _low_occupancy_copy(cfg_name, 32, 16).cycles) / 16
    assert per_iter == pytest.approx(expect, rel=0.05), (per_iter, expect)
