"""SASS instruction semantics, before/expected: each opcode family run through the executor (a hand-written
listing loads lane i's inputs, applies the instruction, stores the result) and checked lane by lane against
an independent model in Python integers, numpy or exact fractions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from gpusim.functional import sass_semantics as sem
from tests.functional.sass_helpers import run_lanes

RNG = np.random.default_rng(34)
N = 64
M32 = (1 << 32) - 1


def rand_u32(n=N):
    edge = np.array([0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 0x12345678], np.uint32)
    return np.concatenate([edge, RNG.integers(0, 1 << 32, n - edge.size, dtype=np.uint64).astype(np.uint32)])


def ints(x):
    return [int(v) for v in np.asarray(x, np.uint32)]


def s32(v):
    return v - (1 << 32) if v >> 31 else v


# ---- LOP3: every truth table ------------------------------------------------------------------------------

def lop3_model(a, b, c, lut):
    out = 0
    for bit in range(32):
        i = ((a >> bit & 1) << 2) | ((b >> bit & 1) << 1) | (c >> bit & 1)
        out |= (lut >> i & 1) << bit
    return out


def test_lop3_all_256_truth_tables_through_the_executor():
    a, b, c = rand_u32(), rand_u32()[::-1].copy(), RNG.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
    for lut in range(256):
        got = sem.lop3(a, b, c, lut)
        exp = [lop3_model(x, y, z, lut) for x, y, z in zip(ints(a), ints(b), ints(c), strict=True)]
        assert ints(got) == exp, hex(lut)
    for lut in (0x96, 0xC0, 0xF8, 0x3C):  # and as instructions
        got = run_lanes([f"LOP3.LUT R7, R4, R5, R6, 0x{lut:x}, !PT"], a, b, c)
        assert ints(got) == [lop3_model(x, y, z, lut) for x, y, z in zip(ints(a), ints(b), ints(c), strict=True)]


def test_lop3_predicate_output_is_result_nonzero():
    a = np.array([0, 1, 0x100, 0], np.uint32)
    got = run_lanes(["LOP3.LUT P0, RZ, R4, 0xff, RZ, 0xc0, !PT", "SEL R7, RZ, 0x1, !P0"], a)
    assert ints(got) == [0, 1, 0, 0]


# ---- IADD3 carries ---------------------------------------------------------------------------------------------

def test_iadd3_sum_and_both_carry_predicates():
    a, b, c = rand_u32(), rand_u32()[::-1].copy(), rand_u32()
    got = run_lanes(["IADD3 R7, P0, P1, R4, R5, R6", "SEL R8, RZ, 0x1, !P0", "SEL R9, RZ, 0x1, !P1"], a, b, c,
                    out_regs=3)
    for (x, y, z), (r, p0, p1) in zip(zip(ints(a), ints(b), ints(c), strict=True), got.tolist(), strict=True):
        s = x + y + z
        assert (r, p0, p1) == (s & M32, int(s >= 1 << 32), int(s >= 1 << 33))


def test_iadd3_x_chains_a_64_bit_subtraction():
    """IADD3 lo = a - b with its carry (no borrow), then IADD3.X hi = ah + ~bh + carry: a 64-bit a - b."""
    lo_a, lo_b, hi = rand_u32(), rand_u32()[::-1].copy(), rand_u32()
    got = run_lanes(["IADD3 R7, P0, R4, -R5, RZ", "IADD3.X R8, R6, ~R4, RZ, P0, !PT"], lo_a, lo_b, hi, out_regs=2)
    for x, y, h, (r, rh) in zip(ints(lo_a), ints(lo_b), ints(hi), got.tolist(), strict=True):
        full = ((h << 32) | x) - ((x << 32) | y)
        assert (rh << 32 | r) == full % (1 << 64)


# ---- IMAD family -------------------------------------------------------------------------------------------

def test_imad_wide_signed_and_unsigned_and_hi():
    a, b, c = rand_u32(), rand_u32()[::-1].copy(), rand_u32()
    got = run_lanes(["MOV R10, R6", "MOV R11, R4", "IMAD.WIDE.U32 R8, R4, R5, R10", "MOV R7, R8"], a, b, c,
                    out_regs=3)
    sgot = run_lanes(["MOV R10, R6", "MOV R11, R4", "IMAD.WIDE R8, R4, R5, R10", "MOV R7, R8"], a, b, c, out_regs=3)
    hgot = run_lanes(["MOV R10, R6", "MOV R11, R4", "IMAD.HI.U32 R7, R4, R5, R10"], a, b, c)
    for x, y, z, (_, lo, hi), (_, slo, shi), h in zip(ints(a), ints(b), ints(c), got.tolist(), sgot.tolist(),
                                                        ints(hgot), strict=True):
        c64 = (x << 32) | z
        assert (hi << 32 | lo) == (x * y + c64) % (1 << 64)
        assert (shi << 32 | slo) == (s32(x) * s32(y) + c64) % (1 << 64)
        assert h == ((x * y + c64) >> 32) & M32


def test_imad_low_word_with_negated_addend_and_carry_in():
    a, b, c = rand_u32(), rand_u32()[::-1].copy(), rand_u32()
    assert ints(run_lanes(["IMAD R7, R4, R5, -R6"], a, b, c)) == [(x * y - z) & M32 for x, y, z in
                                                                  zip(ints(a), ints(b), ints(c), strict=True)]
    got = run_lanes(["ISETP.GE.U32.AND P0, PT, R4, R5, PT", "IMAD.X R7, R4, 0x3, R6, P0"], a, b, c)
    assert ints(got) == [(3 * x + z + (x >= y)) & M32 for x, y, z in zip(ints(a), ints(b), ints(c), strict=True)]


# ---- shifts, LEA, PRMT --------------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["L.U32", "L.U64.HI", "R.U32.HI", "R.S32.HI", "R.U64", "R.S64"])
def test_shf_funnel_shifts(form):
    lo, hi = rand_u32(), rand_u32()[::-1].copy()
    sh = np.concatenate([np.arange(0, 40), RNG.integers(0, 70, N - 40)]).astype(np.uint32)
    got = run_lanes([f"SHF.{form} R7, R4, R6, R5"], lo, hi, sh)
    left, hi_word, signed = form.startswith("L"), form.endswith("HI"), ".S" in form
    wide = "64" in form
    for x, y, s, r in zip(ints(lo), ints(hi), ints(sh), ints(got), strict=True):
        s = min(s, 64 if wide else 32)
        v = (y << 32) | x
        if signed:
            v -= (1 << 64) if y >> 31 else 0
        w = (v << s) if left else (v >> s)
        w %= 1 << 64
        assert r == ((w >> 32) if hi_word else w) & M32, (form, x, y, s)


def test_lea_and_lea_hi_x_form_a_64_bit_scaled_address():
    idx, base_lo, base_hi = rand_u32(), rand_u32(), rand_u32()[::-1].copy()
    got = run_lanes(["LEA R7, P0, R4, R5, 0x2", "LEA.HI.X R8, R4, R6, RZ, 0x2, P0"], idx, base_lo, base_hi,
                    out_regs=2)
    for i, bl, bh, (lo, hi) in zip(ints(idx), ints(base_lo), ints(base_hi), got.tolist(), strict=True):
        assert (hi << 32 | lo) == (((bh << 32) | bl) + (i << 2)) % (1 << 64)


def test_prmt_selects_and_sign_replicates_bytes():
    a, b = rand_u32(), rand_u32()[::-1].copy()
    sel = RNG.integers(0, 1 << 16, N).astype(np.uint32)
    got = run_lanes(["PRMT R7, R4, R6, R5"], a, b, sel)
    for x, y, s, r in zip(ints(a), ints(b), ints(sel), ints(got), strict=True):
        src = (y << 32) | x
        exp = 0
        for i in range(4):
            nib = s >> (4 * i) & 0xF
            byte = src >> (8 * (nib & 7)) & 0xFF
            if nib & 8:
                byte = 0xFF if byte & 0x80 else 0
            exp |= byte << (8 * i)
        assert r == exp


# ---- compares and selects ---------------------------------------------------------------------------------------

def test_isetp_predicate_pair_and_combinator():
    a, b = rand_u32(), rand_u32()[::-1].copy()
    c = (RNG.integers(0, 2, N)).astype(np.uint32)
    got = run_lanes(["ISETP.NE.AND P2, PT, R6, RZ, PT", "ISETP.LT.OR P0, P1, R4, R5, P2",
                     "SEL R7, RZ, 0x1, !P0", "SEL R8, RZ, 0x1, !P1"], a, b, c, out_regs=2)
    for x, y, z, (p, q) in zip(ints(a), ints(b), ints(c), got.tolist(), strict=True):
        lt = s32(x) < s32(y)
        assert (p, q) == (int(lt or bool(z)), int((not lt) or bool(z)))


def test_fsetp_unordered_compare_and_fmnmx_nan_rules():
    a = np.array([1.0, np.nan, -0.0, 2.0, np.inf, -1.0], np.float32)
    b = np.array([2.0, 1.0, 0.0, np.nan, 3.0, -1.0], np.float32)
    got = run_lanes(["FSETP.GEU.AND P0, PT, R4, R5, PT", "SEL R7, RZ, 0x1, !P0"], a, b)
    assert ints(got) == [int(not (x < y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    mx = run_lanes(["FMNMX R7, R4, R5, !PT"], a, b).view(np.float32)
    mn = run_lanes(["FMNMX R7, R4, R5, PT"], a, b).view(np.float32)
    assert mx.tolist()[:2] == [2.0, 1.0] and mn.tolist()[:2] == [1.0, 1.0]
    assert mx[3] == 2.0 and mn[3] == 2.0 and np.signbit(mn[2]) and not np.signbit(mx[2])


# ---- floats: rounding modes, exactly ----------------------------------------------------------------------------

def _round(q: Fraction, mode: str) -> float:
    """The float32 of the exact rational q in `mode` (the model: exact arithmetic, then one rounding)."""
    if q == 0:
        return 0.0
    lo = float(np.float32(float(q)))
    cands = sorted({lo, float(np.nextafter(np.float32(lo), np.float32(-np.inf))),
                    float(np.nextafter(np.float32(lo), np.float32(np.inf)))})
    below = max(c for c in cands if Fraction(c) <= q)
    above = min(c for c in cands if Fraction(c) >= q)
    if mode == "RM":
        return below
    if mode == "RP":
        return above
    if mode == "RZ":
        return below if q > 0 else above
    d1, d2 = q - Fraction(below), Fraction(above) - q
    if d1 != d2:
        return below if d1 < d2 else above
    return below if np.float32(below).view(np.uint32) % 2 == 0 else above


@pytest.mark.parametrize("mode", ["RN", "RZ", "RM", "RP"])
def test_ffma_rounds_once_in_each_mode(mode):
    a = (RNG.standard_normal(N) * 3).astype(np.float32)
    b = (RNG.standard_normal(N) * 3).astype(np.float32)
    c = (RNG.standard_normal(N) * 3).astype(np.float32)
    suffix = "" if mode == "RN" else f".{mode}"
    got = run_lanes([f"FFMA{suffix} R7, R4, R5, R6"], a, b, c).view(np.float32)
    for x, y, z, r in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist(), strict=True):
        assert r == _round(Fraction(x) * Fraction(y) + Fraction(z), mode), (x, y, z)


def test_fadd_ftz_flushes_subnormals():
    a = np.array([1e-39, -1e-39, 1.0], np.float32)
    b = np.zeros(3, np.float32)
    got = run_lanes(["FADD.FTZ R7, R4, R5"], a, b).view(np.float32)
    assert got.tolist() == [0.0, 0.0, 1.0] and not np.signbit(got[1])  # (-0 + +0 is +0)
    assert run_lanes(["FADD R7, R4, R5"], a, b).view(np.float32)[0] == np.float32(1e-39)


@pytest.mark.parametrize("mode", ["RN", "RZ", "RM", "RP"])
def test_i2f_rounding_modes(mode):
    v = rand_u32()
    got = run_lanes([f"I2F.U32{'' if mode == 'RN' else '.' + mode} R7, R4"], v).view(np.float32)
    assert got.tolist() == [_round(Fraction(x), mode) for x in ints(v)]
    sgot = run_lanes([f"I2F{'' if mode == 'RN' else '.' + mode} R7, R4"], v).view(np.float32)
    assert sgot.tolist() == [_round(Fraction(s32(x)), mode) for x in ints(v)]


@pytest.mark.parametrize("rnd", ["TRUNC", "FLOOR", "CEIL", "RN"])
def test_f2i_rounding_saturation_and_nan(rnd):
    x = np.array([2.5, -2.5, 3.5, -0.7, 1e10, -1e10, np.nan, 4294967295.0, 0.49999997], np.float32)
    f = {"TRUNC": math.trunc, "FLOOR": math.floor, "CEIL": math.ceil, "RN": round}[rnd]
    sfx = "" if rnd == "RN" else f".{rnd}"
    got = run_lanes([f"F2I{sfx} R7, R4"], x)
    ugot = run_lanes([f"F2I.U32{sfx} R7, R4"], x)
    for v, r, u in zip(x.tolist(), ints(got), ints(ugot), strict=True):
        if math.isnan(v):
            assert r == 0 and u == 0
            continue
        i = f(v)
        assert s32(r) == min(max(i, -(1 << 31)), (1 << 31) - 1)
        assert u == min(max(i, 0), M32)


def test_hfma2_halves_and_the_immediate_pair_trick():
    """HFMA2.MMA R7, -RZ, RZ, 0, 5.96e-08 is ptxas's way to load the constant 1 (f16 0x0001 in the low half)."""
    got = run_lanes(["HFMA2.MMA R7, -RZ, RZ, 0, 5.9604644775390625e-08"], np.zeros(4, np.uint32))
    assert ints(got) == [1] * 4
    a = sem.pack_f16(np.float16([1.5, -2.0]), np.float16([0.25, 3.0]))
    b = sem.pack_f16(np.float16([2.0, 0.5]), np.float16([4.0, -1.0]))
    got = run_lanes(["HFMA2 R7, R4, R5, R4.H1_H1"], a, b)
    lo, hi = sem.f16_pair(got)
    alo, ahi = sem.f16_pair(a)
    blo, bhi = sem.f16_pair(b)
    assert lo.tolist() == (alo * blo + ahi).tolist() and hi.tolist() == (ahi * bhi + ahi).tolist()


def test_shfl_down_and_vote_ballot_over_the_warp():
    v = np.arange(32, dtype=np.uint32) * 3
    got = run_lanes(["SHFL.DOWN PT, R7, R4, 0x4, 0x1f"], v)
    assert ints(got) == [int(v[i + 4]) if i + 4 < 32 else int(v[i]) for i in range(32)]
    got = run_lanes(["ISETP.GT.U32.AND P0, PT, R4, 0x30, PT", "VOTE.ANY R7, PT, P0"], v)
    assert ints(got) == [sum(1 << i for i in range(32) if v[i] > 0x30)] * 32


def test_mufu_rcp_and_ex2():
    x = np.array([0.5, 3.0, -8.0, 1e-3], np.float32)
    assert run_lanes(["MUFU.RCP R7, R4"], x).view(np.float32).tolist() == (1 / x).tolist()
    assert run_lanes(["MUFU.EX2 R7, R4"], x).view(np.float32).tolist() == np.exp2(x).tolist()


# ---- the rest of the integer and float families --------------------------------------------------------------

def test_bit_counts_minmax_and_viadd():
    a, b = rand_u32(), rand_u32()[::-1].copy()
    assert ints(run_lanes(["POPC R7, R4"], a)) == [bin(x).count("1") for x in ints(a)]
    assert ints(run_lanes(["BREV R7, R4"], a)) == [int(f"{x:032b}"[::-1], 2) for x in ints(a)]
    assert ints(run_lanes(["FLO.U32 R7, R4"], a)) == [(x.bit_length() - 1) & M32 for x in ints(a)]
    assert ints(run_lanes(["IMNMX R7, R4, R5, PT"], a, b)) == [min(s32(x), s32(y)) & M32 for x, y in
                                                               zip(ints(a), ints(b), strict=True)]
    assert ints(run_lanes(["IMNMX.U32 R7, R4, R5, !PT"], a, b)) == [max(x, y) for x, y in
                                                                    zip(ints(a), ints(b), strict=True)]
    assert ints(run_lanes(["VIADD R7, R4, 0xffffffe0"], a)) == [(x - 32) & M32 for x in ints(a)]


def test_plop3_p2r_and_r2p():
    a = np.arange(N, dtype=np.uint32)
    got = run_lanes(["LOP3.LUT P0, RZ, R4, 0x1, RZ, 0xc0, !PT", "LOP3.LUT P1, RZ, R4, 0x2, RZ, 0xc0, !PT",
                     "PLOP3.LUT P2, PT, P0, P1, PT, 0x28, 0x0", "P2R R7, PR, RZ, 0x7", "R2P PR, R4, 0x3",
                     "SEL R8, RZ, 0x1, !P0"], a, out_regs=2)
    for x, (pr, p0) in zip(ints(a), got.tolist(), strict=True):
        b0, b1 = x & 1, x >> 1 & 1
        assert pr == b0 | b1 << 1 | (b0 ^ b1) << 2  # lut 0x28: a XOR b where c is true
        assert p0 == b0  # R2P: P0 = bit 0 of R4


def test_doubles_as_register_pairs():
    x = RNG.standard_normal(N)
    y = RNG.standard_normal(N)
    lo = lambda v: v.view(np.uint32)[0::2].copy()  # noqa: E731
    hi = lambda v: v.view(np.uint32)[1::2].copy()  # noqa: E731
    ops = ["MOV R8, R4", "MOV R9, R5", "MOV R10, R6", "MOV R11, R6", "DFMA R12, R8, R8, R10", "DADD R14, R8, R12",
           "MOV R7, R14", "MOV R8, R15"]
    # (b is x's low half, c doubles as y's high half twice: the model builds the same doubles)
    a_lo, b_hi = lo(x), hi(x)
    c = hi(y)
    got = run_lanes(ops, a_lo, b_hi, c, out_regs=2)
    for k in range(N):
        xv = np.array([a_lo[k], b_hi[k]], np.uint32).view(np.float64)[0]
        cv = np.array([c[k], c[k]], np.uint32).view(np.float64)[0]
        want = xv + (xv * xv + cv)
        assert np.array(got[k], np.uint32).view(np.float64)[0] == want


def test_f2fp_packs_two_f32_as_f16_and_hadd2_f32_unpacks():
    a = np.array([1.5, -2.25, 65504.0, 1e-3], np.float32)
    b = np.array([0.5, 3.0, -1.0, 7.0], np.float32)
    got = run_lanes(["F2FP.F16.F32.PACK_AB R7, R4, R5"], a, b)
    lo, hi = sem.f16_pair(got)
    assert lo.tolist() == b.astype(np.float16).tolist() and hi.tolist() == a.astype(np.float16).tolist()
    back = run_lanes(["F2FP.F16.F32.PACK_AB R6, R4, R5", "HADD2.F32 R7, -RZ, R6.H1_H1"], a, b).view(np.float32)
    assert back.tolist() == a.astype(np.float16).astype(np.float32).tolist()
