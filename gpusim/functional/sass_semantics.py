"""What SASS instructions compute, as numpy functions over lanes (uint32 bit patterns in, uint32 out), kept
apart from the decoder so that each can be checked against an independent model (tests/functional/
test_sass_semantics.py). Facts on the operations (LOP3's truth table, IADD3's carries, SHF's funnel, LEA,
PRMT, the compare combinators) are from NVIDIA's CUDA Binary Utilities instruction list and the public
CuAssembler/maxas notes; the code is gpusim's own.

Floats: f32 results are rounded once from an exact intermediate (a float64 product of two f32 is exact; a
sum's rounding error is carried by TwoSum), in the instruction's rounding mode (.RN default, .RZ, .RM,
.RP); .FTZ flushes subnormal inputs and results to a signed zero."""

from __future__ import annotations

import numpy as np

M32 = np.uint64(0xFFFFFFFF)
U32, U64, F32, F64 = np.uint32, np.uint64, np.float32, np.float64
TINY32 = np.float32(2.0 ** -126)


def u64(x) -> np.ndarray:
    return np.asarray(x).astype(U64)


def lop3(a, b, c, lut: int) -> np.ndarray:
    """Bit i of the result is bit (a_i << 2 | b_i << 1 | c_i) of the 8-bit table `lut` (so 0xF0 is a,
    0xCC is b, 0xAA is c)."""
    a, b, c = (np.asarray(v, dtype=U32) for v in (a, b, c))
    out = np.zeros(np.broadcast(a, b, c).shape, dtype=U32)
    for k in range(8):
        if lut >> k & 1:
            out |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c)
    return out


def plop3(a, b, c, lut: int) -> np.ndarray:
    """The predicate form of lop3 (booleans)."""
    a, b, c = (np.asarray(v, dtype=bool) for v in (a, b, c))
    out = np.zeros(np.broadcast(a, b, c).shape, dtype=bool)
    for k in range(8):
        if lut >> k & 1:
            out |= (a if k & 4 else ~a) & (b if k & 2 else ~b) & (c if k & 1 else ~c)
    return out


def add_terms(terms, carry_in=0):
    """Sum of 33-bit terms (uint64 arrays) and carry-ins -> (the low 32 bits, sum >= 2**32, sum >= 2**33)."""
    s = np.zeros((), dtype=U64)
    for t in terms:
        s = s + u64(t)
    s = s + u64(carry_in)
    return (s & M32).astype(U32), s >= U64(1 << 32), s >= U64(1 << 33)


def int_term(x, neg: bool = False, inv: bool = False) -> np.ndarray:
    """An IADD3/LEA source as the 33-bit term it adds: -x adds ~x + 1 (so that a subtraction carries as
    a borrow-free add does), ~x adds ~x."""
    x = np.asarray(x, dtype=U32)
    if neg:
        return u64(~x) + U64(1)
    if inv:
        return u64(~x)
    return u64(x)


def shf(a, s, c, left: bool, hi: bool, signed: bool, wide: bool) -> np.ndarray:
    """Funnel shift of the 64-bit (c:a) by s (clamped: s >= 64 shifts everything out; .U32/.S32 clamp at 32)
    -> its low word, or its high word with .HI. Right shifts of an .S type fill with c's sign."""
    a, c = u64(np.asarray(a, dtype=U32)), np.asarray(c, dtype=U32)
    s = np.minimum(u64(np.asarray(s, dtype=U32)), U64(64 if wide else 32))
    v = (u64(c) << U64(32)) | a
    if left:
        r = np.where(s >= 64, U64(0), v << np.minimum(s, U64(63)))
    elif signed:
        sv = np.asarray(v).view(np.int64)
        r = (sv >> np.minimum(s, U64(63)).astype(np.int64)).view(U64)
    else:
        r = np.where(s >= 64, U64(0), v >> np.minimum(s, U64(63)))
    return ((r >> U64(32)) if hi else (r & M32)).astype(U32)


def prmt(a, b, sel) -> np.ndarray:
    """Byte permute (default mode): result byte i = byte (sel >> 4i) & 7 of the 8 bytes (b:a), its sign
    replicated when bit 3 of the selector nibble is set."""
    a, b, sel = u64(np.asarray(a, dtype=U32)), u64(np.asarray(b, dtype=U32)), u64(np.asarray(sel, dtype=U32))
    src = (b << U64(32)) | a
    out = np.zeros(np.broadcast(a, b, sel).shape, dtype=U64)
    for i in range(4):
        nib = (sel >> U64(4 * i)) & U64(0xF)
        byte = (src >> ((nib & U64(7)) * U64(8))) & U64(0xFF)
        byte = np.where(nib & U64(8), np.where(byte & U64(0x80), U64(0xFF), U64(0)), byte)
        out |= byte << U64(8 * i)
    return out.astype(U32)


def compare(a, b, cmp: str) -> np.ndarray:
    """Integer or float comparison; for floats the *U forms are also true when either is NaN."""
    if cmp == "F":
        return np.zeros(np.broadcast(a, b).shape, bool)
    if cmp == "T":
        return np.ones(np.broadcast(a, b).shape, bool)
    unordered = cmp.endswith("U") and cmp not in ("NUM",)
    base = cmp[:-1] if unordered else cmp
    if base == "NUM":
        return ~(np.isnan(a) | np.isnan(b))
    if base == "NAN":
        return np.isnan(a) | np.isnan(b)
    r = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
         "GE": np.greater_equal}[base](a, b)
    if np.asarray(a).dtype.kind == "f":
        nan = np.isnan(a) | np.isnan(b)
        if unordered:
            r = r | nan
        elif base == "NE":
            r = r & ~nan
    return r


def combine(r, c, op: str) -> np.ndarray:
    return {"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}[op](r, c)


def ftz(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=F32)
    return np.where(np.abs(x) < TINY32, np.copysign(F32(0), x), x).astype(F32)


def two_sum(a, b):
    """s = fl(a + b) and the exact error e (a + b = s + e), float64."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def round_f32(s, e, mode: str) -> np.ndarray:
    """The float32 nearest to s + e (float64 value and its exact remainder) in `mode` (RN ties to even)."""
    s, e = np.asarray(s, dtype=F64), np.asarray(e, dtype=F64)
    r = s.astype(F32)
    d = r.astype(F64) - s  # (exact: r and s are within a factor 2 where both are finite)
    with np.errstate(invalid="ignore"):
        above = d > e  # r > s + e
        below = d < e
        if mode == "RN":
            # a tie of s between two floats broken by the sign of e (s + e is not the tie)
            other = np.where(d > 0, np.nextafter(r, F32(-np.inf)), np.nextafter(r, F32(np.inf)))
            tie = (np.abs(d) == np.abs(other.astype(F64) - s)) & (e != 0) & np.isfinite(s)
            up = other.astype(F64) > r.astype(F64)
            pick_other = tie & ((up & (e > 0)) | (~up & (e < 0)))
            return np.where(pick_other, other, r).astype(F32)
        if mode == "RZ":
            toward = (np.abs(r.astype(F64)) > np.abs(s)) | ((r.astype(F64) == s) & (np.sign(e) == -np.sign(s)))
            return np.where(toward & (r != 0) & np.isfinite(s), np.nextafter(r, F32(0)), r).astype(F32)
        if mode == "RM":
            return np.where(above & np.isfinite(s), np.nextafter(r, F32(-np.inf)), r).astype(F32)
        if mode == "RP":
            return np.where(below & np.isfinite(s), np.nextafter(r, F32(np.inf)), r).astype(F32)
    raise ValueError(mode)


def fadd(a, b, mode="RN") -> np.ndarray:
    s, e = two_sum(np.asarray(a, F32).astype(F64), np.asarray(b, F32).astype(F64))
    return round_f32(s, e, mode)


def fmul(a, b, mode="RN") -> np.ndarray:
    p = np.asarray(a, F32).astype(F64) * np.asarray(b, F32).astype(F64)  # exact (24 + 24 bits)
    return round_f32(p, np.zeros_like(p), mode)


def ffma(a, b, c, mode="RN") -> np.ndarray:
    p = np.asarray(a, F32).astype(F64) * np.asarray(b, F32).astype(F64)
    s, e = two_sum(p, np.asarray(c, F32).astype(F64))
    return round_f32(s, e, mode)


def fminmax(a, b, is_min) -> np.ndarray:
    """IEEE minNum/maxNum: a NaN loses to a number; -0 < +0."""
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    with np.errstate(invalid="ignore"):
        lt = (a < b) | ((a == b) & np.signbit(a) & ~np.signbit(b))
        pick_a = np.where(is_min, lt, ~lt & (a != b) | ((a == b) & ~np.signbit(a)))
        r = np.where(pick_a, a, b)
        r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, r))
    return r.astype(F32)


INT_RANGE = {"U32": (0, 2**32 - 1), "S32": (-2**31, 2**31 - 1), "U64": (0, 2**64 - 1), "S64": (-2**63, 2**63 - 1),
             "U16": (0, 65535), "S16": (-32768, 32767), "U8": (0, 255), "S8": (-128, 127)}


def f2i(x, to: str, rnd: str) -> np.ndarray:
    """Float -> integer `to` (U32, S32, U64, S64 ...), rounding TRUNC/FLOOR/CEIL/RN (even), saturating, NaN -> 0;
    the integer's bits as uint64."""
    x = np.asarray(x, dtype=F64)
    r = {"TRUNC": np.trunc, "FLOOR": np.floor, "CEIL": np.ceil, "RN": np.rint}[rnd](x)
    lo, hi = INT_RANGE[to]
    with np.errstate(invalid="ignore"):
        r = np.where(np.isnan(r), 0.0, np.clip(r, lo, hi))
    if to.startswith("U"):
        big = r >= 2.0 ** 63
        out = np.where(big, (r - 2.0 ** 63).astype(np.int64).astype(U64) + U64(1 << 63), r.astype(np.int64).astype(U64))
        return np.where(r >= float(hi), U64(hi), out).astype(U64)
    out = np.where(r >= float(hi), np.int64(hi), r.astype(np.int64))
    return out.view(U64) if isinstance(out, np.ndarray) else np.int64(out).view(U64)


def i2f32(v: np.ndarray, mode: str) -> np.ndarray:
    """Exact integers (int64/uint64 arrays, or float64 holding them exactly) -> float32 in `mode`."""
    v = np.asarray(v)
    if v.dtype == U64:
        s = v.astype(F64)
        e = (v - np.minimum(s, 2.0 ** 64 - 1).astype(U64)).astype(np.int64).astype(F64)
    elif v.dtype == np.int64:
        s = v.astype(F64)
        e = (v - s.astype(np.int64)).astype(F64)
    else:
        s, e = v.astype(F64), np.zeros(v.shape)
    return round_f32(s, e, mode)


def f16_pair(bits) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) halves of 32-bit words as float16."""
    bits = np.asarray(bits, dtype=U32)
    return (bits & U32(0xFFFF)).astype(np.uint16).view(np.float16), (bits >> U32(16)).astype(np.uint16).view(np.float16)


def pack_f16(lo, hi) -> np.ndarray:
    lo = np.asarray(lo, dtype=np.float16).view(np.uint16).astype(U32)
    hi = np.asarray(hi, dtype=np.float16).view(np.uint16).astype(U32)
    return (lo | (hi << U32(16))).astype(U32)


def mufu(func: str, x) -> np.ndarray:
    """The SFU's functions on f32 (SIN/COS take the angle in turns: ptxas multiplies radians by 1/(2 pi) first)."""
    x = np.asarray(x, dtype=F32)
    with np.errstate(all="ignore"):
        if func == "RCP":
            return (F32(1) / x).astype(F32)
        if func == "RSQ":
            return (F32(1) / np.sqrt(x)).astype(F32)
        if func == "SQRT":
            return np.sqrt(x).astype(F32)
        if func == "EX2":
            return ftz(np.exp2(x.astype(F64)).astype(F32))
        if func == "LG2":
            return np.log2(x.astype(F64)).astype(F32)
        if func == "SIN":
            return np.sin(2 * np.pi * x.astype(F64)).astype(F32)
        if func == "COS":
            return np.cos(2 * np.pi * x.astype(F64)).astype(F32)
        if func == "TANH":
            return np.tanh(x.astype(F64)).astype(F32)
    raise ValueError(func)


def mufu64h(func: str, hi_word) -> np.ndarray:
    """RCP64H / RSQ64H: the high word of an approximate 1/x or 1/sqrt(x) of the double whose high word is given."""
    x = (u64(np.asarray(hi_word, dtype=U32)) << U64(32)).view(F64)
    with np.errstate(all="ignore"):
        r = 1.0 / x if func == "RCP64H" else 1.0 / np.sqrt(x)
    return (np.asarray(r, dtype=F64).view(U64) >> U64(32)).astype(U32)
