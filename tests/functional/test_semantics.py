"""Values computed by single instructions, lane by lane, against numpy and the documented rules."""

import numpy as np

from .kernels import elementwise, run

RNG = np.random.default_rng(7)


def test_integer_wraparound_and_mul_variants():
    a = np.array([0xFFFFFFFF, 7, 0x80000000, 12345678] * 8, dtype=np.uint32)
    b = np.array([1, 3, 0x80000000, 87654321] * 8, dtype=np.uint32)
    decl = ".reg .u32 %a, %b, %c, %d"
    np.testing.assert_array_equal(elementwise("    add.u32 %d, %a, %b", decl, a, b), a + b)
    np.testing.assert_array_equal(elementwise("    mul.lo.u32 %d, %a, %b", decl, a, b), a * b)
    hi = ((a.astype(np.uint64) * b) >> 32).astype(np.uint32)
    np.testing.assert_array_equal(elementwise("    mul.hi.u32 %d, %a, %b", decl, a, b), hi)
    wide = elementwise("    mul.wide.u32 %d, %a, %b", ".reg .u32 %a, %b, %c\n.reg .u64 %d", a, b,
                       out_dtype=np.uint64)
    np.testing.assert_array_equal(wide, a.astype(np.uint64) * b)


def test_signed_division_and_remainder_by_zero():
    a = np.array([7, -7, 7, -7, 5, -2**31, 3, 0] * 4, dtype=np.int32)
    b = np.array([2, 2, -2, -2, 0, -1, 0, 5] * 4, dtype=np.int32)
    decl = ".reg .s32 %a, %b, %c, %d"
    q = elementwise("    div.s32 %d, %a, %b", decl, a, b)
    r = elementwise("    rem.s32 %d, %a, %b", decl, a, b)
    np.testing.assert_array_equal(q[:8], [3, -3, -3, 3, -1, -2**31, -1, 0])
    np.testing.assert_array_equal(r[:8], [1, -1, 1, -1, 5, 0, 3, 0])
    ua = a.view(np.uint32)
    uq = elementwise("    div.u32 %d, %a, %b", ".reg .u32 %a, %b, %c, %d", ua, b.view(np.uint32))
    assert uq[4] == 0xFFFFFFFF and uq[0] == 3


def test_shifts_clamp_at_the_width():
    a = np.array([1, 0x80000000, 0xF0, 5] * 8, dtype=np.uint32)
    n = np.array([3, 31, 32, 40] * 8, dtype=np.uint32)
    np.testing.assert_array_equal(elementwise("    shl.b32 %d, %a, %b", ".reg .u32 %a, %b, %c, %d", a, n)[:4],
                                  [8, 0, 0, 0])
    s = np.array([-16, -16, -16, 16] * 8, dtype=np.int32)
    np.testing.assert_array_equal(
        elementwise("    shr.s32 %d, %a, %b", ".reg .s32 %a, %d\n.reg .u32 %b, %c", s, n)[:4], [-2, -1, -1, 0])


def test_shifts_by_an_immediate_as_python_integers_shift():
    """A count that is an immediate (one shift for every lane): shl drops the bits past the width, shr.u
    brings in zeros, shr.s copies of the sign; a count of the width or more leaves 0 (shr.s: -1 or 0)."""
    a = RNG.integers(0, 1 << 32, 32, dtype=np.uint64).astype(np.uint32)
    for k in (0, 1, 7, 31, 32, 33, 200):
        shl = elementwise(f"    shl.b32 %d, %a, {k}", ".reg .u32 %a, %b, %c, %d", a)
        shr = elementwise(f"    shr.u32 %d, %a, {k}", ".reg .u32 %a, %b, %c, %d", a)
        sar = elementwise(f"    shr.s32 %d, %a, {k}", ".reg .s32 %a, %b, %c, %d", a.view(np.int32))
        for i, x in enumerate(a.tolist()):
            signed = x - (1 << 32) if x >> 31 else x
            assert int(shl[i]) == (x << k) & 0xFFFFFFFF
            assert int(shr[i]) == x >> k
            assert int(sar[i]) == signed >> k  # (Python's >> of a negative integer floors: the sign copied)


def test_float_ops_stay_in_float32():
    a = RNG.standard_normal(64).astype(np.float32)
    b = RNG.standard_normal(64).astype(np.float32)
    c = RNG.standard_normal(64).astype(np.float32)
    decl = ".reg .f32 %a, %b, %c, %d"
    np.testing.assert_array_equal(elementwise("    add.f32 %d, %a, %b", decl, a, b), a + b)
    np.testing.assert_array_equal(elementwise("    mul.f32 %d, %a, %b", decl, a, b), a * b)
    fused = (a.astype(np.float64) * b + c).astype(np.float32)
    np.testing.assert_array_equal(elementwise("    fma.rn.f32 %d, %a, %b, %c", decl, a, b, c), fused)
    np.testing.assert_array_equal(elementwise("    max.f32 %d, %a, %b", decl, a, b), np.maximum(a, b))
    pos = np.abs(a) + np.float32(0.5)
    np.testing.assert_array_equal(elementwise("    sqrt.approx.f32 %d, %a", decl, pos), np.sqrt(pos))
    np.testing.assert_array_equal(elementwise("    ex2.approx.f32 %d, %a", decl, a), np.exp2(a))
    np.testing.assert_array_equal(elementwise("    lg2.approx.f32 %d, %a", decl, pos), np.log2(pos))
    np.testing.assert_array_equal(elementwise("    rcp.approx.f32 %d, %a", decl, pos), np.float32(1) / pos)


def test_f16_arithmetic():
    a = RNG.standard_normal(32).astype(np.float16)
    b = RNG.standard_normal(32).astype(np.float16)
    out = elementwise("    add.f16 %d, %a, %b", ".reg .f16 %a, %b, %c, %d", a, b)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, a + b)


def test_setp_comparisons_and_selp():
    a = np.array([1.0, np.nan, 3.0, -1.0] * 8, dtype=np.float32)
    b = np.array([2.0, 1.0, 3.0, np.nan] * 8, dtype=np.float32)
    decl = ".reg .f32 %a, %b, %c\n.reg .u32 %d"
    cases = {"lt": [1, 0, 0, 0], "ne": [1, 0, 0, 0], "neu": [1, 1, 0, 1], "ge": [0, 0, 1, 0],
             "equ": [0, 1, 1, 1], "nan": [0, 1, 0, 1], "num": [1, 0, 1, 0]}
    for cmp, expect in cases.items():
        out = elementwise(f"    setp.{cmp}.f32 %p, %a, %b\n    selp.u32 %d, 1, 0, %p", decl, a, b,
                          out_dtype=np.uint32)
        np.testing.assert_array_equal(out[:4], expect, err_msg=cmp)
    s = np.array([-1, 1] * 16, dtype=np.int32)
    t = np.array([1, -1] * 16, dtype=np.int32)
    lo = elementwise("    setp.lo.u32 %p, %a, %b\n    selp.u32 %d, 1, 0, %p", ".reg .s32 %a, %b, %c\n.reg .u32 %d",
                     s, t, out_dtype=np.uint32)
    lt = elementwise("    setp.lt.s32 %p, %a, %b\n    selp.u32 %d, 1, 0, %p", ".reg .s32 %a, %b, %c\n.reg .u32 %d",
                     s, t, out_dtype=np.uint32)
    np.testing.assert_array_equal(lo[:2], [0, 1])  # 0xFFFFFFFF is not below 1 unsigned
    np.testing.assert_array_equal(lt[:2], [1, 0])


def test_conversions():
    f = np.array([1.5, -1.5, 2.5, 3e10, -3e10, np.nan, 0.49, -0.0] * 4, dtype=np.float32)
    decl = ".reg .f32 %a, %b, %c\n.reg .s32 %d"
    rz = elementwise("    cvt.rzi.s32.f32 %d, %a", decl, f, out_dtype=np.int32)
    rn = elementwise("    cvt.rni.s32.f32 %d, %a", decl, f, out_dtype=np.int32)
    np.testing.assert_array_equal(rz[:8], [1, -1, 2, 2**31 - 1, -2**31, 0, 0, 0])
    np.testing.assert_array_equal(rn[:8], [2, -2, 2, 2**31 - 1, -2**31, 0, 0, 0])
    i = np.array([-1, 16777217] * 16, dtype=np.int32)
    tof = elementwise("    cvt.rn.f32.s32 %d, %a", ".reg .s32 %a, %b, %c\n.reg .f32 %d", i, out_dtype=np.float32)
    np.testing.assert_array_equal(tof[:2], [-1.0, 16777216.0])
    ext = elementwise("    cvt.s64.s32 %d, %a", ".reg .s32 %a, %b, %c\n.reg .s64 %d", i, out_dtype=np.int64)
    assert ext[0] == -1
    zext = elementwise("    cvt.u64.u32 %d, %a", ".reg .u32 %a, %b, %c\n.reg .u64 %d", i.view(np.uint32),
                       out_dtype=np.uint64)
    assert zext[0] == 0xFFFFFFFF


def test_subword_loads_extend():
    src = """
.kernel sub
.param .u64 src
.param .u64 out
.reg .u32 %t, %v
.reg .s32 %s
.reg .u64 %rd<4>
    mov.u32 %t, %tid.x
    ld.param.u64 %rd0, [src]
    cvt.u64.u32 %rd1, %t
    add.u64 %rd2, %rd0, %rd1
    ld.global.s8 %s, [%rd2]
    ld.param.u64 %rd0, [out]
    mul.wide.u32 %rd1, %t, 4
    add.u64 %rd3, %rd0, %rd1
    st.global.s32 [%rd3], %s
    exit
"""
    data = np.arange(-16, 16, dtype=np.int8)
    out, stats = run(src, 1, 32, {"src": data, "out": np.zeros(32, np.int32)})
    np.testing.assert_array_equal(out["out"], data.astype(np.int32))
    assert stats.global_bytes_read == 32 and stats.global_bytes_written == 128


ATOMIC = """
.kernel atom
.param .u64 bins
.param .u64 old
.reg .u32 %t, %b, %o
.reg .u64 %rd<4>
    mov.u32 %t, %tid.x
    and.b32 %b, %t, 3
    ld.param.u64 %rd0, [bins]
    mul.wide.u32 %rd1, %b, 4
    add.u64 %rd2, %rd0, %rd1
    atom.global.OP.u32 %o, [%rd2], %t
    ld.param.u64 %rd0, [old]
    mul.wide.u32 %rd1, %t, 4
    add.u64 %rd3, %rd0, %rd1
    st.global.u32 [%rd3], %o
    exit
"""


def test_atomic_add_serialises_lanes_in_order():
    bins = np.array([100, 200, 300, 400], np.uint32)
    out, stats = run(ATOMIC.replace("OP", "add"), 1, 64, {"bins": bins, "old": np.zeros(64, np.uint32)})
    t = np.arange(64)
    np.testing.assert_array_equal(out["bins"], bins + np.bincount(t % 4, weights=t).astype(np.uint32))
    # each lane sees the sum of the lanes before it at the same address
    for lane in (0, 5, 63):
        same = t[(t % 4 == lane % 4) & (t < lane)]
        assert out["old"][lane] == bins[lane % 4] + same.sum()
    assert stats.atomics == 64


def test_atomic_max_and_exch():
    bins = np.array([10, 0, 0, 70], np.uint32)
    out, _ = run(ATOMIC.replace("OP", "max"), 1, 32, {"bins": bins, "old": np.zeros(32, np.uint32)})
    np.testing.assert_array_equal(out["bins"], [28, 29, 30, 70])
    out, _ = run(ATOMIC.replace("OP", "exch"), 1, 32, {"bins": bins, "old": np.zeros(32, np.uint32)})
    np.testing.assert_array_equal(out["bins"], [28, 29, 30, 31])
    assert out["old"][4] == 0 and out["old"][0] == 10  # lane 4 sees lane 0's value at bin 0


WARP_OPS = """
.kernel wops
.param .u64 out
.reg .u32 %t, %v, %s, %bal
.reg .u64 %rd<3>
.reg .pred %p, %any, %all
    mov.u32 %t, %tid.x
    mul.lo.u32 %v, %t, 10
    shfl.MODE.b32 %s, %v, ARG
    setp.gt.u32 %p, %t, 27
    vote.ballot.b32 %bal, %p
    vote.any.pred %any, %p
    vote.all.pred %all, %p
    @%all add.u32 %s, %s, 1000000
    @!%any add.u32 %s, %s, 2000000
    add.u32 %s, %s, %bal
    ld.param.u64 %rd0, [out]
    mul.wide.u32 %rd1, %t, 4
    add.u64 %rd2, %rd0, %rd1
    st.global.u32 [%rd2], %s
    exit
"""


def test_shuffles_and_votes():
    t = np.arange(32)
    ballot = sum(1 << i for i in range(28, 32))
    for mode, arg, src in (("down", 3, np.where(t + 3 < 32, t + 3, t)), ("up", 2, np.where(t >= 2, t - 2, t)),
                           ("bfly", 5, t ^ 5), ("idx", 7, np.full(32, 7))):
        out, _ = run(WARP_OPS.replace("MODE", mode).replace("ARG", str(arg)), 1, 32,
                     {"out": np.zeros(32, np.uint32)})
        np.testing.assert_array_equal(out["out"], src * 10 + ballot, err_msg=mode)


def test_saturating_add_and_sub():
    a = np.array([2**31 - 1, -2**31, 5, -5] * 8, dtype=np.int32)
    b = np.array([1, 1, -3, 3] * 8, dtype=np.int32)
    decl = ".reg .s32 %a, %b, %c, %d"
    np.testing.assert_array_equal(elementwise("    add.sat.s32 %d, %a, %b", decl, a, b)[:4],
                                  [2**31 - 1, -2**31 + 1, 2, -2])
    np.testing.assert_array_equal(elementwise("    sub.sat.s32 %d, %a, %b", decl, a, b)[:4],
                                  [2**31 - 2, -2**31, 8, -8])
    f = np.array([0.5, 0.9, -0.2, 2.0] * 8, dtype=np.float32)
    out = elementwise("    sub.sat.f32 %d, %a, %b", ".reg .f32 %a, %b, %c, %d", f, np.full(32, 0.25, np.float32))
    np.testing.assert_array_equal(out[:4], np.float32([0.25, 0.65, 0.0, 1.0]))
