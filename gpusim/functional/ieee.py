"""IEEE 754 arithmetic as PTX defines it, on numpy arrays of lanes: a fused multiply-add rounded once, and
the four rounding modes of `add sub mul fma div rcp sqrt` (`.rn` nearest-even, `.rz` toward zero, `.rm`
toward -inf, `.rp` toward +inf) for `.f32` and `.f64`. numpy gives every operation but the fused one rounded
to nearest; the other modes come from the nearest result and the sign of its error (the exact result minus
it), one `nextafter` away when the mode rounds the other way.

How each exact quantity is found without leaving float arithmetic:
- `fma.rn.f64`: Boldo and Melquiond's emulation ("Emulation of FMA and correctly rounded sums: proved
  algorithms using rounding to odd", IEEE Trans. Computers 57(4), 2008): the product split exactly in two
  (Dekker's product), the sum with c split exactly in two (Knuth's TwoSum), the two low parts added rounded
  to odd, then one rounding to nearest. `fma.rn.f32`: the product of two f32 is exact in f64; the sum
  rounded to odd in f64 and then to nearest f32 is the f32 sum rounded once (53 >= 24 + 2 bits).
- the error's sign: of `add`/`sub`, TwoSum's low part; of `mul.f64`, Dekker's; of `div`, `rcp` and `sqrt`,
  the remainder a - q*b (a - s*s) through the fused multiply-add, whose rounding keeps the sign; of f32
  operations, float64 arithmetic (f32 products are exact there).
Lanes where these need a range the float arithmetic cannot give (an input near the overflow threshold, a
product small enough that its low part underflows, the directed modes of `fma.f64`) are computed exactly
with Python's `fractions.Fraction` instead, lane by lane: correct everywhere, fast where it matters.

Zeros follow IEEE 754 §6.3: an exact zero sum of operands of opposite signs (or x - x) is +0, and -0 under
`.rm`; x * y keeps the xor of the signs. NaN results are numpy's (any NaN: PTX's canonical NaN bits are not
modelled)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from gpusim.functional import kernels
from gpusim.functional.kernels import lazy_njit
from gpusim.functional.lanes import put

MODES = ("rn", "rz", "rm", "rp")
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's constant splitting a double into two 26-bit halves
_BIG = 2.0**995  # below this the split does not overflow
_HUGE = 2.0**1020  # below this TwoSum of two such values does not overflow
_TINY = 2.0**-960  # above this a product's rounding error is a normal double (exactly representable)


def _two_sum(a, b):
    """s = RN(a + b) and e with a + b = s + e exactly (Knuth; exact in any binary format, subnormals
    included, when nothing overflows)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _sorted_two_sum(a, b):
    """As _two_sum, without an intermediate that can overflow where the sum does not (Dekker's Fast2Sum on
    the operands ordered by magnitude)."""
    swap = np.abs(a) < np.abs(b)
    hi, lo = np.where(swap, b, a), np.where(swap, a, b)
    s = hi + lo
    return s, lo - (s - hi)


def _two_prod(a, b, p):
    """e with a * b = p + e exactly, p = RN(a * b) (Dekker; exact where |a|, |b| < 2**995 and |p| > 2**-960)."""
    ca, cb = _SPLIT * a, _SPLIT * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _lanes(*xs, dtype):
    return np.broadcast_arrays(*(np.asarray(x, dtype=dtype) for x in xs))


def _fraction(x: float) -> Fraction:
    return Fraction(float(x))


def _nearest(v: Fraction) -> float:
    """v rounded to the nearest double, ties to even (CPython's int / int is correctly rounded, subnormals
    included); beyond the range, the infinity of its sign."""
    try:
        return v.numerator / v.denominator
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _fma_exact(a: float, b: float, c: float) -> float:
    """One lane of fma.rn.f64 in exact arithmetic (inputs finite)."""
    v = _fraction(a) * _fraction(b) + _fraction(c)
    return _nearest(v) if v != 0 else 0.0  # (a nonzero product cancelled by c: +0)


_BLOCK = 4096  # lanes a pass of the emulated fma works on: its temporaries stay in the CPU's cache


def _fma_block(a, b, c, out) -> np.ndarray:
    """The emulated fma.rn.f64 of one block of lanes, in place where it can be (the fast path's ~50
    array operations): `out` gets the result; returns the lanes the fast path does not cover."""
    uh = a * b
    t = a * _SPLIT  # Dekker: ul with a * b = uh + ul exactly
    ah = t - (t - a)
    al = a - ah
    np.multiply(b, _SPLIT, out=t)
    bh = t - (t - b)
    bl = b - bh
    ul = ah * bh
    ul -= uh
    ah *= bl
    ul += ah
    bh *= al
    ul += bh
    al *= bl
    ul += al
    th = c + uh  # TwoSum: c + uh = th + tl exactly
    bb = th - c
    tl = th - bb
    np.subtract(c, tl, out=tl)
    np.subtract(uh, bb, out=bb)
    tl += bb
    s = tl + ul  # TwoSum again, then s rounded to odd: v
    bb = s - tl
    e = s - bb
    np.subtract(tl, e, out=e)
    np.subtract(ul, bb, out=bb)
    e += bb
    si = s.view(np.int64)
    step = si ^ e.view(np.int64)  # the neighbour toward the exact sum: +1 where e and s agree in sign, else -1
    step >>= 63
    step |= 1
    step *= ((si & 1) == 0) & (e != 0)  # only an inexact sum with an even last bit moves
    si += step
    np.add(th, s, out=out)
    x = np.abs(uh)
    ok = (x > _TINY) & (x < _HUGE)  # (false for a NaN)
    np.abs(c, out=x)
    ok &= x < _HUGE
    np.maximum(np.abs(a), np.abs(b), out=x)
    ok &= x < _BIG
    return ~ok


def fma_rn(a, b, c, dtype=_F64, out=None) -> np.ndarray:
    """a * b + c rounded once to nearest-even in `dtype` (float32 or float64); into `out` when given."""
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dtype == _F32:
            return _fma_f32(a, b, c, out)
        if out is not None:
            return put(fma_rn(a, b, c, dtype), out)
        a, b, c = _lanes(a, b, c, dtype=_F64)
        shape = a.shape
        a, b, c = (np.ascontiguousarray(x).ravel() for x in (a, b, c))
        out = np.empty(a.size, _F64)
        slow = np.empty(a.size, bool)
        for k in range(0, a.size, _BLOCK):
            sl = slice(k, k + _BLOCK)
            slow[sl] = _fma_block(a[sl], b[sl], c[sl], out[sl])
        for i in np.flatnonzero(slow):  # a zero or non-finite operand, or out of the fast path's range
            out[i] = _fma_lane(a[i], b[i], c[i])
        return out.reshape(shape)


_F32_NORMAL = 2.0**-126  # f32's smallest normal number
_DROPPED = np.uint64(0x1FFFFFFF)  # the 29 low bits of an f64 that an f32 drops ...
_HALF_ULP = np.uint64(0x10000000)  # ... where they are exactly half an f32 ulp
_LOW_WORD = 0 if np.little_endian else 1  # the 32-bit half of an f64 that holds its lowest bits


def _fma_f32(a, b, c, out=None) -> np.ndarray:
    """fma.rn.f32: the product of two f32 is exact in f64, so p + c rounded to f64 and then to f32 is right
    but where the f64 sum is inexact and falls on a midpoint between two f32 (or in f32's subnormal range,
    whose midpoints lie elsewhere): there the sum is rounded to odd in f64 first (a few lanes in millions).
    Into `out` when given (which may be one of the operands: those lanes' operands are read first). In one
    compiled pass over the lanes where Numba is loaded (`_fma_f32_lanes`), else in numpy's passes."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c))
    if out is not None and (out.shape != shape or out.dtype != _F32 or not out.flags.c_contiguous):
        return put(_fma_f32(a, b, c), out)  # (operands all narrower than the register: immediates)
    if not kernels.numba_loaded():
        return _fma_f32_numpy(a, b, c, shape, out)
    a, b, c = (np.ascontiguousarray(np.broadcast_to(np.asarray(v, _F32), shape)).reshape(-1) for v in (a, b, c))
    res = np.empty(shape, _F32) if out is None else out
    flat = res.reshape(-1)
    found = np.empty(flat.size, np.int64)  # (untouched but for the few lanes to fix: no page is faulted in)
    n = _compiled_fma_f32(a, b, c, flat, found)
    if n:
        lanes = found[:n]
        flat[lanes] = _fixed_f32(*(v[lanes].astype(_F64) for v in (a, b, c)))
    return res


def _fixed_f32(a, b, c) -> np.ndarray:
    """fma.rn.f32 of the lanes whose f64 sum may round wrong (f32 operands, given as f64): the sum rounded to
    odd in f64 first, then to f32 (an infinite or NaN sum as it is)."""
    s, e = _two_sum(a * b, c)
    return np.where(np.isfinite(s), _round_to_odd(s, e), s).astype(_F32)


def _fma_f32_numpy(a, b, c, shape, out):
    """`_fma_f32` in numpy's passes, allocating as little as the plain (a * b + c) would (large temporaries
    cost page faults): the f64 sum's tests read it as it is, in booleans and 32-bit words."""
    r = np.empty(shape, _F64)
    np.multiply(a, b, out=r, dtype=_F64)
    np.add(r, c, out=r, dtype=_F64)
    flat = r.reshape(-1)
    # the lanes `_fma_f32_lanes` says: in f32's subnormal range, or the 29 bits an f32 drops exactly half an ulp
    suspect = flat < _F32_NORMAL
    suspect &= flat > -_F32_NORMAL
    suspect &= flat != 0
    suspect |= (flat.view(np.uint32)[_LOW_WORD::2] & np.uint32(0x1FFFFFFF)) == np.uint32(0x10000000)
    if suspect.any():
        fixed = _fixed_f32(*(np.broadcast_to(np.asarray(v, _F64), r.shape).reshape(-1)[suspect] for v in (a, b, c)))
    if out is None:
        out = r.astype(_F32)
    else:
        np.copyto(out, r, casting="same_kind")
    if suspect.any():
        out.reshape(-1)[suspect] = fixed
    return out


def _fma_f32_lanes(a, b, c, out, found):
    """One pass over the lanes: out = a * b + c, the exact product plus c rounded to f64, then to f32, except
    in the lanes where that may differ from rounding the exact sum once: the 29 bits of the f64 sum that an
    f32 drops are exactly half an f32 ulp (a midpoint, where the sum may have been rounded onto it), or the
    sum lies in f32's subnormal range, 0 < |sum| < 2^-126 (a sum that rounds to zero in f64 is exactly zero,
    signed as IEEE's sum, f32's too; an inactive lane's zero operands make none; a NaN compares false).
    Those lanes are listed in `found` and left unwritten; returns how many."""
    n = 0
    for i in range(out.size):
        r = np.float64(a[i]) * np.float64(b[i]) + np.float64(c[i])
        if (np.float64(r).view(np.uint64) & _DROPPED) == _HALF_ULP or (r != 0 and -_F32_NORMAL < r < _F32_NORMAL):
            found[n] = i
            n += 1
        else:
            out[i] = np.float32(r)
    return n


_compiled_fma_f32 = lazy_njit(_fma_f32_lanes)  # (compiled at the first fma.rn.f32)


def _fma_lane(a: float, b: float, c: float) -> float:
    """One lane of fma.rn.f64 outside the fast path's range."""
    fa, fb, fc = np.float64(a), np.float64(b), np.float64(c)
    if fa == 0 or fb == 0 or not (np.isfinite(fa) and np.isfinite(fb)):
        return fa * fb + fc  # the product is exact (a signed zero, an infinity or NaN): IEEE's sum
    if not np.isfinite(fc):
        return fc
    return _fma_exact(a, b, c)


def _round_to_odd(s, e):
    """RO(x) from s = RN(x) and e = x - s: s where exact or odd, else its neighbour toward x (which is odd)."""
    even = (s.view(np.int64) & 1) == 0
    return np.where((e != 0) & even, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


# ---- rounding modes -----------------------------------------------------------------------------------


def nudge(r, sign, mode: str):
    """The result in `mode` (rz, rm, rp) from r = RN(x) and sign(x - r)."""
    if mode == "rz":
        fix, toward = ((r > 0) & (sign < 0)) | ((r < 0) & (sign > 0)), 0.0
    elif mode == "rm":
        fix, toward = sign < 0, -np.inf
    else:
        fix, toward = sign > 0, np.inf
    return np.where(fix, np.nextafter(r, np.asarray(toward, r.dtype)), r).astype(r.dtype)


def _minus_zero(r, sign, x, y, mode: str):
    """IEEE 754 §6.3: under .rm an exact zero sum is -0 unless both addends are +0."""
    if mode != "rm":
        return r
    plus = lambda z: (z == 0) & ~np.signbit(z)  # noqa: E731
    return np.where((r == 0) & (sign == 0) & ~(plus(x) & plus(y)), r.dtype.type(-0.0), r)


def _sign_of(x) -> np.ndarray:
    return np.sign(x).astype(np.int8)


def _exact_sign(kind: str, r, a, b, c, where) -> np.ndarray:
    """sign(exact - r) of `mul`, `fma`, `div` or `sqrt` lane by lane with Fractions, at the lanes `where`
    (all finite there)."""
    out = np.zeros(r.shape, np.int8)
    fr, fa, fb = r.ravel(), a.ravel(), b.ravel()
    fc = c.ravel() if c is not None else None
    o = out.reshape(-1)
    for i in np.flatnonzero(np.asarray(where).ravel()):
        R, A = _fraction(fr[i]), _fraction(fa[i])
        if kind == "sqrt":
            d = A - R * R
        elif kind == "div":
            d = (A - R * _fraction(fb[i])) * (1 if fb[i] > 0 else -1)
        else:
            d = A * _fraction(fb[i]) - R + (_fraction(fc[i]) if kind == "fma" else 0)
        o[i] = (d > 0) - (d < 0)
    return out


def _overflow_sign(r, *inputs):
    """sign(exact - r) where a finite computation overflowed to r = +-inf: the exact value is finite."""
    finite = np.logical_and.reduce([np.isfinite(x) for x in inputs])
    return np.where(finite & np.isinf(r), -_sign_of(r), 0).astype(np.int8)


def add(a, b, mode: str, dtype) -> np.ndarray:
    """a + b in `dtype` rounded by `mode`."""
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        a, b = _lanes(a, b, dtype=dtype)
        if mode == "rn":
            return a + b
        r, e = _sorted_two_sum(a, b)
        sign = np.where(np.isfinite(r), _sign_of(e), _overflow_sign(r, a, b))
        return _minus_zero(nudge(r, sign, mode), sign, a, b, mode)


def mul(a, b, mode: str, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        a, b = _lanes(a, b, dtype=dtype)
        r = a * b
        if mode == "rn":
            return r
        if dtype == _F32:
            sign = _sign_of(a.astype(_F64) * b.astype(_F64) - r.astype(_F64))  # exact product in f64
        else:
            sign = _sign_of(_two_prod(a, b, r))
            slow = ~((np.abs(a) < _BIG) & (np.abs(b) < _BIG) & ((np.abs(r) > _TINY) | (a == 0) | (b == 0)))
            slow &= np.isfinite(r) & np.isfinite(a) & np.isfinite(b)
            if slow.any():
                sign = np.where(slow, _exact_sign("mul", r, a, b, None, slow), sign)
        sign = np.where(np.isfinite(r), sign, _overflow_sign(r, a, b))
        return nudge(r, sign, mode)


def fma(a, b, c, mode: str, dtype, out=None) -> np.ndarray:
    """a * b + c rounded once by `mode`; into `out` when given."""
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        a, b, c = _lanes(a, b, c, dtype=dtype)
        if mode == "rn":
            return fma_rn(a, b, c, dtype, out)
        if out is not None:
            return put(fma(a, b, c, mode, dtype), out)
        r = fma_rn(a, b, c, dtype)
        if dtype == _F32:
            s, e = _two_sum(a.astype(_F64) * b.astype(_F64), c.astype(_F64))
            sign = _sign_of((s - r.astype(_F64)) + e)  # s - r is exact (Sterbenz): r is s rounded to f32
        else:
            finite = np.isfinite(r) & np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
            sign = _exact_sign("fma", r, a, b, c, finite)
        sign = np.where(np.isfinite(r), sign, _overflow_sign(r, a, b, c))
        prod = a * b  # its sign and whether it is zero: the first addend of IEEE's zero rules
        prod = np.where((a == 0) | (b == 0), prod, np.copysign(1.0, prod).astype(dtype))
        return _minus_zero(nudge(r, sign, mode), sign, prod, c, mode)


def div(a, b, mode: str, dtype) -> np.ndarray:
    """a / b rounded by `mode` (rcp: a = 1)."""
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        a, b = _lanes(a, b, dtype=dtype)
        r = a / b
        if mode == "rn":
            return r
        ok = np.isfinite(r) & np.isfinite(a) & np.isfinite(b) & (b != 0)
        if dtype == _F32:
            rem = a.astype(_F64) - r.astype(_F64) * b.astype(_F64)  # r * b exact in f64
        else:
            rem = fma_rn(-r, b, a)  # rounded once: its sign is the exact remainder's
        sign = np.where(ok, _sign_of(rem) * _sign_of(b), 0)
        slow = ok & (rem == 0) & (np.abs(a) < _TINY)  # a remainder below the subnormals rounds to 0
        if slow.any():
            sign = np.where(slow, _exact_sign("div", r, a, b, None, slow), sign)
        sign = np.where(np.isfinite(r), sign, np.where(b != 0, _overflow_sign(r, a, b), 0))
        return nudge(r, sign.astype(np.int8), mode)


def sqrt(a, mode: str, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        (a,) = _lanes(a, dtype=dtype)
        r = np.sqrt(a)
        if mode == "rn":
            return r
        ok = np.isfinite(r) & (a > 0)
        if dtype == _F32:
            rem = a.astype(_F64) - r.astype(_F64) * r.astype(_F64)
        else:
            rem = fma_rn(-r, r, a)
        sign = np.where(ok, _sign_of(rem), 0).astype(np.int8)
        slow = ok & (rem == 0) & (a < _TINY)
        if slow.any():
            sign = np.where(slow, _exact_sign("sqrt", r, a, a, None, slow), sign)
        return nudge(r, sign, mode)


# ---- PTX's f64 approximations ---------------------------------------------------------------------------


def rsqrt_f64(a) -> np.ndarray:
    """rsqrt.approx.f64: 1 / sqrt(a) rounded to nearest (PTX states no bound for this form, which ptxas
    expands in software; the CUDA C Programming Guide gives rsqrt() of a double, which is this instruction,
    1 ulp). 1/np.sqrt rounds twice; the nearest of it and its two neighbours is chosen by the residual
    1 - a y^2, computed to about 2^-100 with Dekker's product on a scaled to [1, 4)."""
    with np.errstate(all="ignore"):
        a = np.asarray(a, _F64)
        y0 = 1.0 / np.sqrt(a)
        ok = np.isfinite(y0) & (a > 0) & np.isfinite(a)
        if not ok.any():
            return y0
        _m, e = np.frexp(np.where(ok, a, 1.0))
        k = (e - 1) // 2  # a = 4^k a', a' in [1, 4): y = 2^-k / sqrt(a')
        s = np.ldexp(np.where(ok, a, 1.0), -2 * k)
        y = 1.0 / np.sqrt(s)
        best, err = y, None
        for cand in (np.nextafter(y, 0.0), y, np.nextafter(y, np.inf)):
            ph = cand * cand
            pl = _two_prod(cand, cand, ph)
            qh = s * ph
            ql = _two_prod(s, ph, qh)
            r = np.abs(((1.0 - qh) - ql) - s * pl)
            if err is None:
                best, err = cand, r
            else:
                better = r < err
                best, err = np.where(better, cand, best), np.where(better, r, err)
        return np.where(ok, np.ldexp(best, -k), y0)


def _gross(x, f) -> np.ndarray:
    """PTX's rcp.approx.ftz.f64 / rsqrt.approx.ftz.f64 (PTX ISA 9.7.3.14, 9.7.3.17): f of the operand's upper
    32 bits (1.11.20: its low word ignored, a subnormal flushed to a zero of its sign), rounded to nearest-even
    in the same 1.11.20 format (the result's low word zero, a subnormal result flushed), NaN the canonical
    0x7fffffff00000000."""
    with np.errstate(all="ignore"):
        bits = np.asarray(x, _F64).view(np.uint64) & np.uint64(0xFFFFFFFF00000000)
        v = bits.view(_F64)
        v = np.where(np.abs(v) < 2.0**-1022, np.copysign(0.0, v), v)  # (ftz; NaN compares false)
        u = np.asarray(f(v), _F64).view(np.uint64)
        low = u & np.uint64(0xFFFFFFFF)
        base = u - low
        half = np.uint64(0x80000000)
        up = (low > half) | ((low == half) & ((base >> np.uint64(32)) & np.uint64(1) == 1))
        r = (base + up.astype(np.uint64) * np.uint64(1 << 32)).view(_F64)
        r = np.where(np.abs(r) < 2.0**-1022, np.copysign(0.0, r), r)
        return np.where(np.isnan(r), np.uint64(0x7FFFFFFF00000000).view(_F64), r)


def rcp_gross_f64(a) -> np.ndarray:
    return _gross(a, lambda v: 1.0 / v)


def rsqrt_gross_f64(a) -> np.ndarray:
    return _gross(a, lambda v: 1.0 / np.sqrt(v))
