"""Double precision through PTX (issue 40): nvcc's f64 forms (ptx_fixtures/f64_ops.cu: arithmetic with every
rounding mode, rcp/sqrt/rsqrt and their approximations, conversions, min/max, copysign, testp, shuffles of
doubles, atom.add.f64, and libdevice's functions built from them) run through `gpusim.launch`, every lane
checked against numpy float64, or against exact rational arithmetic where numpy has no such rounding.

Each test runs twice: on the checked-in f64_ops.ptx (nvcc 13.0), and on what the nvcc on PATH makes of
f64_ops.cu now (skipped, with the reason, where there is none)."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.errors import AssemblyError
from gpusim.isa import read_ptx, read_ptx_file
from gpusim.isa.opcodes import Unit
from tests.isa.cu_sources import WAYS, ptx_of

HERE = Path(__file__).parent / "ptx_fixtures"
CU = HERE / "f64_ops.cu"
PTX = HERE / "f64_ops.ptx"
INF, NAN = math.inf, math.nan
TINY, MAX, SUB = 2.0**-1022, np.finfo(np.float64).max, 2.0**-1074


@pytest.fixture(scope="module", params=WAYS)
def ptx(request, tmp_path_factory) -> Path:
    """The PTX to run: the checked-in file, or nvcc's output for the source now."""
    return ptx_of(CU, request.param, tmp_path_factory)


def run(ptx: Path, kernel: str, n: int, args: list) -> None:
    gpusim.launch(ptx, -(-n // 128), 128, [*args, n], kernel_name=kernel, mode="functional")


# ---- an independent reference: exact rationals, rounded by each mode ---------------------------------------


def F(x) -> Fraction:
    return Fraction(float(x))


def rounded(v: Fraction, mode: str) -> float:
    """The nonzero rational v as a double by `mode`: nearest-even from CPython's correctly rounded int / int,
    the directed modes from the two doubles around v."""
    try:
        near = v.numerator / v.denominator
    except OverflowError:
        near = INF if v > 0 else -INF
    if mode == "rn":
        return near
    if math.isinf(near):
        below, above = (MAX, INF) if v > 0 else (-INF, -MAX)
    else:
        if F(near) == v:
            return near
        below = near if F(near) < v else math.nextafter(near, -INF)
        above = math.nextafter(below, INF)
    return {"rz": below if v > 0 else above, "rm": below, "rp": above}[mode]


def zero_sum(x: float, y: float, mode: str) -> float:
    """IEEE 754 §6.3: an exact zero sum x + y: -0 if both are -0, or under .rm unless both are +0; else +0."""
    both_neg = x == 0 and y == 0 and math.copysign(1, x) < 0 and math.copysign(1, y) < 0
    both_pos = x == 0 and y == 0 and math.copysign(1, x) > 0 and math.copysign(1, y) > 0
    return -0.0 if both_neg or (mode == "rm" and not both_pos) else 0.0


def ref(op: str, mode: str, a: float, b: float = 0.0, c: float = 0.0) -> float:
    """One lane of `op` rounded by `mode`, by IEEE 754's rules."""
    with np.errstate(all="ignore"):
        if op == "sqrt":
            if not math.isfinite(a) or a <= 0:
                return float(np.sqrt(np.float64(a)))
            s = math.sqrt(a)  # correctly rounded
            if mode == "rn" or F(s) ** 2 == F(a):
                return s
            below = s if F(s) ** 2 < F(a) else math.nextafter(s, -INF)
            return math.nextafter(below, INF) if mode == "rp" else below
        if not all(math.isfinite(v) for v in ((a, b, c) if op == "fma" else (a, b))):  # inf, NaN: exact
            fa, fb, fc = np.float64(a), np.float64(b), np.float64(c)
            return float({"add": fa + fb, "mul": fa * fb, "div": fa / fb,
                          "fma": (c if math.isinf(c) and math.isfinite(a) and math.isfinite(b) else fa * fb + fc)}[op])
        if op == "div" and b == 0:
            return float(np.float64(a) / np.float64(b))
        v = {"add": lambda: F(a) + F(b), "mul": lambda: F(a) * F(b), "div": lambda: F(a) / F(b),
             "fma": lambda: F(a) * F(b) + F(c)}[op]()
        if v != 0:
            return rounded(v, mode)
        if op == "add":
            return zero_sum(a, b, mode)
        if op in ("mul", "div"):
            return float(np.float64(a) * np.float64(b)) if op == "mul" else float(np.float64(a) / np.float64(b))
        prod = float(np.float64(a) * np.float64(b)) if a == 0 or b == 0 else 1.0  # a nonzero product: cancelled
        return zero_sum(prod, c, mode)


def same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Lane by lane: the same bits, or both NaN (PTX's NaN payloads are not modelled)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of want's last place (0 where both are the same special value)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    with np.errstate(all="ignore"):
        e = np.abs(got - want) / np.spacing(np.abs(want))
    return np.where(same_bits(got, want), 0.0, e)


# ---- inputs: special values, their pairs, wide random values and rounding edge cases ------------------------

SPECIAL = np.array([0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.0, 0.5, 3.0, -3.0, 0.1, 1 / 3, math.pi, TINY, -TINY,
                    SUB, -SUB, 2.5 * SUB, MAX, -MAX, 1e300, 1e-300, 2.0**-537, 1 + 2.0**-52, 4.0])


def arith_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(40)
    sx, sy = (g.ravel() for g in np.meshgrid(SPECIAL, SPECIAL))  # every pair of special values
    sz = rng.choice(SPECIAL, sx.size)
    k = 512  # random values over the whole exponent range (subnormals included), and near 1
    wide = lambda: np.ldexp(rng.uniform(1, 2, k), rng.integers(-1074, 1024, k)) * rng.choice([-1, 1], k)  # noqa: E731
    near = lambda: rng.uniform(-4, 4, k)  # noqa: E731
    rx, ry, rz = np.r_[wide(), near()], np.r_[wide(), near()], np.r_[wide(), near()]
    # rounding edges: ties of a sum (1 + 2^-53: to even), a product's rounding error cancelled by c (fma gives
    # it exactly), x - x (an exact zero: -0 under .rm), perfect squares, products that underflow or overflow
    m = 64
    tx = np.r_[1 + np.arange(m) * 2.0**-52, rng.uniform(1, 2, m), rng.uniform(-1e3, 1e3, m),
               (np.arange(m) + 1.0) ** 2, rng.uniform(1, 2, m) * 2.0**-540, rng.uniform(1, 2, m) * 2.0**600]
    ty = np.r_[np.full(m, 2.0**-53), rng.uniform(1, 2, m), -tx[2 * m:3 * m], np.arange(m) + 3.0,
               rng.uniform(1, 2, m) * -(2.0**-540), rng.uniform(1, 2, m) * 2.0**500]
    tz = np.r_[rng.uniform(-1, 1, m), -(tx[m:2 * m] * ty[m:2 * m]), rng.uniform(-1, 1, 4 * m)]
    return np.r_[sx, rx, tx], np.r_[sy, ry, ty], np.r_[sz, rz, tz]


# ---- arithmetic ------------------------------------------------------------------------------------------------

# f64_arith's outputs (out[k]): (k, op, mode)
ROUNDED = [(0, "add", "rn"), (2, "mul", "rn"), (3, "fma", "rn"), (4, "div", "rn"), (5, "sqrt", "rn"),
           (6, "rcp", "rn"), *[(12 + j, "add", m) for j, m in enumerate(("rn", "rz", "rp", "rm"))],
           *[(16 + j, "sub", m) for j, m in enumerate(("rn", "rz", "rp", "rm"))],
           *[(20 + j, "mul", m) for j, m in enumerate(("rn", "rz", "rp", "rm"))],
           *[(24 + j, "fma", m) for j, m in enumerate(("rz", "rp", "rm"))],
           *[(27 + j, "div", m) for j, m in enumerate(("rn", "rz", "rp", "rm"))],
           *[(31 + j, "rcp", m) for j, m in enumerate(("rn", "rz", "rp", "rm"))],
           *[(35 + j, "sqrt", m) for j, m in enumerate(("rn", "rz", "rp", "rm"))], (1, "sub", "rn")]


@pytest.fixture(scope="module")
def arith(ptx):
    x, y, z = arith_inputs()
    n = x.size
    out = np.zeros(42 * n)
    run(ptx, "f64_arith", n, [x, y, z, out])
    return x, y, z, out.reshape(42, n)


def test_the_kernels_use_each_f64_form(ptx):
    """The families the issue names are in nvcc's PTX, each one gpusim instruction on the FP64 unit."""
    prog = read_ptx_file(ptx, "f64_arith")
    forms = {i.text.split()[0] for i in prog.instructions}
    for op in ("add", "sub", "mul", "fma", "div", "rcp", "sqrt"):
        for mode in ("rn", "rz", "rm", "rp"):
            assert f"{op}.{mode}.f64" in forms, f"{op}.{mode}.f64"
    assert {"rsqrt.approx.f64", "rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64", "min.f64", "max.f64", "copysign.f64",
            "abs.f64", "neg.f64"} <= forms
    assert all(i.unit == Unit.FP64 for i in prog.instructions if i.types and i.types[0] == "f64"
               and i.opcode not in ("ld", "st", "mov"))
    libm = {i.text.split()[0] for i in read_ptx_file(ptx, "f64_libm").instructions}
    assert {"ex2.approx.ftz.f32", "lg2.approx.ftz.f32", "cvt.rn.f32.f64", "rcp.approx.ftz.f64",
            "rsqrt.approx.ftz.f64"} <= libm  # libdevice's double functions through their f32 forms
    conv = {i.text.split()[0] for i in read_ptx_file(ptx, "f64_convert").instructions}
    assert {"cvt.rz.f32.f64", "cvt.rni.s32.f64", "cvt.rpi.u64.f64", "cvt.rm.f64.s64", "cvt.rp.f64.u64",
            "cvt.rmi.f64.f64", "cvt.rn.f16.f64", "mov.b64"} <= conv
    warp = [i.text.split()[0] for i in read_ptx_file(ptx, "f64_warp").instructions]
    assert "atom.global.add.f64" in warp and warp.count("shfl.sync.down.b32") == 2  # a double: two halves


def test_rounded_arithmetic_is_ieee_bit_for_bit(arith):
    x, y, z, out = arith
    bad = []
    for k, op, mode in ROUNDED:
        for i in range(x.size):
            a, b, c = float(x[i]), float(y[i]), float(z[i])
            if op == "sub":
                op_, b = "add", -b
            elif op == "rcp":
                op_, a, b = "div", 1.0, a
            else:
                op_ = op
            want = ref(op_, mode, a, b, c)
            if not same_bits(out[k, i], want):
                bad.append((op, mode, x[i], y[i], z[i], out[k, i], want))
    assert not bad, f"{len(bad)} lanes differ, e.g. {bad[:5]}"


def test_round_to_nearest_is_numpy_float64(arith):
    x, y, z, out = arith
    with np.errstate(all="ignore"):
        for k, want in [(0, x + y), (1, x - y), (2, x * y), (4, x / y), (5, np.sqrt(x)), (6, 1.0 / x),
                        (12, x + y), (16, x - y), (20, x * y), (27, x / y), (31, 1 / x), (35, np.sqrt(x))]:
            assert same_bits(out[k], want).all(), k
    # the fused multiply-add is not two roundings: where c cancels the rounded product, fma leaves the
    # product's rounding error, which numpy's a * b + c (zero) does not have
        fused = (z == -(x * y)) & np.isfinite(x * y) & (x * y != 0) & (out[3] != 0)
    assert fused.sum() >= 32


def test_min_max_copysign_abs_neg(arith):
    x, y, _z, out = arith
    lo = np.where(np.isnan(x), y, np.where(np.isnan(y), x, np.where(x == y, np.where(np.signbit(x), x, y),
                                                                      np.minimum(x, y))))
    hi = np.where(np.isnan(x), y, np.where(np.isnan(y), x, np.where(x == y, np.where(np.signbit(x), y, x),
                                                                      np.maximum(x, y))))
    assert same_bits(out[7], lo).all() and same_bits(out[8], hi).all()  # NaN loses; -0 < +0
    assert (out[9].view(np.uint64) == np.copysign(x, y).view(np.uint64)).all()  # the sign bit even of a NaN
    assert (out[10].view(np.uint64) == np.abs(x).view(np.uint64)).all()
    assert (out[11].view(np.uint64) == np.negative(x).view(np.uint64)).all()


def exact_rsqrt_ulps(a: float, y: float) -> float:
    """|y - 1/sqrt(a)| in ulps of y (bounded exactly: y^2 a against the squares of y +- k ulp)."""
    if F(y) ** 2 * F(a) == 1:
        return 0.0
    sp = F(np.spacing(y))
    lo, hi = Fraction(0), Fraction(4)
    for _ in range(40):  # bisect t with (y + t sp)^2 a = 1: |t| is the error in ulps
        mid = (lo + hi) / 2
        s = 1 if F(y) ** 2 * F(a) < 1 else -1
        if (F(y) + s * mid * sp) ** 2 * F(a) < 1 if s > 0 else (F(y) + s * mid * sp) ** 2 * F(a) > 1:
            lo = mid
        else:
            hi = mid
    return float(hi)


def test_rsqrt_approx_f64_is_within_one_ulp(arith):
    # PTX states no bound for rsqrt.approx.f64 (ptxas emulates it); the CUDA C++ Programming Guide gives
    # rsqrt(x) of a double, which nvcc makes this instruction, 1 ulp
    x, _y, _z, out = arith
    for i in np.flatnonzero(np.isfinite(x) & (x > 0))[::3]:
        assert exact_rsqrt_ulps(float(x[i]), float(out[39, i])) <= 0.5 + 1e-9, x[i]  # gpusim: to nearest
    specials = np.isin(x, [0.0, INF, -INF]) | np.isnan(x) | (x < 0)
    with np.errstate(all="ignore"):
        assert same_bits(out[39][specials], 1 / np.sqrt(x[specials])).all()  # +-0 -> +-inf, inf -> 0, <0 -> NaN


@pytest.mark.parametrize(("k", "f", "bound"), [(40, lambda v: 1 / v, 2.0**-20 + 2.0**-21),
                                               (41, lambda v: 1 / np.sqrt(v), 2.0**-21 + 2.0**-21)])
def test_gross_f64_approximations_follow_ptx(arith, k, f, bound):
    """rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64 (PTX ISA 9.7.3.14, 9.7.3.17): computed from the operand's
    upper word (its 20 mantissa bits: relative error 2^-20 in, halved by the square root) into an upper word
    (2^-21 more for its rounding), the low word zero; subnormals flushed; NaN -> 0x7fffffff00000000."""
    x, _y, _z, out = arith
    got = out[k]
    assert (got.view(np.uint64) & 0xFFFFFFFF == 0).all()
    with np.errstate(all="ignore"):
        want = f(x)
    fine = np.isfinite(want) & (np.abs(want) >= TINY) & (np.abs(x) >= TINY) & (want != 0)
    assert fine.sum() > 500
    assert (np.abs(got[fine] / want[fine] - 1) <= bound).all()
    table = [(INF, 0.0), (-INF, -0.0 if k == 40 else NAN), (0.0, INF), (-0.0, -INF), (SUB, INF), (-SUB, -INF),
             (-1.0, -1.0 if k == 40 else NAN), (MAX, 0.0 if k == 40 else f(MAX))]
    for v, w in table:
        i = np.flatnonzero(x.view(np.uint64) == np.float64(v).view(np.uint64))[0]
        assert same_bits(got[i], np.float64(w)) or (k == 41 and v == MAX and abs(got[i] / w - 1) <= bound), v
    assert (got[np.isnan(x)].view(np.uint64) == 0x7FFFFFFF00000000).all()
    neg = np.isnan(want) & ~np.isnan(x) & (np.abs(x) >= TINY)  # rsqrt of a negative normal number
    assert (got[neg].view(np.uint64) == 0x7FFFFFFF00000000).all()


# ---- conversions -----------------------------------------------------------------------------------------------


def rounded_f32(a: float, mode: str) -> np.float32:
    """The double a as f32 by mode: nearest from numpy's cast (one rounding of an exact value), the directed
    modes from the two f32 around a."""
    r = np.float32(a)
    if mode == "rn" or not math.isfinite(a) or (np.isfinite(r) and F(r) == F(a)):
        return r
    if np.isfinite(r):
        below = r if F(r) < F(a) else np.nextafter(r, np.float32(-INF))
    else:  # beyond the largest f32
        below = np.finfo(np.float32).max if a > 0 else np.float32(-INF)
    above = np.nextafter(below, np.float32(INF))
    return {"rz": below if a > 0 else above, "rm": below, "rp": above}[mode]


def to_int(a: float, mode: str, lo: int, hi: int) -> int:
    """cvt.rXi.int.f64: rounded to an integer by mode, saturated to [lo, hi]; NaN -> 0 (PTX ISA 9.7.9.21)."""
    if math.isnan(a):
        return 0
    if math.isinf(a):
        return hi if a > 0 else lo
    v = {"rn": round, "rz": math.trunc, "rp": math.ceil, "rm": math.floor}[mode](F(a))
    return min(max(int(v), lo), hi)


def nearest_half(a: float) -> np.float16:
    """a rounded to the nearest f16, ties to even: numpy's cast, checked against its two neighbours."""
    r = np.float16(a)
    if not np.isfinite(r) or math.isnan(a):
        assert math.isnan(a) or abs(a) >= 65520 or math.isinf(a)
        return r
    for c in (np.nextafter(r, np.float16(-INF)), np.nextafter(r, np.float16(INF))):
        if np.isfinite(c):
            d, dr = abs(F(c) - F(a)), abs(F(r) - F(a))
            assert d > dr or (d == dr and int(r.view(np.uint16)) % 2 == 0), a
    return r


def test_conversions(ptx):
    rng = np.random.default_rng(41)
    x = np.r_[SPECIAL, rng.uniform(-5, 5, 200), np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.0**31 - 0.5, 2.0**31,
                                                          -(2.0**31) - 1, 2.0**32, 2.0**63, 2.0**64, -(2.0**63),
                                                          1e19, 9.3e18, 1e-5, 65504, 65519.9, 65520, 6e-8, 3e-8]),
              np.ldexp(rng.uniform(1, 2, 100), rng.integers(-160, 140, 100)) * rng.choice([-1, 1], 100),
              rng.uniform(-2.0**63, 2.0**63, 50)]
    n = x.size
    big = [2**53 + 1, 2**53 + 3, 2**62 + 2**9 + 1, -(2**62) - 1, 2**63 - 1, -(2**63), 12345, -7, 2**60 - 1]
    ll = np.r_[np.array(big, np.int64), rng.integers(-(2**63), 2**63 - 1, n - len(big), dtype=np.int64)]
    ull = np.r_[np.array([2**64 - 1, 2**63 + 1, 2**53 + 1, 0, 5], np.uint64),
                rng.integers(0, 2**64 - 1, n - 5, dtype=np.uint64)]
    of, oi, ou = np.zeros(4 * n, np.float32), np.zeros(6 * n, np.int32), np.zeros(4 * n, np.uint32)
    ol, oul, od, oh = np.zeros(5 * n, np.int64), np.zeros(4 * n, np.uint64), np.zeros(17 * n), np.zeros(n, np.uint16)
    run(ptx, "f64_convert", n, [x, ll, ull, of, oi, ou, ol, oul, od, oh])
    of, oi, ou, ol, oul, od = (a.reshape(-1, n) for a in (of, oi, ou, ol, oul, od))
    modes = ("rn", "rz", "rp", "rm")
    with np.errstate(all="ignore"):
        for i, a in enumerate(x.tolist()):
            for j, m in enumerate(modes):
                want = rounded_f32(a, m)
                assert of[j, i].tobytes() == want.tobytes() or (math.isnan(a) and np.isnan(of[j, i])), (a, m)
                assert oi[j, i] == to_int(a, m, -(2**31), 2**31 - 1), (a, m)
                assert ou[j, i] == to_int(a, m, 0, 2**32 - 1), (a, m)
                assert ol[j, i] == to_int(a, m, -(2**63), 2**63 - 1), (a, m)
                assert int(oul[j, i]) == to_int(a, m, 0, 2**64 - 1), (a, m)
            h = nearest_half(a)
            assert oh[i] == h.view(np.uint16) or (np.isnan(h) and np.uint16(oh[i]).view(np.float16) != h), a
            for j, m in enumerate(modes):  # 64-bit integers to double, where rounding happens
                assert od[j, i] == (rounded(Fraction(int(ll[i])), m) if ll[i] else 0.0), (ll[i], m)
                assert od[4 + j, i] == (rounded(Fraction(int(ull[i])), m) if ull[i] else 0.0), (ull[i], m)
    bits = x.view(np.uint64)
    assert (oi[4].view(np.uint32) == (bits >> 32)).all() and (oi[5].view(np.uint32) == (bits & 0xFFFFFFFF)).all()
    assert (ol[4].view(np.uint64) == bits).all()
    assert (od[8] == ll.astype(np.int32)).all() and (od[9] == ull.astype(np.uint32)).all()
    with np.errstate(all="ignore"):
        assert same_bits(od[10], x.astype(np.float32).astype(np.float64)).all()
        for k, f in [(11, np.floor), (12, np.ceil), (13, np.trunc), (14, np.rint)]:
            assert same_bits(od[k], f(x)).all(), k
    assert (od[15].view(np.uint64) == ((bits & 0xFFFFFFFF) << 32 | bits >> 32)).all()
    assert (od[16].view(np.int64) == ll).all()


# ---- classification, shuffles and atomics ------------------------------------------------------------------------


def test_classification_and_testp(ptx):
    x = np.r_[SPECIAL, -SPECIAL, np.array([2.0**-1023, -(2.0**-1050), np.nextafter(TINY, 0)])]
    n = x.size
    out = np.full(10 * n, -1, np.int32)
    run(ptx, "f64_classify", n, [x, out])
    out = out.reshape(10, n).astype(bool)
    sub = (x != 0) & (np.abs(x) < TINY)
    fin = np.isfinite(x)
    want = [np.isnan(x), np.isinf(x), fin, np.signbit(x), fin, np.isinf(x), ~np.isnan(x), np.isnan(x),
            fin & ~sub, sub]  # testp: zeros are normal numbers (PTX ISA 9.7.3.1)
    for k, w in enumerate(want):
        assert (out[k] == w).all(), k


def test_shuffles_of_doubles_and_atomic_add(ptx):
    n = 256
    rng = np.random.default_rng(42)
    x = rng.integers(1, 1000, n) / 8.0  # dyadic: every order of the atomic adds gives the same sums
    x[0:32:4] = [NAN, -0.0, INF, SUB, -MAX, TINY, 1 / 3, -math.pi]  # lanes adding to sums[0]
    out, sums, old = np.zeros(4 * n), np.zeros(4), np.zeros(n)
    run(ptx, "f64_warp", n, [x, out, sums, old])
    out = out.reshape(4, n)
    lane, i = np.arange(n) % 32, np.arange(n)
    src = [np.where(lane + 1 < 32, i + 1, i), i - lane + (lane ^ 5), i - lane + (lane * 7) % 32,
           np.where(lane >= 3, i - 3, i)]  # a source lane outside the warp: the lane's own value
    for k, s in enumerate(src):  # each lane gets its source's 64 bits, through two 32-bit shuffles
        assert (out[k].view(np.uint64) == x[s].view(np.uint64)).all(), k
    assert np.isnan(sums[0])
    for j in (1, 2, 3):
        lanes = np.arange(j, n, 4)
        assert sums[j] == np.sum(x[lanes])  # exact
        # each lane read the sum before its own add: with positive addends the olds, sorted, and the total are
        # the running sums, whose steps are the lanes' values
        steps = np.diff(np.r_[np.sort(old[lanes]), sums[j]])
        assert old[lanes].min() == 0 and sorted(steps) == sorted(x[lanes])


# ---- libdevice's double functions ---------------------------------------------------------------------------

# The CUDA C++ Programming Guide's maximum ulp error of each double function (Mathematical Functions appendix,
# double-precision table); the reference (the host's libm through numpy) may be 1 ulp off itself.
LIBM = [(0, "exp", lambda a, b: np.exp(a), 1), (1, "log", lambda a, b: np.log(b), 1),
        (2, "exp2", lambda a, b: np.exp2(a), 1), (3, "log2", lambda a, b: np.log2(b), 1),
        (4, "log10", lambda a, b: np.log10(b), 1), (5, "expm1", lambda a, b: np.expm1(a), 1),
        (6, "log1p", lambda a, b: np.log1p(b), 1), (7, "cbrt", lambda a, b: np.cbrt(a), 1),
        (8, "rcbrt", lambda a, b: 1 / np.cbrt(a), 2), (9, "tanh", lambda a, b: np.tanh(a), 1),
        (10, "erf", lambda a, b: np.vectorize(math.erf)(a), 2), (11, "atan", lambda a, b: np.arctan(a), 2),
        (12, "atan2", lambda a, b: np.arctan2(a, b), 2), (13, "hypot", lambda a, b: np.hypot(a, b), 2),
        (14, "cosh", lambda a, b: np.cosh(a), 1), (15, "sinh", lambda a, b: np.sinh(a), 2),
        (16, "asin", lambda a, b: np.arcsin(a / (1 + np.abs(a))), 2),
        (17, "acos", lambda a, b: np.arccos(a / (1 + np.abs(a))), 2)]


@pytest.fixture(scope="module")
def libm(ptx):
    rng = np.random.default_rng(43)
    a = np.r_[rng.uniform(-30, 30, 700), rng.uniform(-1, 1, 200), np.ldexp(rng.uniform(1, 2, 100),
                                                                           rng.integers(-1070, 9, 100)),
              [0.0, -0.0, INF, -INF, NAN, 700.0, -745.0, 1e-310, 1.0, -1.0, 0.5, 2.0]]
    b = np.r_[np.exp(rng.uniform(-700, 700, 700)), rng.uniform(0, 4, 200), rng.uniform(1e-300, 1e300, 100),
              [1.0, 2.0, INF, 0.0, NAN, 1e-320, 3.0, 10.0, 0.5, 1e300, 7.0, 9.0]]
    n = a.size
    out = np.zeros(18 * n)
    run(ptx, "f64_libm", n, [a, b, out])
    return a, b, out.reshape(18, n)


@pytest.mark.parametrize(("k", "name", "f", "bound"), LIBM, ids=[row[1] for row in LIBM])
def test_libdevice_functions_within_their_stated_ulps(libm, k, name, f, bound):
    a, b, out = libm
    with np.errstate(all="ignore"):
        want = f(a, b)
    err = ulps(out[k], want)
    assert np.isfinite(err).all() and err.max() <= bound + 1, (name, err.max(), a[err.argmax()], b[err.argmax()])


# ---- errors --------------------------------------------------------------------------------------------------

KERNEL = """.version 9.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{{
\t.reg .f64 %fd<4>;
\t.reg .f32 %f<2>;
\t.reg .b64 %rd<2>;
\t.reg .pred %p1;
\t{line}
\tret;
}}
"""


@pytest.mark.parametrize(("line", "message"), [
    ("div.approx.f64 %fd1, %fd2, %fd3;", "div.f64 rounds by .rn .rz .rm .rp (.approx and .full are .f32 forms)"),
    ("sqrt.approx.f64 %fd1, %fd2;", "sqrt.f64 rounds by .rn .rz .rm .rp (.approx and .full are .f32 forms)"),
    ("rcp.approx.f64 %fd1, %fd2;", "rcp.f64 is rcp.rn/.rz/.rm/.rp.f64 or rcp.approx.ftz.f64"),
    ("rsqrt.rn.f64 %fd1, %fd2;", "rsqrt is approximate: use .approx"),
    ("add.rz.s64 %rd1, %rd1, 1;", "directed rounding (.rz .rm .rp) of add needs .f32 or .f64"),
    ("atom.global.max.f64 %fd1, [%rd1], %fd2;", "atom.f64 is atom.add.f64 only"),
    ("ex2.approx.f64 %fd1, %fd2;", "ex2 does not take .f64; expected one of .f16 .f32"),  # (nvcc: via f32)
    ("testp.odd.f64 %p1, %fd1;", "unsupported PTX instruction 'testp.odd.f64' (unknown qualifier .odd"),
])
def test_f64_forms_ptx_does_not_have_are_located_errors(line, message):
    with pytest.raises(AssemblyError) as e:
        read_ptx(KERNEL.format(line=line), "k.ptx")
    assert str(e.value).startswith(f"k.ptx:10:2: {message}"), str(e.value)
