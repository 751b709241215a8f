"""gpusim/functional/ieee.py against exact rational arithmetic: the fused multiply-add rounded once and every
rounding mode of add, mul, fma, div and sqrt, for f32 and f64, on random operands over the whole exponent
range (subnormals, overflow and underflow included) and on the cases that break the easy ways."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from gpusim.functional import ieee

MODES = ("rn", "rz", "rm", "rp")


def F(x) -> Fraction:
    return Fraction(float(x))


def exact_round(v: Fraction, dtype, mode: str):
    """v (nonzero) rounded into dtype by mode: the nearest of the two values around it, or the one below or
    above, found by search in dtype's own values (numpy's cast only as a first guess)."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    top = F(info.max)
    ulp_top = top - F(np.nextafter(info.max, dtype.type(0)))
    if abs(v) > top:  # beyond the largest finite: rounds to it or to infinity
        sign = 1 if v > 0 else -1
        inf, big = dtype.type(sign * math.inf), dtype.type(sign * float(info.max))
        away = {"rn": abs(v) >= top + ulp_top / 2, "rz": False, "rm": v < 0, "rp": v > 0}[mode]
        return inf if away else big
    with np.errstate(all="ignore"):
        below = dtype.type(float(v))  # a guess within a step or two (float(v) itself is within range here)
    if not np.isfinite(below):
        below = dtype.type(float(info.max) if v > 0 else -float(info.max))
    while F(below) > v:
        below = np.nextafter(below, dtype.type(-np.inf))
    while F(np.nextafter(below, dtype.type(np.inf))) <= v:
        below = np.nextafter(below, dtype.type(np.inf))
    above = below if F(below) == v else np.nextafter(below, dtype.type(np.inf))
    if mode == "rz":
        return below if v > 0 else above
    if mode in ("rm", "rp"):
        return below if mode == "rm" else above
    db, da = v - F(below), F(above) - v
    if db != da:
        return below if db < da else above
    return below if int(np.array(below).view(f"u{dtype.itemsize}")) % 2 == 0 else above


def operands(dtype, n, rng):
    """n random finite values spread over dtype's exponents (subnormals included), with some zeros."""
    info = np.finfo(dtype)
    lo, hi = info.minexp - info.nmant, info.maxexp
    x = np.ldexp(rng.uniform(1, 2, n), rng.integers(lo, hi, n)) * rng.choice([-1, 1], n)
    x[rng.integers(0, n, n // 20)] = 0.0
    return x.astype(dtype)


def zero_result(mode: str, x, y):
    """IEEE 754 §6.3 for an exact zero sum of x and y."""
    if x == 0 and y == 0 and np.signbit(x) == np.signbit(y):
        return -0.0 if np.signbit(x) else 0.0
    return -0.0 if mode == "rm" else 0.0


def check(dtype, got, want_fn, *args):
    bad = [(tuple(float(a[i]) for a in args), float(got[i])) for i in range(got.size)
           if np.array(got[i]).tobytes() != np.array(want_fn(*(a[i] for a in args)), dtype).tobytes()]
    assert not bad, f"{len(bad)} of {got.size} wrong, e.g. {bad[:3]}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES)
def test_every_rounding_mode_is_exact(dtype, mode):
    rng = np.random.default_rng(MODES.index(mode) + 10 * np.dtype(dtype).itemsize)
    n = 400
    a, b, c = operands(dtype, n, rng), operands(dtype, n, rng), operands(dtype, n, rng)
    b[:40] = -a[:40]  # exact cancellations (zeros)
    with np.errstate(over="ignore"):
        prod = a[40:80] * b[40:80]
    c[40:80] = np.where(np.isfinite(prod), -prod, c[40:80])  # a rounded product cancelled: fma keeps its error

    def rounded(v, *zero):
        return exact_round(v, dtype, mode) if v != 0 else zero_result(mode, *zero)

    check(dtype, ieee.add(a, b, mode, dtype), lambda x, y: rounded(F(x) + F(y), x, y), a, b)
    check(dtype, ieee.mul(a, b, mode, dtype),
          lambda x, y: rounded(F(x) * F(y)) if x * 0 == 0 and F(x) * F(y) != 0 else np.multiply(x, y), a, b)

    def fma_want(x, y, z):
        v = F(x) * F(y) + F(z)
        prod = np.multiply(x, y) if x == 0 or y == 0 else dtype(1.0)  # a nonzero product's sign is moot
        return rounded(v, prod, z)

    check(dtype, ieee.fma(a, b, c, mode, dtype), fma_want, a, b, c)
    nz = b != 0
    check(dtype, ieee.div(a[nz], b[nz], mode, dtype),
          lambda x, y: rounded(F(x) / F(y)) if x != 0 else np.divide(x, y), a[nz], b[nz])
    pos = np.abs(a)
    with np.errstate(all="ignore"):
        got = ieee.sqrt(pos, mode, dtype)

    def sqrt_want(x):
        if x == 0:
            return x
        s = exact_round(F(np.sqrt(np.float64(x))), dtype, "rn")  # a guess; then the neighbours by squares
        while F(s) ** 2 > F(x):
            s = np.nextafter(s, dtype(0))
        while F(np.nextafter(s, dtype(np.inf))) ** 2 <= F(x):
            s = np.nextafter(s, dtype(np.inf))
        up = np.nextafter(s, dtype(np.inf))
        if F(s) ** 2 == F(x) or mode in ("rz", "rm"):
            return s
        if mode == "rp":
            return up
        mid = (F(s) + F(up)) / 2
        return s if mid ** 2 > F(x) else up  # (a square root is never exactly a midpoint)

    check(dtype, got, sqrt_want, pos)


@pytest.fixture(params=["numpy", "compiled"])
def fma_path(request, monkeypatch):
    """fma.rn.f32 both ways: numpy's passes (a functional-only run, no Numba loaded) and the compiled pass."""
    monkeypatch.setattr(ieee.kernels, "numba_loaded", lambda: request.param == "compiled")
    return request.param


def test_fma_f32_rounds_once_where_two_roundings_differ(fma_path):
    # a * b = 2^-24 (1 + r 2^-47), r = 59287: 1 + a b lies just above the f32 midpoint 1 + 2^-24, but its
    # nearest double is that midpoint, which rounds to even (1.0): rounding twice gives 1.0, once 1 + 2^-23
    a, b, c = np.float32(float.fromhex("0x1.000ff2p-24")), np.float32(float.fromhex("0x1.ffe01ep-1")), np.float32(1)
    assert F(a) * F(b) - Fraction(1, 2**24) == Fraction(59287, 2**71)
    assert np.float32(np.float64(a) * np.float64(b) + np.float64(c)) == 1.0
    assert ieee.fma_rn(a, b, c, np.float32) == np.float32(1 + 2.0**-23)


def test_fma_f32_midpoints_and_subnormal_sums_exact(fma_path):
    # operands of few significant bits put many f64 sums exactly on, or near, a midpoint between two f32, and
    # small ones put sums in f32's subnormal range: the lanes fma.rn.f32 rounds with care, against Fractions
    rng = np.random.default_rng(7)
    n = 3000
    a = np.ldexp(rng.integers(1, 1 << 12, n), rng.integers(-80, 0, n)).astype(np.float32)
    b = np.ldexp(rng.integers(1, 1 << 13, n), rng.integers(-80, 0, n)).astype(np.float32)
    c = np.ldexp(rng.integers(-(1 << 24), 1 << 24, n), rng.integers(-170, 10, n)) * rng.choice([0, 1], n, p=[0.3, 0.7])
    c = c.astype(np.float32)  # (zero for a third: the product alone, subnormal for many)
    c[:300] = np.float32(1)  # a product of 2^-24 (1 + small) lands by 1 + 2^-24, the midpoint above 1
    a[:300], b[:300] = np.float32(2.0**-12), (np.float32(2.0**-12) * (1 + rng.integers(0, 1 << 10, 300) * 2.0**-23)
                                              ).astype(np.float32)

    def want(x, y, z):
        v = F(x) * F(y) + F(z)
        return exact_round(v, np.float32, "rn") if v != 0 else np.float32(x) * np.float32(y) + np.float32(z)

    check(np.float32, ieee.fma_rn(a, b, c, np.float32), want, a, b, c)


def test_fma_f64_keeps_the_products_rounding_error():
    x = np.float64(1 + 2.0**-30)
    p = x * x  # 1 + 2^-29 + 2^-60 rounded: the 2^-60 is lost
    assert ieee.fma_rn(x, x, -p) == 2.0**-60 and x * x - p == 0
    # near the ends of the fast path's range (the exact fallback takes these lanes)
    big, tiny = np.float64(2.0**1000), np.float64(2.0**-1000)
    assert ieee.fma_rn(big, big, -np.inf) == -np.inf  # the product overflows, the infinite c wins
    assert ieee.fma_rn(tiny, tiny, 1.0) == 1.0 and ieee.fma_rn(tiny, tiny, 0.0) == 0.0
    assert ieee.fma_rn(np.float64(2.0**-540), np.float64(2.0**-540), 0.0) == 0.0  # 2^-1080: below half 2^-1074
    assert ieee.fma_rn(np.float64(2.0**-537), np.float64(2.0**-537), 0.0) == 2.0**-1074
    assert np.isnan(ieee.fma_rn(np.inf, 0.0, 1.0)) and ieee.fma_rn(-0.0, 1.0, -0.0) == 0 and np.signbit(
        ieee.fma_rn(-0.0, 1.0, -0.0))


def test_f64_approximations():
    a = np.array([2.0, 3.0, 0.1, 1e308, 5e-324])
    r = ieee.rcp_gross_f64(a)
    assert (r.view(np.uint64) & 0xFFFFFFFF == 0).all()
    assert r[0] == 0.5 and abs(r[1] * 3 - 1) < 2.0**-20 and r[3] == 0.0 and r[4] == np.inf  # (ftz both ways)
    assert ieee.rsqrt_f64(np.float64(4.0)) == 0.5 and ieee.rsqrt_gross_f64(np.array([4.0]))[0] == 0.5


def test_fma_f32_of_immediates_into_a_whole_register():
    """fma.rn.f32 whose three operands are immediates (scalars) writes every lane of the destination register,
    including where the sum lies in f32's subnormal range and takes the exact path (a property test found
    fma.rn.f32 %f0, 0.0, 0.0, 0f00000001 raising an IndexError there)."""
    tiny = float(np.float32(np.uint32(1).view(np.float32)))  # 0f00000001, f32's smallest subnormal
    for a, b, c, want in ((0.0, 0.0, tiny, np.float32(tiny)), (1.5, 2.0, 0.25, np.float32(3.25)),
                          (2.0**-70, 2.0**-70, 0.0, np.float32(Fraction(1, 2**140)))):
        out = np.full(64, np.float32(7.0))
        got = ieee.fma_rn(np.float64(a), np.float64(b), np.float64(c), np.float32, out=out)
        assert got is out
        assert np.array_equal(out.view(np.uint32), np.full(64, want, np.float32).view(np.uint32)), (a, b, c, out[:2])


def test_fma_f32_into_an_operand_fixes_its_midpoint_lanes_from_their_operands(fma_path):
    # fma d, a, b, d: the register written is an operand. The lanes to fix (on a midpoint, in the subnormal
    # range) are left unwritten by the compiled pass, so they are fixed from their own operands: the same
    # result as into a fresh array, lane for lane, the fixed lanes included
    rng = np.random.default_rng(11)
    n = 4000
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    hard = rng.random(n) < 0.3  # the lane of test_fma_f32_rounds_once_where_two_roundings_differ
    a[hard], b[hard], c[hard] = float.fromhex("0x1.000ff2p-24"), float.fromhex("0x1.ffe01ep-1"), 1.0
    want = ieee.fma_rn(a, b, c, np.float32)
    naive = (a.astype(np.float64) * b + c).astype(np.float32)
    assert (want != naive).sum() == hard.sum() > 1000  # (those lanes take the fix)
    for k, ops in enumerate(([c.copy(), a, b], [a.copy(), b, c])):
        d = ops[0]
        args = (a, b, d) if k == 0 else (d, b, c)
        got = ieee.fma_rn(*args, np.float32, out=d)
        assert got is d and np.array_equal(d.view(np.uint32), want.view(np.uint32))
