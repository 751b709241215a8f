"""Property: random straight-line integer and float programs compute, lane by lane, what an independent
numpy interpreter of the same program computes (tests/property/numpy_interp.py).

Each program runs over two warps with per-lane inputs loaded from global memory (every register of
`%u0..3` .u32, `%s0..3` .s32, `%f0..3` .f32, and `%p0..2` .pred from a word != 0); it stores each
instruction's result as it is written and every register at the end, and all of them are compared.
Inputs mix ordinary values with the awkward ones (0, -0.0, MIN, MAX, inf, NaN, subnormals, random bit
patterns). Floats compare bit for bit, except that any NaN equals any NaN."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.isa import assemble

from .numpy_interp import Interpreter, Op
from .profiles import budget

LANES = 64
U, S, F, P = (tuple(f"%{k}{i}" for i in range(n)) for k, n in (("u", 4), ("s", 4), ("f", 4), ("p", 3)))
INTS = U + S
DATA = U + S + F
INT_IMMEDIATES = ("0", "1", "2", "7", "31", "32", "33", "-1", "-7", "0x7fffffff", "0x80000000", "0xffffffff",
                  "12345", "-2147483648")
FLOAT_IMMEDIATES = ("0.0", "-0.0", "1.0", "0.5", "-2.5", "3", "1e-3", "inf", "-inf", "nan", "0f7F7FFFFF", "0f00000001",
                    "0f80800000", "1e30", "16777217")
INT_SPECIAL = np.array([0, 0, 1, 2, 31, 32, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 255, 256, 0x8000, 65535],
                       dtype=np.uint32)
FLOAT_SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan, np.nan, 1e-45, -1e-40,
                          1.17549435e-38, 3.4028235e38, 2147483648.0, -2147483904.0, 4294967296.0, 16777217.0, 255.5,
                          -0.5], dtype=np.float32)
CMP_INT = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
CMP_FLOAT = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")


# Instruction templates: (opcode, qualifiers, types, operands). Operand letters: I/F/P an integer, float or
# predicate destination; i/f an integer or float register or literal; r an integer register (a literal
# would have to fit a sub-word source type); p a predicate source of selp (may be negated with `!`);
# q a predicate register or literal.
Template = tuple[str, tuple[str, ...], tuple[str, ...], str]
ROUNDING = ("rni", "rzi", "rmi", "rpi")
SUBWORD = ("u8", "s8", "u16", "s16")


def _int_templates() -> list[Template]:
    out: list[Template] = []
    for t in ("u32", "s32"):
        out += [(op, (), (t,), "Iii") for op in ("add", "sub", "min", "max", "div", "rem")]
        out += [(op, (half,), (t,), sig) for op, sig in (("mul", "Iii"), ("mad", "Iiii")) for half in ("lo", "hi")]
        out += [("mov", (), (t,), "Ii"), ("shr", (), (t,), "Iii")]
    for t in ("b32", "u32", "s32"):
        out += [(op, (), (t,), "Iii") for op in ("and", "or", "xor", "shl")] + [(op, (), (t,), "Ii") for op in
                                                                                 ("not", "popc")]
    out += [("neg", (), ("s32",), "Ii"), ("abs", (), ("s32",), "Ii"), ("shr", (), ("b32",), "Iii")]
    return out + [(op, ("sat",), ("s32",), "Iii") for op in ("add", "sub")]  # PTX: integer .sat is .s32 only


def _float_templates() -> list[Template]:
    out: list[Template] = [(op, rn, ("f32",), "Fff") for op in ("add", "sub", "mul") for rn in ((), ("rn",))]
    out += [(op, ("sat",), ("f32",), "Fff") for op in ("add", "sub")]
    out += [("fma", ("rn",), ("f32",), "Ffff"), ("mad", ("rn",), ("f32",), "Ffff")]
    out += [(op, (), ("f32",), "Fff") for op in ("min", "max")] + [("div", (q,), ("f32",), "Fff") for q in
                                                                   ("rn", "approx")]
    out += [(op, (), ("f32",), "Ff") for op in ("neg", "abs", "mov")]
    out += [(op, (q,), ("f32",), "Ff") for op in ("sqrt", "rcp") for q in ("rn", "approx")]
    return out + [(op, ("approx",), ("f32",), "Ff") for op in ("rsqrt", "sin", "cos", "ex2", "lg2")]


def _compare_select_templates() -> list[Template]:
    out: list[Template] = [("setp", (c,), (t,), "Pii") for t in ("u32", "s32") for c in CMP_INT]
    out += [("setp", (c,), ("f32",), "Pff") for c in CMP_FLOAT]
    out += [("selp", (), (t,), "Iiip") for t in ("u32", "s32")] + [("selp", (), ("f32",), "Fffp")]
    return out + [(op, (), ("pred",), "Pqq") for op in ("and", "or", "xor")] + [("not", (), ("pred",), "Pq")]


def _cvt_templates() -> list[Template]:
    ints = ("u32", "s32", *SUBWORD)
    out: list[Template] = [("cvt", mode, (td, "f32"), "If") for td in ints for mode in ((), *((m,) for m in ROUNDING))]
    out += [("cvt", ("rn",), ("f32", ts), "Fr") for ts in ints]
    out += [("cvt", (), (td, ts), "Ir") for td in ints for ts in ints]
    return out + [("cvt", (m,), ("f32", "f32"), "Ff") for m in ROUNDING] + [("cvt", ("sat",), ("f32", "f32"), "Ff")]


CATEGORIES = (_int_templates(), _float_templates(), _compare_select_templates(), _cvt_templates())
OPERANDS = {
    "I": st.sampled_from(INTS), "F": st.sampled_from(F), "P": st.sampled_from(P), "r": st.sampled_from(INTS),
    "i": st.one_of(st.sampled_from(INTS), st.sampled_from(INT_IMMEDIATES)),
    "f": st.one_of(st.sampled_from(F), st.sampled_from(FLOAT_IMMEDIATES)),
    "p": st.one_of(st.sampled_from(P), st.sampled_from(P).map(lambda p: "!" + p)),
    "q": st.one_of(st.sampled_from(P), st.sampled_from(["0", "1"])),
}


@st.composite
def instruction(draw) -> Op:
    """A template drawn uniformly from a category drawn uniformly, its operands, maybe `.sat` (cvt) and a guard."""
    opcode, quals, types, sig = draw(st.sampled_from(draw(st.sampled_from(CATEGORIES))))
    if opcode == "cvt" and "sat" not in quals and draw(st.integers(0, 3)) == 0:
        quals = (*quals, "sat")
    dst, *srcs = (draw(OPERANDS[letter]) for letter in sig)
    guard = draw(st.sampled_from(["", "", "", "", "@%p0", "@!%p1", "@%p2"]))
    return Op(opcode, quals, types, dst, tuple(srcs), guard)


def programs() -> st.SearchStrategy[list[Op]]:
    return st.lists(instruction(), min_size=4, max_size=30)


def lane_inputs(seed: int) -> dict[str, np.ndarray]:
    """Per-lane register values: per register, 20%, 50% or 90% of the lanes hold awkward values, the rest
    ordinary values or random bit patterns."""
    rng = np.random.default_rng(seed)
    regs: dict[str, np.ndarray] = {}
    for name in INTS:
        rand = rng.integers(0, 1 << 32, LANES, dtype=np.uint64).astype(np.uint32)
        small = rng.integers(-40, 40, LANES).astype(np.int64).astype(np.uint32)
        regs[name] = np.where(rng.random(LANES) < rng.choice([0.2, 0.5, 0.9]), rng.choice(INT_SPECIAL, LANES),
                              np.where(rng.random(LANES) < 0.5, small, rand)).astype(np.uint32)
    for name in F:
        bits = rng.integers(0, 1 << 32, LANES, dtype=np.uint64).astype(np.uint32).view(np.float32)
        normal = (rng.standard_normal(LANES) * 10.0 ** rng.integers(-3, 4, LANES)).astype(np.float32)
        regs[name] = np.where(rng.random(LANES) < rng.choice([0.2, 0.5, 0.9]), rng.choice(FLOAT_SPECIAL, LANES),
                              np.where(rng.random(LANES) < 0.7, normal, bits)).astype(np.float32)
    for name in P:
        regs[name] = rng.random(LANES) < 0.5
    return regs


def store(reg: str, row: int) -> list[str]:
    """Store register `reg` of this lane to row `row` of `out` (a predicate as 0 or 1)."""
    at = f"[%out+{row * LANES * 4}]"
    if reg in P:
        return [f"    selp.u32 %w, 1, 0, {reg}", f"    st.global.u32 {at}, %w"]
    return [f"    st.global.{'f32' if reg in F else 'b32'} {at}, {reg}"]


def kernel_text(ops: list[Op]) -> str:
    """Load every register for this lane from `inp`; run `ops`, storing each one's destination to `out`
    (rows 0, 1, ...) as it is written; then store every register (the rows after)."""
    lines = [".kernel straight", ".param .u64 inp", ".param .u64 out", ".reg .u32 %u<4>, %lane, %w",
             ".reg .s32 %s<4>", ".reg .f32 %f<4>", ".reg .pred %p<3>", ".reg .u64 %in, %out, %off",
             "    mov.u32 %lane, %tid.x", "    mul.wide.u32 %off, %lane, 4",
             "    ld.param.u64 %in, [inp]", "    add.u64 %in, %in, %off",
             "    ld.param.u64 %out, [out]", "    add.u64 %out, %out, %off"]
    for j, name in enumerate(DATA):
        lines.append(f"    ld.global.{ {'u': 'u32', 's': 's32', 'f': 'f32'}[name[1]]} {name}, [%in+{j * LANES * 4}]")
    for j, name in enumerate(P, len(DATA)):
        lines += [f"    ld.global.u32 %w, [%in+{j * LANES * 4}]", f"    setp.ne.u32 {name}, %w, 0"]
    for row, op in enumerate(ops):
        lines += ["    " + op.text, *store(op.dst, row)]
    for row, name in enumerate(DATA + P, len(ops)):
        lines += store(name, row)
    return "\n".join(lines) + "\n"


def run_on_gpusim(ops: list[Op], regs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The rows `kernel_text` stores: each instruction's result, then every register (as 32-bit words)."""
    inp = np.concatenate([regs[n].view(np.uint32) for n in DATA] + [regs[n].astype(np.uint32) for n in P])
    mem = GlobalMemory()
    rows = len(ops) + len(DATA) + len(P)
    addr_in, addr_out = mem.alloc_array(inp), mem.alloc_array(np.zeros(rows * LANES, np.uint32))
    execute(assemble(kernel_text(ops), "straight.sasm"), Launch.make(1, LANES), {"inp": addr_in, "out": addr_out},
            mem)
    return list(mem.read(addr_out, np.uint32, rows * LANES).reshape(rows, LANES))


def assert_same(ops: list[Op], regs: dict[str, np.ndarray], want: list[tuple[str, np.ndarray, np.ndarray]],
                got: list[np.ndarray]) -> None:
    """`want`: (register, value, known lanes) per row of `got`."""
    for row, ((name, w, known), g) in enumerate(zip(want, got, strict=True)):
        if name in F:
            g = g.view(np.float32)
            same = (np.isnan(w) & np.isnan(g)) | (w.view(np.uint32) == g.view(np.uint32))
        else:
            same = w == (g != 0 if name in P else g)
        bad = np.flatnonzero(known & ~same)
        if bad.size:
            lane = int(bad[0])
            where = f"after `{ops[row].text}`" if row < len(ops) else "at the end"
            program = "\n".join(op.text for op in ops)
            raise AssertionError(f"{name} {where}, lane {lane}: gpusim {g[lane]!r}, numpy {w[lane]!r}\n"
                                 f"inputs {({n: regs[n][lane] for n in DATA + P})}\nprogram:\n{program}")


@budget(500)
@given(programs(), st.integers(0, 2**32 - 1))
def test_straight_line_programs_match_numpy(ops, seed):
    regs = lane_inputs(seed)
    interp = Interpreter(regs)
    trace = interp.run(ops)
    want = [(op.dst, value, known) for op, (value, known) in zip(ops, trace, strict=True)]
    want += [(name, interp.r[name], interp.known[name]) for name in DATA + P]
    assert_same(ops, regs, want, run_on_gpusim(ops, regs))
