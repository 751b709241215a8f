"""Acceptance 4: relative performance — shared-memory bank conflicts, shared-memory tiling (transpose,
matmul) and control divergence."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from tests.timing.helpers import cycles, sim, time_kernel

ONE_SM = {"chip.sm_count": 1}


# --- shared_bank_conflict ---------------------------------------------------------------------------
# One SM, 2 blocks of 1024 threads (64 warps); the loop body reads shared memory 8 times (unrolled).
# The SM's shared pipe serves one wavefront per cycle; a stride-32 access is 32 wavefronts (every lane
# in bank 0), stride 1 one wavefront. Per-access cycles
# = (cycles(48 iters) - cycles(16 iters)) / (32 iterations x 8 accesses x 64 warps).
def _bank(cfg, stride, iters, scheduler=None):
    return sim("shared_bank_conflict", cfg, scheduler=scheduler, overrides=ONE_SM, n=2048, block=1024,
               stride=stride, iters=iters)


def _per_access(cfg, stride, scheduler=None):
    a, b = _bank(cfg, stride, 16, scheduler).timing.cycles, _bank(cfg, stride, 48, scheduler).timing.cycles
    return (b - a) / (32 * 8 * 64)


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_bank_conflict_wavefronts(cfg):
    t1, t32 = _bank(cfg, 1, 48).timing.sms[0], _bank(cfg, 32, 48).timing.sms[0]
    # 64 warps x 48 iterations x 8 loads + the fill (1024 words by 2048 threads: 32 one-word stores
    # per block)
    accesses = 64 * 48 * 8 + 2 * 32
    assert t1.shared_requests == t32.shared_requests == accesses
    assert t1.shared_wavefronts == accesses
    assert t32.shared_wavefronts == 64 * 48 * 8 * 32 + 2 * 32  # the fill stays conflict-free
    assert t32.shared_ideal_wavefronts == accesses


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_bank_conflict_stride32_costs_32_cycles_per_access(cfg):
    # 32 wavefronts at one per cycle: the shared pipe is the bottleneck at stride 32.
    assert _per_access(cfg, 32) == pytest.approx(32.0, rel=0.05)


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_bank_conflict_stride32_is_32x_slower_than_stride1(cfg):
    # Stride 1 is shared-bound too: per iteration a warp issues 8 loads (8 wavefronts on the SM's one
    # pipe) and 11 other instructions (10 INT, each holding a100's 16-lane unit 2 cycles: 20 cycles on
    # its sub-partition, 5 per SM with 4 sub-partitions), so 8 > 5: one cycle per access.
    # On gtx980 the LD/ST units (8 lanes: one warp load per 4 cycles per sub-partition, 1 per cycle
    # per SM) are as tight a bound as the shared pipe, and the two queues interleave imperfectly.
    p1, p32 = _per_access(cfg, 1), _per_access(cfg, 32)
    assert 1.0 <= p1 <= {"a100": 1.05, "gtx980": 1.15}[cfg], p1
    assert p32 == pytest.approx(32.0, rel=0.05), p32
    assert 32 / 1.15 <= p32 / p1 <= 33, p32 / p1


def _smem_kernel(stride: int, iters: int) -> str:
    # 8 independent ld.shared per iteration amortise the loop: per sub-partition an iteration holds
    # the LD/ST unit (8 lanes -> 4 cycles per warp access) 32 cycles and issues 11 instructions, so
    # at stride 1 the SM does one access per cycle (4 sub-partitions / 4 cycles), matching the shared
    # pipe's one wavefront per cycle; at stride 32 it does one per 32 cycles.
    loads = "\n".join(f"    ld.shared.u32 %v{i}, [%a];" for i in range(8))
    return f"""
.kernel smem_unrolled
.param .u64 out
.reg .u32 %t, %a, %sh, %k, %v<8>
.reg .u64 %b
.reg .pred %p
.shared .u32 buf[1024]
    mov.u32 %t, %tid.x;
    mov.u32 %sh, buf;
    mul.lo.u32 %a, %t, {stride};
    and.b32 %a, %a, 1023;
    mad.lo.u32 %a, %a, 4, %sh;
    mov.u32 %k, 0;
LOOP:
{loads}
    add.u32 %k, %k, 1;
    setp.lt.u32 %p, %k, {iters};
    @%p bra LOOP;
    ld.param.u64 %b, [out];
    st.global.u32 [%b], %v7;
    exit;
"""


def _unrolled_cycles(stride: int, iters: int) -> int:
    return time_kernel(_smem_kernel(stride, iters), "a100", block=1024,
                       arrays={"out": np.zeros(1, dtype=np.uint32)}).cycles


def test_bank_conflict_32x_when_shared_bound():
    # One block of 1024 threads (32 warps); 8 loads per iteration; difference of 8 and 16 iterations.
    per = {}
    for stride in (1, 32):
        per[stride] = (_unrolled_cycles(stride, 16) - _unrolled_cycles(stride, 8)) / (8 * 8 * 32)
    assert per[1] == pytest.approx(1.0, rel=0.10), per
    assert per[32] == pytest.approx(32.0, rel=0.05), per
    assert per[32] / per[1] == pytest.approx(32, rel=0.10), per


# --- tiling -----------------------------------------------------------------------------------------
# 4 SMs: the naive transpose's strided writes touch 32 lines per warp store (vs 1 line per row of the
# tile), and the naive matmul re-reads A and B from L1/L2 for every product; tiling stages both in
# shared memory.
@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_transpose_shared_beats_naive(cfg):
    kw = {"overrides": {"chip.sm_count": 4}, "rows": 128, "cols": 256}
    naive, shared = cycles("transpose_naive", cfg, **kw), cycles("transpose_shared", cfg, **kw)
    assert shared < 0.75 * naive, (shared, naive)


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_matmul_tiled_beats_naive(cfg):
    # as written: the ptxas model hoists the naive loop's loads of four iterations ahead, which at n = 64
    # (L1-resident rows) brings it level with the tiled kernel on gtx980
    kw = {"overrides": {"chip.sm_count": 4}, "n": 64, "program_order": True}
    naive, tiled = cycles("matmul_naive", cfg, **kw), cycles("matmul_tiled", cfg, **kw)
    assert tiled < 0.75 * naive, (tiled, naive)


# --- divergence -------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_divergence_time_grows_with_paths(cfg):
    # A warp runs its `paths` distinct bodies (6 dependent INT ops + tests and branches each) one after
    # another, so time grows with paths, roughly linearly once the bodies dominate.
    paths = [1, 2, 4, 8, 16, 32]
    cyc = [cycles("divergence", cfg, overrides={"chip.sm_count": 4}, n=4096, paths=p) for p in paths]
    assert all(a < b for a, b in pairwise(cyc)), cyc
    assert cyc[-1] > 3 * cyc[0], cyc
    # the increment per extra path stays within a factor 2 between 8->16 and 16->32
    d1, d2 = (cyc[4] - cyc[3]) / 8, (cyc[5] - cyc[4]) / 16
    assert 0.5 < d2 / d1 < 2.0, (d1, d2)
    # and the warp instruction count (functional) grows the same way
    wi = [sim("divergence", cfg, overrides={"chip.sm_count": 4}, n=4096, paths=p).timing.warp_instructions
          for p in paths]
    assert all(a < b for a, b in pairwise(wi))
