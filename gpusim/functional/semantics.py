"""What each ALU opcode computes, on numpy arrays of lanes. Pure functions: (instruction, operand
arrays) -> result array of the destination's type. Integer arithmetic wraps as on the GPU; f32 is
computed in float32 (no silent float64 promotion) except where noted. Rounding modes other than numpy's
nearest-even, the fused multiply-add and PTX's f64 approximations come from `ieee.py`."""

from __future__ import annotations

import numpy as np

from gpusim.functional import ieee
from gpusim.functional.lanes import put
from gpusim.isa import floats
from gpusim.isa.program import Instruction
from gpusim.isa.types import TYPES, widened


def _u(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{dt.itemsize}")


def _trunc_divmod(a: np.ndarray, b: np.ndarray, signed: bool, dt: np.dtype):
    """Quotient rounded toward zero and remainder with the sign of a; x/0 -> all ones, x%0 -> x."""
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    if signed:
        wide = np.int64
        a64, b64 = a.astype(wide), np.where(zero, 1, b).astype(wide)
        with np.errstate(over="ignore"):
            q = a64 // b64
            r = a64 - q * b64
            fix = (r != 0) & ((a64 < 0) != (b64 < 0))
            q = q + fix
            r = r - fix * b64
        q = np.where(zero, -1, q).astype(dt)
        r = np.where(zero, a64, r).astype(dt)
        return q, r
    safe = np.where(zero, 1, b).astype(dt)
    q = np.where(zero, np.iinfo(dt).max, a // safe).astype(dt)
    r = np.where(zero, a, a % safe).astype(dt)
    return q, r


def _mul_hi(a, b, dt: np.dtype):
    bits = dt.itemsize * 8
    if bits <= 32:
        w = np.int64 if dt.kind == "i" else np.uint64
        return ((np.asarray(a).astype(w) * np.asarray(b).astype(w)) >> bits).astype(dt)
    prod = (np.asarray(a).astype(object) * np.asarray(b).astype(object)) >> 64
    return np.asarray(prod).astype(np.int64 if dt.kind == "i" else np.uint64).astype(dt)


def _shift(a, n, dt: np.dtype, left: bool, out=None):
    bits = dt.itemsize * 8
    if np.ndim(n) == 0 and 0 <= int(n):  # one count for every lane (an immediate): one shift, no per-lane masks
        k = int(n)
        if k < bits:
            return (np.left_shift if left else np.right_shift)(a, dt.type(k), out=out)
        if left or dt.kind != "i":
            return put(np.zeros_like(a), out)
        return np.right_shift(a, dt.type(bits - 1), out=out)  # (signed: every bit a copy of the sign)
    n = np.asarray(n).astype(np.int64)
    big = n >= bits
    n_c = np.minimum(n, bits - 1).astype(dt)
    if left:
        return put(np.where(big, dt.type(0), np.left_shift(a, n_c)).astype(dt), out)
    if dt.kind == "i":
        return put(np.right_shift(a, np.where(big, bits - 1, n_c).astype(dt)).astype(dt), out)
    return put(np.where(big, dt.type(0), np.right_shift(a, n_c)).astype(dt), out)


def _into(dtype):
    """Marks an ALU function that takes `out=`, an array of `dtype` (its result's) to compute into."""
    def mark(f):
        f.into = np.dtype(dtype)
        return f
    return mark


def _compare(cmp: str, a, b, t, out=None):
    if cmp in ("lo", "ls", "hi", "hs"):  # unsigned comparisons of the same bits
        a = np.asarray(a, dtype=t.dtype).view(_u(t.dtype))
        b = np.asarray(b, dtype=t.dtype).view(_u(t.dtype))
        cmp = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}[cmp]
    if t.is_float:
        nan = np.isnan(a) | np.isnan(b)
        if cmp == "num":
            return put(~nan, out)
        if cmp == "nan":
            return put(nan, out)
        if cmp.endswith("u"):
            return put(_compare(cmp[:-1], a, b, t) | nan, out)
        if cmp == "ne":
            return put((a != b) & ~nan, out)
    ops = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}
    return ops[cmp](a, b, out=out)


def _fminmax(a, b, is_min: bool, dt: np.dtype):
    """Float min/max: NaN loses to a number; -0.0 is below +0.0 (as the GPU's FMNMX; numpy's fmin/fmax
    return either zero, depending on the CPU's SIMD path)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt))
    out = (np.fmin if is_min else np.fmax)(a, b)
    zeros = (a == 0) & (b == 0)
    if zeros.any():
        neg = np.signbit(a) | np.signbit(b) if is_min else np.signbit(a) & np.signbit(b)
        out = np.where(zeros, np.where(neg, dt.type(-0.0), dt.type(0.0)), out)
    return np.asarray(out, dtype=dt)


def _sat01(x, dt: np.dtype):
    """PTX `.sat` on floats: clamp to [0, 1]; NaN gives +0.0."""
    return np.where(np.isnan(x), 0, np.clip(x, 0, 1)).astype(dt)


def _round_float(x: np.ndarray, td, mode: str) -> np.ndarray:
    """Values `x` (float64, exact) rounded to float type `td` by PTX rounding mode rn/rz/rm/rp."""
    if td.name == "bf16":  # through f32: exactly (f32, f16, integer sources), else rounded to odd (f64)
        if x.dtype == np.float32:
            return floats.to_bf16(x, mode)
        # (directed roundings compose: toward zero to f32, then toward zero to bf16, is toward zero once)
        return floats.to_bf16(_to_f32_odd(x) if mode == "rn" else _round_float(x, TYPES["f32"], mode), mode)
    with np.errstate(over="ignore", invalid="ignore"):
        r = x.astype(td.dtype)  # round to nearest even
        if mode == "rn":
            return r
        back = r.astype(np.float64)
        if mode == "rz":
            fix = np.abs(back) > np.abs(x)
            toward = np.zeros_like(r)
        elif mode == "rm":
            fix = back > x
            toward = np.full_like(r, -np.inf)
        else:  # rp
            fix = back < x
            toward = np.full_like(r, np.inf)
        return np.where(fix, np.nextafter(r, toward), r).astype(td.dtype)


def _cvt_packed(ins: Instruction, a, b):
    """cvt.rn/.rz.f16x2/.bf16x2.f32 d, a, b: d = {b rounded (low half), a rounded (high half)}."""
    half = TYPES["f16" if ins.types[0] == "f16x2" else "bf16"]
    mode = "rz" if "rz" in ins.quals else "rn"

    def bits(x):
        x = np.asarray(x, np.float32)
        r = _round_float(x if half.name == "bf16" else x.astype(np.float64), half, mode)
        return np.asarray(r).view(np.uint16).astype(np.uint32)

    return bits(b) | (bits(a) << np.uint32(16))


def _saturate64(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Integral float64 values clipped to [min, 2^63] (or [0, 2^64]) as a 64-bit integer type: the top,
    which no such integer holds, is the type's maximum."""
    big = x >= (2.0**64 if dt.kind == "u" else 2.0**63)
    return np.where(big, np.iinfo(dt).max, np.where(big, 0.0, x).astype(dt)).astype(dt)


def _round_int64(a: np.ndarray, dt: np.dtype, mode: str) -> np.ndarray:
    """64-bit integers to f32/f64 rounded by .rz/.rm/.rp: numpy's cast (nearest-even), moved one step where
    the mode rounds the other way; the integer is compared with the (integral) result exactly."""
    r = a.astype(dt)
    rf = r.astype(np.float64)
    big = rf >= (2.0**64 if a.dtype.kind == "u" else 2.0**63)  # above every integer of the type
    ri = np.where(big, 0.0, rf).astype(a.dtype)
    sign = np.where(big, -1, (a > ri).astype(np.int8) - (a < ri).astype(np.int8)).astype(np.int8)
    return ieee.nudge(r, sign, mode)


def _to_f32_odd(x: np.ndarray) -> np.ndarray:
    """float64 values rounded to float32 to odd (an inexact result takes the neighbour with an odd last bit):
    then rounding that to fewer bits (bf16) rounds the f64 value once, not twice."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = x.astype(np.float32)
        move = (r.astype(np.float64) != x) & ((r.view(np.uint32) & 1) == 0) & np.isfinite(r)
        return np.where(move, np.nextafter(r, np.where(x > r, np.float32(np.inf), np.float32(-np.inf))), r)


def _cvt(ins: Instruction, a):
    td, ts = TYPES[ins.types[0]], TYPES[ins.types[1]]
    a = np.asarray(a)
    if ts.is_int and a.dtype != ts.dtype:
        a = a.astype(ts.dtype)  # sub-word source: truncate the register first
    if ts.name == "bf16":  # decode the pattern: every other case then reads f32 values
        a, ts = floats.from_bf16(a), TYPES["f32"]
    if td.name == "tf32":
        return floats.to_tf32(a, "rna")
    if td.is_int and ts.is_float:
        mode = next((q for q in ins.quals if q.endswith("i")), "rzi")
        x = a.astype(np.float64)
        x = {"rzi": np.trunc, "rni": np.rint, "rmi": np.floor, "rpi": np.ceil}[mode](x)
        info = np.iinfo(td.dtype)
        x = np.where(np.isnan(x), 0.0, np.clip(x, float(info.min), float(info.max)))
        if td.bits == 64:  # float(info.max) is 2^64 (2^63): no 64-bit integer, so that end saturates apart
            return _saturate64(x, td.dtype)
        return x.astype(np.int64).astype(td.dtype)
    if ts.is_int and td.is_int and "sat" in ins.quals:
        info = np.iinfo(td.dtype)
        return np.clip(a.astype(object if td.bits == 64 else np.int64), info.min, info.max).astype(td.dtype)
    mode = next((q for q in ins.quals if q.endswith("i")), "")
    if ts.is_float and td.is_float and mode:  # cvt.rni.f32.f32: round to an integral value
        a = {"rzi": np.trunc, "rni": np.rint, "rmi": np.floor, "rpi": np.ceil}[mode](a)
    rnd = next((q for q in ins.quals if q in ("rn", "rz", "rm", "rp")), "rn")
    if ts.is_int and ts.bits == 64 and td.name in ("f32", "f64") and rnd != "rn":
        return _round_int64(a, td.dtype, rnd)
    if td.is_float and (td.name == "bf16" or (rnd != "rn" and (ts.is_int or td.bits < ts.bits))):
        x = a.astype(np.float64) if not (td.name == "bf16" and a.dtype == np.float32) else a
        if "sat" in ins.quals:
            x = _sat01(x, x.dtype)
        return _round_float(x, td, rnd)
    out = a.astype(td.dtype)
    if "sat" in ins.quals and td.is_float:
        out = _sat01(out, td.dtype)
    return out


def add3(dt: np.dtype):
    """`add3`: a + b + c, wrapping in the instruction's integer type (SASS's IADD3)."""
    return lambda a, b, c: np.add(np.add(a, b, dtype=dt), c, dtype=dt)


def _mode(ins: Instruction) -> str:
    """The instruction's IEEE rounding mode (.rn when it names none)."""
    return next((q for q in ins.quals if q in ieee.MODES), "rn")


def _testp(test: str, dt: np.dtype):
    """testp.TEST: PTX ISA 9.7.3.1 (zeros count as normal numbers)."""
    tiny = np.finfo(dt).tiny

    def f(a):
        a = np.asarray(a, dtype=dt)
        if test == "finite":
            return np.isfinite(a)
        if test == "infinite":
            return np.isinf(a)
        if test == "number":
            return ~np.isnan(a)
        if test == "notanumber":
            return np.isnan(a)
        small = np.abs(a) < tiny
        if test == "normal":
            return np.isfinite(a) & (~small | (a == 0))
        return small & (a != 0)  # subnormal
    return f


def _float_alu(ins: Instruction, op: str, dt: np.dtype):
    """f32/f64 arithmetic that numpy does not round as PTX says: directed rounding (.rz .rm .rp), the fused
    multiply-add, f64 division and square roots by every mode, PTX's f64 approximations, copysign, testp.
    None for what the rest of `alu` computes."""
    mode, f64 = _mode(ins), dt == np.float64
    if op in ("mad", "fma"):
        return _into(dt)(lambda a, b, c, out=None: ieee.fma(a, b, c, mode, dt, out=out))
    if op == "copysign":  # copysign d, a, b: b's magnitude, a's sign
        return lambda a, b: np.copysign(np.asarray(b, dtype=dt), np.asarray(a, dtype=dt))
    if op == "testp":
        return _testp(next(q for q in ins.quals if q in ("finite", "infinite", "number", "notanumber", "normal",
                                                            "subnormal")), dt)
    if op == "rsqrt" and f64:
        return ieee.rsqrt_gross_f64 if "ftz" in ins.quals else ieee.rsqrt_f64
    if op == "rcp" and f64 and "ftz" in ins.quals:
        return ieee.rcp_gross_f64
    if "approx" in ins.quals or "full" in ins.quals or mode == "rn":
        return None  # numpy's own rounding is nearest-even
    if op in ("add", "fadd"):
        return lambda a, b: ieee.add(a, b, mode, dt)
    if op == "sub":
        return lambda a, b: ieee.add(a, np.negative(np.asarray(b, dtype=dt)), mode, dt)
    if op in ("mul", "fmul"):
        return lambda a, b: ieee.mul(a, b, mode, dt)
    if op == "div":
        return lambda a, b: ieee.div(a, b, mode, dt)
    if op == "rcp":
        return lambda a: ieee.div(dt.type(1), a, mode, dt)
    if op == "sqrt":
        return lambda a: ieee.sqrt(a, mode, dt)
    return None


# Instructions computed lane by lane in plain numpy, with no lane-by-lane slow path (no exact-rounding fix-ups,
# no division): a step whose guard keeps many of its lanes computes them on every lane and keeps the guarded
# ones' results (WarpScheduler._guarded), the same values as on those lanes alone.
_EVERY_LANE_OPS = frozenset({"mov", "add", "sub", "mul", "shl", "shr", "and", "or", "xor", "not", "setp", "selp",
                             "neg", "min", "max"})


def every_lane_safe(ins: Instruction) -> bool:
    """May the ALU instruction be computed on every lane of a step, its results kept where its guard holds?"""
    op, t = ins.opcode, TYPES[ins.types[0]] if ins.types else None
    if op not in _EVERY_LANE_OPS or t is None or "sat" in ins.quals:
        return False
    if t.name not in ("f32", "f64"):
        return not t.is_float  # (halves and their pairs: converted lane by lane)
    return _float_alu(ins, op, t.dtype) is None


def alu(ins: Instruction):
    """Return f(*sources) -> result for an ALU instruction (everything but memory, control, shfl, vote)."""
    op, t = ins.opcode, TYPES[ins.types[0]] if ins.types else None
    dt = t.dtype if t else None
    if op in ("mov", "cvta"):  # cvta: a global address is its own generic address
        return lambda a: a
    if op == "cvt" and len(ins.srcs) == 2:
        return lambda a, b: _cvt_packed(ins, a, b)
    if op == "cvt":
        return lambda a: _cvt(ins, a)
    if op == "add3":
        return add3(dt)
    if t is not None and t.name in ("f32", "f64") and (g := _float_alu(ins, op, dt)) is not None:
        if "sat" in ins.quals and op in ("add", "fadd", "sub"):
            return lambda a, b: _sat01(g(a, b), dt)
        return g
    if op in ("add", "fadd", "sub"):
        f = np.subtract if op == "sub" else np.add
        if "sat" in ins.quals and t.is_int:  # clamp to the type's range instead of wrapping
            info = np.iinfo(dt)
            return lambda a, b: np.clip(f(a, b, dtype=np.int64), info.min, info.max).astype(dt)
        if "sat" in ins.quals:  # floats: clamp to [0, 1], NaN -> 0
            return lambda a, b: _sat01(f(a, b, dtype=dt), dt)
        return _into(dt)(lambda a, b, out=None: f(a, b, dtype=dt, out=out))
    if op in ("mul", "fmul"):
        if t.is_float:
            return _into(dt)(lambda a, b, out=None: np.multiply(a, b, dtype=dt, out=out))
        if "hi" in ins.quals:
            return lambda a, b: _mul_hi(a, b, dt)
        if "wide" in ins.quals:
            wt = widened(t).dtype
            return _into(wt)(lambda a, b, out=None: np.multiply(np.asarray(a).astype(wt), np.asarray(b).astype(wt),
                                                                dtype=wt, out=out))
        return _into(dt)(lambda a, b, out=None: np.multiply(a, b, dtype=dt, out=out))
    if op in ("mad", "fma"):
        if t.is_float:
            if t.bits == 64:
                return lambda a, b, c: np.asarray(np.multiply(a, b, dtype=dt) + c, dtype=dt)
            return lambda a, b, c: (np.multiply(a, b, dtype=np.float64) + c).astype(dt)
        if "hi" in ins.quals:
            return lambda a, b, c: np.add(_mul_hi(a, b, dt), c, dtype=dt)
        if "wide" in ins.quals:
            wt = widened(t).dtype
            return _into(wt)(lambda a, b, c, out=None: np.add(
                np.multiply(np.asarray(a).astype(wt), np.asarray(b).astype(wt), dtype=wt), c, dtype=wt, out=out))
        return _into(dt)(lambda a, b, c, out=None: np.add(np.multiply(a, b, dtype=dt), c, dtype=dt, out=out))
    if op in ("div", "rem"):
        if t.is_float:
            return lambda a, b: np.divide(a, b, dtype=dt)
        k = 0 if op == "div" else 1
        return lambda a, b: _trunc_divmod(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), t.kind == "s", dt)[k]
    if op in ("min", "max") and t.is_float:
        return lambda a, b: _fminmax(a, b, op == "min", dt)
    if op in ("min", "max"):
        f = {"min": np.minimum, "max": np.maximum}[op]
        return lambda a, b: np.asarray(f(a, b), dtype=dt)
    if op == "abs":
        return lambda a: np.abs(a).astype(dt, copy=False)
    if op == "neg":
        return lambda a: np.negative(a).astype(dt, copy=False)
    if op in ("and", "or", "xor"):
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        return _into(dt)(lambda a, b, out=None: f(a, b, dtype=dt, out=out))
    if op == "not":
        if t.kind == "pred":
            return lambda a: np.logical_not(a)
        return lambda a: np.invert(np.asarray(a, dtype=dt))
    if op in ("shl", "shr"):
        return _into(dt)(lambda a, n, out=None: _shift(np.asarray(a, dtype=dt), n, dt, op == "shl", out))
    if op == "popc":
        # count the bits of the pattern: numpy counts those of |a| for signed types
        return lambda a: np.bitwise_count(np.asarray(a, dtype=dt).view(_u(dt))).astype(dt)
    if op == "setp":
        cmp = next(q for q in ins.quals if q not in ("and", "or", "xor"))
        boolop = next((q for q in ins.quals if q in ("and", "or", "xor")), None)
        if boolop is not None:  # setp.CMP.BOOL p, a, b, q: p = (a CMP b) BOOL q
            f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[boolop]
            return lambda a, b, q: f(_compare(cmp, a, b, t), q)
        return _into(bool)(lambda a, b, out=None: _compare(cmp, a, b, t, out))
    if op == "selp":
        return lambda a, b, p: np.where(p, a, b).astype(dt, copy=False)
    if op == "rcp":
        return lambda a: np.divide(dt.type(1), a, dtype=dt)
    if op == "sqrt":
        return lambda a: np.sqrt(a, dtype=dt)
    if op == "rsqrt":
        return lambda a: np.divide(dt.type(1), np.sqrt(a, dtype=dt), dtype=dt)
    if op in ("sin", "cos", "ex2", "lg2"):
        f = {"sin": np.sin, "cos": np.cos, "ex2": np.exp2, "lg2": np.log2}[op]
        return lambda a: f(np.asarray(a, dtype=dt), dtype=dt)
    raise NotImplementedError(f"no semantics for {ins.mnemonic}")
