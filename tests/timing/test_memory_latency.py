"""Acceptance 2: pointer_chase measures the configured L1-hit, L2-hit and DRAM latencies (a100) as
the footprint crosses the L1 and L2 sizes.

The chain (gpusim/data/workloads/micro/pointer_chase/reference.py) is chain[i] = (i + stride/4) mod (footprint/4):
from index 0 the walk visits every stride-th element in address order and wraps, so one pass is
footprint/stride steps, each on a new 128-byte line at stride 128. Cold, every step of the first pass
goes to DRAM. A second pass hits in L1 if the footprint fits in it (a100: 128 KB, 4-way LRU), else
in L2 (40 MB): a cyclic walk over more lines than a set's ways always misses an LRU cache.

Loop overhead per step, by hand from the kernel (a100: int latency 4, int unit 16 lanes -> issue
interval 2, branch latency 4); the load issues at T and its value lands at T + L:
    T+L      add.u32 %sum, %sum, %cur        (waits for %cur)
    T+L+2    add.u32 %k, %k, 1               (the INT unit is busy 2 cycles with the previous add)
    T+L+6    setp.lt.u32 %p, %k, %steps      (waits for %k: +4)
    T+L+10   @%p bra CHASE                   (waits for %p: +4)
    T+L+14   mul.wide.u32 %off, %cur, 4      (branch latency: +4)
    T+L+18   add.u64 %addr, %base, %off      (+4)
    T+L+22   ld.global.u32 %cur, [%addr]     (+4)
so a step takes L + 22 cycles: L = per-step cycles - (int interval + 4 x int latency + branch latency).
"""

from __future__ import annotations

import math

import pytest

from tests.timing.helpers import config, cycles, sim

STRIDE = 128


def _overhead(cfg) -> int:
    u = cfg.units
    interval = math.ceil(cfg.sm.warp_size / u["int"].lanes_per_subpartition)
    return interval + 4 * u["int"].latency_cycles + u["branch"].latency_cycles


def _chase(cfg: str, footprint: int, steps: int, overrides: dict | None = None) -> int:
    return cycles("pointer_chase", cfg, overrides={"chip.sm_count": 1, **(overrides or {})}, footprint=footprint,
                  stride=STRIDE, steps=steps, program_order=True)  # the loop as written: _overhead counts it


def _second_pass_latency(cfg_name: str, footprint: int) -> float:
    steps = footprint // STRIDE
    per_step = (_chase(cfg_name, footprint, 2 * steps) - _chase(cfg_name, footprint, steps)) / steps
    return per_step - _overhead(config(cfg_name))


def _cold_latency(cfg_name: str, footprint: int, overrides: dict | None = None) -> float:
    # Both runs stay within the first pass (all cold misses): the extra half pass costs DRAM latency.
    steps = footprint // STRIDE
    per_step = (_chase(cfg_name, footprint, steps, overrides)
                - _chase(cfg_name, footprint, steps // 2, overrides)) / (steps // 2)
    return per_step - _overhead(config(cfg_name))


def test_overhead_derivation_a100():
    assert _overhead(config("a100")) == 22


def test_l1_hit_latency_a100():
    cfg = config("a100")
    footprint = 64 * 1024  # 512 lines, 2 per set of the 256-set 4-way L1: fits
    assert footprint <= cfg.l1.size_bytes
    lat = _second_pass_latency("a100", footprint)
    assert lat == pytest.approx(cfg.l1.hit_latency_cycles, rel=0.10), lat


def test_l2_hit_latency_a100():
    cfg = config("a100")
    footprint = 256 * 1024  # 2x the L1 (8 lines per 4-way set: LRU misses every time), << the L2
    assert cfg.l1.size_bytes < footprint < cfg.l2.size_bytes
    lat = _second_pass_latency("a100", footprint)
    assert lat == pytest.approx(cfg.l2.hit_latency_cycles, rel=0.10), lat


# A cold chase at stride 128 reads DRAM sector by sector, in address order: a 1 KB HBM2 row of one
# controller holds its 4 chunks of 256 bytes (every 10th chunk is controller 0's), 8 lines, so 1 read
# in 8 opens the row (dram.latency_cycles, a precharged bank) and 7 hit it (latency - tRCD, 14 ns =
# 19.74 cycles): 400 - 7/8 x 19.74 = 382.73. With one L2 partition and no refresh every read is one of
# those two.
ONE_PARTITION = {"l2.partitions": 1, "dram.t_refi_ns": 0}


def test_dram_latency_a100():
    cfg = config("a100")
    lat = _cold_latency("a100", 256 * 1024, ONE_PARTITION)
    assert lat == pytest.approx(cfg.dram.latency_cycles - 7 / 8 * 14 * 1.41, rel=0.01), lat


def test_far_partition_adds_its_crossing_to_dram_reads_a100():
    # with both partitions, the lines homed in the far one (about half, by the hash) cross both ways:
    # + 2 x 105 x (their fraction among the reads measured: the second half of the pass)
    cfg = config("a100")
    steps = 256 * 1024 // STRIDE
    no_refresh = {"dram.t_refi_ns": 0}

    def far(n):
        return sim("pointer_chase", "a100", overrides={"chip.sm_count": 1, **no_refresh}, footprint=256 * 1024,
                   stride=STRIDE, steps=n).timing.l2["far_sectors"]

    frac = (far(steps) - far(steps // 2)) / (steps // 2)
    assert 0.4 < frac < 0.6
    base = _cold_latency("a100", 256 * 1024, ONE_PARTITION)
    both = _cold_latency("a100", 256 * 1024, no_refresh)
    cross = cfg.interconnect.partition_latency_cycles
    assert both - base == pytest.approx(2 * cross * frac, abs=1.0), (both, base, frac)
    # refresh, by its average: every read waits tRFC^2 / (2 tREFI) = 225.6^2 / (2 x 5499) = 4.63 more
    assert _cold_latency("a100", 256 * 1024) - both == pytest.approx(225.6 ** 2 / (2 * 5499), abs=1.0)  # whole cycles


def test_latency_steps_between_levels_a100():
    # Differences between levels do not depend on the loop overhead at all.
    cfg = config("a100")
    l1 = _second_pass_latency("a100", 64 * 1024)
    l2 = _second_pass_latency("a100", 256 * 1024)
    dram = _cold_latency("a100", 256 * 1024, ONE_PARTITION)
    assert l1 < l2 < dram
    assert l2 - l1 == pytest.approx(cfg.l2.hit_latency_cycles - cfg.l1.hit_latency_cycles, rel=0.10)
    assert dram - l2 == pytest.approx(cfg.dram.latency_cycles - 7 / 8 * 14 * 1.41 - cfg.l2.hit_latency_cycles,
                                      rel=0.02)


def test_cold_pass_misses_and_warm_pass_hits_l1_a100():
    steps = 64 * 1024 // STRIDE
    cold = sim("pointer_chase", "a100", overrides={"chip.sm_count": 1}, footprint=64 * 1024, stride=STRIDE,
               steps=steps).timing
    warm = sim("pointer_chase", "a100", overrides={"chip.sm_count": 1}, footprint=64 * 1024, stride=STRIDE,
               steps=2 * steps).timing
    # one 4-byte load per step touches one 32-byte sector
    assert cold.sms[0].l1_hit_sectors == 0 and cold.l2["hit_sectors"] == 0
    assert cold.dram["bytes_read"] == steps * cold.l2["sector_bytes"]
    assert warm.sms[0].l1_hit_sectors == steps
    assert warm.dram["bytes_read"] == cold.dram["bytes_read"]


def test_gtx980_loads_bypass_l1():
    # caches_global_loads: false on the GTX 980: even a tiny footprint's second pass is served by L2
    # (int latency 6, 32 int lanes -> interval 1, branch 6: overhead 1 + 24 + 6 = 31).
    cfg = config("gtx980")
    assert not cfg.l1.caches_global_loads
    assert _overhead(cfg) == 31
    lat = _second_pass_latency("gtx980", 8 * 1024)
    assert lat == pytest.approx(cfg.l2.hit_latency_cycles, rel=0.10), lat
    assert _cold_latency("gtx980", 8 * 1024) == pytest.approx(cfg.dram.latency_cycles, rel=0.10)


def test_warm_pass_beyond_l1_hits_l2_a100():
    steps = 256 * 1024 // STRIDE
    warm = sim("pointer_chase", "a100", overrides={"chip.sm_count": 1}, footprint=256 * 1024, stride=STRIDE,
               steps=2 * steps).timing
    assert warm.sms[0].l1_hit_sectors == 0  # cyclic walk over 2x the L1: LRU keeps nothing useful
    assert warm.l2["hit_sectors"] == steps and warm.l2["miss_sectors"] == steps


# L1 and shared memory share the A100's 192 KB: a kernel without shared memory leaves only the 1 KB
# the driver reserves per block (one block of pointer_chase: the 8 KB carve-out), so L1 gets 184 KB,
# and a 160 KB footprint - more than the 128 KB of the YAML's reference carve-out - still hits in L1.
def test_l1_gets_what_the_carveout_leaves_a100():
    from gpusim.config.occupancy import occupancy
    from gpusim.timing.gpu import l1_size

    cfg = config("a100")
    assert l1_size(cfg, occupancy(cfg, 256, 32, 0)) == 192 * 1024 - 8 * 1024  # 8 blocks x 1 KB reserved
    assert l1_size(cfg, occupancy(cfg, 256, 32, 16384)) == 192 * 1024 - 164 * 1024  # 8 x 17 KB: 164 KB
    gtx = config("gtx980")  # separate arrays: the YAML's L1 size
    assert l1_size(gtx, occupancy(gtx, 256, 32, 16384)) == gtx.l1.size_bytes
    footprint = 160 * 1024
    assert cfg.l1.size_bytes < footprint < 184 * 1024
    lat = _second_pass_latency("a100", footprint)
    assert lat == pytest.approx(cfg.l1.hit_latency_cycles, rel=0.10), lat
