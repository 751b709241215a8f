"""A small numpy interpreter for straight-line `.sasm` ALU code over `.u32`, `.s32`, `.f32` and `.pred`
registers, written from the PTX ISA and gpusim's documented conventions (docs/isa.md, docs/architecture.md
"Conventions"), independently of gpusim's own semantics.

Integer registers hold 32-bit patterns (`np.uint32`); an instruction reads them as its type says.
Where PTX leaves a result unspecified (the sign of a zero that `.sat` clamps), the lane's result is
marked unknown and every value computed from it is not compared."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

MASK = 0xFFFFFFFF
F32 = np.float32
SUBWORD = {"u8": (8, False), "s8": (8, True), "u16": (16, False), "s16": (16, True)}
INT_RANGE = {"u32": (0, MASK), "s32": (-(1 << 31), (1 << 31) - 1),
             **{t: (-(1 << (b - 1)), (1 << (b - 1)) - 1) if s else (0, (1 << b) - 1)
                for t, (b, s) in SUBWORD.items()}}


@dataclass(frozen=True)
class Op:
    """One instruction: `[@[!]guard] opcode.quals.types dst, srcs` (a src is a register, `!%p`, or a literal)."""

    opcode: str
    quals: tuple[str, ...]
    types: tuple[str, ...]
    dst: str
    srcs: tuple[str, ...]
    guard: str = ""

    @property
    def text(self) -> str:
        mnem = ".".join((self.opcode, *self.quals, *self.types))
        return f"{self.guard + ' ' if self.guard else ''}{mnem} {', '.join((self.dst, *self.srcs))}"



def fused_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to f32, lane by lane: the exact sum as a Fraction, then the f32 nearest to it
    (ties to even) among the cast of its nearest double and that value's two neighbours."""
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
        out = p.astype(F32)
        for i in range(out.size):
            if not np.isfinite(p[i]) or not np.isfinite(out[i]):
                continue  # infinities and NaN: the double sum already is the answer (|a b| < 2^256)
            v = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
            if v == 0:
                continue
            r = out[i]
            cands = [np.nextafter(r, F32(-np.inf)), r, np.nextafter(r, F32(np.inf))]
            cands = [x for x in cands if np.isfinite(x)]
            out[i] = min(cands, key=lambda x: (abs(Fraction(float(x)) - v), int(x.view(np.uint32)) & 1))
        return out

def signed(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32).view(np.int32).astype(np.int64)


def unsigned(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32).astype(np.int64)


def wrap(v: np.ndarray) -> np.ndarray:
    """An integer array (int64) -> its low 32 bits."""
    return (np.asarray(v, dtype=np.int64) & MASK).astype(np.uint32)


def int_value(bits: np.ndarray, t: str) -> np.ndarray:
    """The value a 32-bit register holds as integer type `t` (sub-word: its low bits, extended)."""
    if t in SUBWORD:
        width, is_signed = SUBWORD[t]
        low = unsigned(bits) & ((1 << width) - 1)
        return np.where(is_signed & (low >= 1 << (width - 1)), low - (1 << width), low)
    return signed(bits) if t.startswith("s") else unsigned(bits)


def float_literal(tok: str) -> np.float32:
    if tok[:2] in ("0f", "0F"):
        return np.frombuffer(struct.pack(">I", int(tok[2:], 16)), dtype=">f4")[0].astype(F32)
    return F32(float(tok))


def round_integral(x: np.ndarray, mode: str) -> np.ndarray:
    return {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](x)


def fminmax(a: np.ndarray, b: np.ndarray, is_min: bool) -> np.ndarray:
    """PTX min/max: a NaN loses to a number (NaN only if both are); -0.0 is below +0.0."""
    first = (a < b) if is_min else (a > b)
    out = np.where(first | np.isnan(b), a, b)
    zeros = (a == 0) & (b == 0)
    neg = (np.signbit(a) | np.signbit(b)) if is_min else (np.signbit(a) & np.signbit(b))
    return np.where(zeros, np.where(neg, F32(-0.0), F32(0.0)), out).astype(F32)


def compare(cmp: str, a: np.ndarray, b: np.ndarray, is_float: bool) -> np.ndarray:
    nan = (np.isnan(a) | np.isnan(b)) if is_float else np.zeros(a.shape, bool)
    if cmp == "num":
        return ~nan
    if cmp == "nan":
        return nan
    unordered = is_float and cmp.endswith("u")  # equ neu ltu leu gtu geu: true when either is NaN
    base = cmp[:-1] if unordered else cmp
    base = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}.get(base, base)
    ordered = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[base] & ~nan
    return ordered | nan if unordered else ordered


def saturate01(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Clamp to [0, 1] with NaN -> +0.0 (PTX `.sat` on floats); the sign of a zero is left unknown."""
    out = np.where(np.isnan(x), F32(0.0), np.minimum(np.maximum(x, F32(0.0)), F32(1.0))).astype(F32)
    return out, ~((x == 0) & np.signbit(x))


class Interpreter:
    """Registers by name: `%u*`/`%s*` 32-bit patterns, `%f*` float32, `%p*` bool; `run(ops)` executes."""

    def __init__(self, regs: dict[str, np.ndarray]):
        self.r = {k: v.copy() for k, v in regs.items()}
        self.known = {k: np.ones(v.shape, bool) for k, v in regs.items()}
        self.lanes = next(iter(regs.values())).shape

    def run(self, ops: list[Op]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Execute `ops`; return each one's destination register afterwards, with its known-lanes mask."""
        trace = []
        with np.errstate(all="ignore"):
            for op in ops:
                self.step(op)
                trace.append((self.r[op.dst].copy(), self.known[op.dst].copy()))
        return trace

    # ---- operands
    def src(self, tok: str, kind: str) -> np.ndarray:
        """Operand `tok` as int bits ("i"), float32 ("f") or bool ("p")."""
        if tok.startswith("!"):
            return ~self.r[tok[1:]]
        if tok.startswith("%"):
            return self.r[tok]
        if kind == "f":
            return np.full(self.lanes, float_literal(tok), F32)
        if kind == "p":
            return np.full(self.lanes, tok == "1")
        return np.full(self.lanes, int(tok, 0) & MASK, np.uint32)

    def known_of(self, op: Op) -> np.ndarray:
        k = np.ones(self.lanes, bool)
        for tok in op.srcs:
            if tok.lstrip("!").startswith("%"):
                k &= self.known[tok.lstrip("!")]
        return k

    # ---- execution
    def step(self, op: Op) -> None:
        value, known = self.compute(op)
        known = known & self.known_of(op)
        if op.guard:
            on = self.src(op.guard.lstrip("@"), "p")
            known = np.where(on, known, self.known[op.dst]) & self.known[op.guard.lstrip("@!")]
            value = np.where(on, value, self.r[op.dst])
        old = self.r[op.dst]
        self.r[op.dst] = wrap(value) if old.dtype == np.uint32 else np.asarray(value).astype(old.dtype)
        self.known[op.dst] = known

    def compute(self, op: Op) -> tuple[np.ndarray, np.ndarray]:
        t = op.types[-1]
        everywhere = np.ones(self.lanes, bool)
        if op.opcode == "cvt":
            return self.cvt(op)
        if t == "pred":
            a = [self.src(s, "p") for s in op.srcs]
            return {"and": lambda: a[0] & a[1], "or": lambda: a[0] | a[1], "xor": lambda: a[0] ^ a[1],
                    "not": lambda: ~a[0], "mov": lambda: a[0]}[op.opcode](), everywhere
        if op.opcode == "setp" and t == "f32":
            return compare(op.quals[0], *(self.src(s, "f") for s in op.srcs), True), everywhere
        if op.opcode == "setp":  # lo ls hi hs compare as unsigned whatever the type
            as_type = "u32" if op.quals[0] in ("lo", "ls", "hi", "hs") else t
            return compare(op.quals[0], *(int_value(self.src(s, "i"), as_type) for s in op.srcs), False), everywhere
        if op.opcode == "selp":
            kind = "f" if t == "f32" else "i"
            a, b = self.src(op.srcs[0], kind), self.src(op.srcs[1], kind)
            return np.where(self.src(op.srcs[2], "p"), a, b), everywhere
        if t == "f32":
            return self.float_op(op)
        return self.int_op(op), everywhere

    def int_op(self, op: Op) -> np.ndarray:
        t, q = op.types[0], op.quals
        bits = [self.src(s, "i") for s in op.srcs]
        v = [int_value(x, "u32" if op.opcode in ("shl", "shr") and i == 1 else t) for i, x in enumerate(bits)]
        lo_t, hi_t = INT_RANGE["s32" if t.startswith("s") else "u32"]
        match op.opcode:
            case "mov":
                return v[0]
            case "add" | "sub":
                r = v[0] + v[1] if op.opcode == "add" else v[0] - v[1]
                return np.clip(r, lo_t, hi_t) if "sat" in q else r
            case "mul" | "mad":  # the exact 64-bit product; .hi takes its upper half, .lo (default) the lower
                if t.startswith("s"):
                    prod = v[0] * v[1]
                    part = prod >> 32 if "hi" in q else prod
                else:
                    prod = v[0].astype(np.uint64) * v[1].astype(np.uint64)
                    part = (prod >> np.uint64(32) if "hi" in q else prod & np.uint64(MASK)).astype(np.int64)
                return part + v[2] if op.opcode == "mad" else part
            case "min" | "max":
                return np.minimum(v[0], v[1]) if op.opcode == "min" else np.maximum(v[0], v[1])
            case "and" | "or" | "xor":
                f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op.opcode]
                return f(unsigned(bits[0]), unsigned(bits[1]))
            case "not":
                return ~unsigned(bits[0])
            case "shl":
                return np.where(v[1] >= 32, 0, unsigned(bits[0]) << np.minimum(v[1], 31))
            case "shr":
                if t.startswith("s"):
                    return v[0] >> np.minimum(v[1], 31)
                return np.where(v[1] >= 32, 0, unsigned(bits[0]) >> np.minimum(v[1], 31))
            case "div" | "rem":
                a, b = v
                zero = b == 0
                safe = np.where(zero, 1, b)
                quot = np.abs(a) // np.abs(safe) * np.where((a < 0) != (safe < 0), -1, 1)
                if op.opcode == "div":
                    return np.where(zero, -1, quot)  # x / 0: all ones
                return np.where(zero, a, a - quot * safe)  # x % 0: x
            case "popc":
                x = unsigned(bits[0])
                return sum((x >> i) & 1 for i in range(32))
            case "neg":
                return -v[0]
            case "abs":
                return np.abs(v[0])
        raise NotImplementedError(op.text)

    def float_op(self, op: Op) -> tuple[np.ndarray, np.ndarray]:
        a = [self.src(s, "f") for s in op.srcs]
        everywhere = np.ones(self.lanes, bool)
        match op.opcode:
            case "mov":
                return a[0], everywhere
            case "add" | "sub" | "mul":
                r = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op.opcode](a[0], a[1]).astype(F32)
                return saturate01(r) if "sat" in op.quals else (r, everywhere)
            case "fma" | "mad":  # one rounding of the exact a * b + c (PTX's fused multiply-add)
                return fused_f32(a[0], a[1], a[2]), everywhere
            case "min" | "max":
                return fminmax(a[0], a[1], op.opcode == "min"), everywhere
            case "neg":
                return -a[0], everywhere
            case "abs":
                return np.abs(a[0]), everywhere
            case "div":
                return (a[0] / a[1]).astype(F32), everywhere
            case "rcp":
                return (F32(1) / a[0]).astype(F32), everywhere
            case "sqrt":
                return np.sqrt(a[0]).astype(F32), everywhere
            case "rsqrt":
                return (F32(1) / np.sqrt(a[0])).astype(F32), everywhere
            case "sin" | "cos" | "ex2" | "lg2":  # documented: numpy in the instruction's type
                return {"sin": np.sin, "cos": np.cos, "ex2": np.exp2, "lg2": np.log2}[op.opcode](a[0]), everywhere
        raise NotImplementedError(op.text)

    def cvt(self, op: Op) -> tuple[np.ndarray, np.ndarray]:
        td, ts = op.types
        everywhere = np.ones(self.lanes, bool)
        mode = next((q for q in op.quals if q.endswith("i")), "")
        if ts == "f32":
            x = self.src(op.srcs[0], "f")
            if td == "f32":  # same-size float conversion: .rXi rounds to an integral value, .sat clamps
                r = round_integral(x, mode).astype(F32) if mode else x
                return saturate01(r) if "sat" in op.quals else (r, everywhere)
            lo, hi = INT_RANGE[td]  # float -> integer: round (toward zero by default), NaN -> 0, saturate
            r = round_integral(x.astype(np.float64), mode or "rzi")
            return np.where(np.isnan(r), 0, np.clip(r, lo, hi)).astype(np.int64), everywhere
        v = int_value(self.src(op.srcs[0], "i"), ts)
        if td == "f32":  # integer -> float rounds to nearest even (exact in float64 first)
            r = v.astype(np.float64).astype(F32)
            return saturate01(r) if "sat" in op.quals else (r, everywhere)
        lo, hi = INT_RANGE[td]
        if "sat" in op.quals:
            return np.clip(v, lo, hi), everywhere
        return int_value(wrap(v), td), everywhere  # chop to the destination width, extend by its type
