"""Guarded instructions run by every lane of a batch: a guard that keeps most lanes (computed on every lane,
the kept results written by the guard's mask), one that keeps a few (by their indices), and a predicate
written again between two instructions it guards. Values and counts against numpy."""

import numpy as np

from .kernels import run, streams

GUARDS = """
.kernel guards
.param .u64 out
.shared .u32 buf[256]
.reg .u32 %t, %a, %b, %c, %s, %w
.reg .u64 %rd<3>
.reg .pred %p
    mov.u32 %t, %tid.x
    mov.u32 %a, 7
    mov.u32 %b, 0
    mov.u32 %c, 0
    setp.lt.u32 %p, %t, 200          // 200 of 256 lanes
    @%p add.u32 %a, %a, %t
    @%p shl.b32 %s, %t, 2
    @%p st.shared.u32 [%s+buf], %a
    setp.lt.u32 %p, %t, 3            // the same predicate, written again: 3 of 256 lanes
    @%p add.u32 %b, %t, 1000
    bar.sync 0
    setp.ge.u32 %p, %t, 16           // 240 of 256 lanes
    shl.b32 %w, %t, 2
    @%p ld.shared.u32 %c, [%w+buf]
    @!%p add.u32 %c, %c, 5           // the other 16
    ld.param.u64 %rd0, [out]
    mul.lo.u32 %w, %ntid.x, %ctaid.x
    add.u32 %w, %w, %t
    mul.wide.u32 %rd1, %w, 12
    add.u64 %rd2, %rd0, %rd1
    st.global.u32 [%rd2], %a
    st.global.u32 [%rd2+4], %b
    st.global.u32 [%rd2+8], %c
    exit
"""


def _expected(t: np.ndarray) -> np.ndarray:
    a = np.where(t < 200, 7 + t, 7)
    buf = np.where(t < 200, a, 0)
    b = np.where(t < 3, t + 1000, 0)
    c = np.where(t >= 16, buf, 5)
    return np.stack([a, b, c], axis=1)


def test_guarded_values_dense_sparse_and_rewritten_predicate():
    blocks = 4
    out, stats = run(GUARDS, blocks, 256, {"out": np.zeros((blocks * 256, 3), np.uint32)})
    np.testing.assert_array_equal(out["out"], np.tile(_expected(np.arange(256)), (blocks, 1)))
    # lanes whose guard is false: 56 for each of the three t < 200, 253 for t < 3, 16 and 240 for the last two
    assert stats.predicated_off == blocks * (3 * 56 + 253 + 16 + 240)


def test_guarded_accesses_recorded_for_the_kept_lanes_only():
    blocks = 2
    blks = streams(GUARDS, blocks, 256, {"out": np.zeros((blocks * 256, 3), np.uint32)})
    for blk in blks:
        for w, warp in enumerate(blk.warps):
            t = np.arange(32 * w, 32 * w + 32)
            by_pc = {int(warp.pcs[i]): row for i, row in warp.addresses.items()}
            np.testing.assert_array_equal(by_pc[7], np.where(t < 200, 4 * t, -1))  # st.shared, t < 200
            np.testing.assert_array_equal(by_pc[13], np.where(t >= 16, 4 * t, -1))  # ld.shared, t >= 16
