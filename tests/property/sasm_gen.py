"""A hypothesis strategy that writes valid `.sasm` kernels, built from the opcode table.

Every opcode of `gpusim.isa.opcodes.OPCODES` can appear, with the types and qualifier groups the table
lists for it, and operands chosen by its signature letters under the typing rules of docs/isa.md:
registers of every register type, immediates in every literal form, special registers, shared symbols,
addresses in the three state spaces, guards, labels and branches to them, `bar.sync`, `exit`. The
source text varies the spelling too: `%r<N>` ranges, labels on their own line or before an
instruction, `;`-separated statements, comments and blank lines.

The kernels are meant to assemble, not to run: branches go anywhere, memory is not allocated."""

from __future__ import annotations

import string
import struct
from dataclasses import dataclass, field

from hypothesis import strategies as st

from gpusim.isa.opcodes import ATOM_OPS, OPCODES, type_rule
from gpusim.isa.program import SPECIAL_REGISTERS
from gpusim.isa.types import BITS_ONLY, REGISTER_TYPES, TYPES, ScalarType, compatible, widened

# cp.async, mma and ldmatrix have syntax of their own (two addresses, brace groups of fragments) and typing
# rules the table does not spell out: tests/functional/test_tensor.py covers them; .bf16/.tf32 likewise
WARP_MATRIX = frozenset({"cp", "mma", "ldmatrix"})

_FIRST = string.ascii_letters + "_$"
_REST = _FIRST + string.digits
FLOAT_ONLY_CMP = frozenset({"equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"})


def identifiers(max_size: int = 6) -> st.SearchStrategy[str]:
    return st.builds(lambda a, b: a + b, st.sampled_from(_FIRST), st.text(_REST, max_size=max_size))


@dataclass
class Decls:
    """What a kernel declares, for choosing operands."""

    regs: dict[str, list[str]]  # register type -> register names
    params: list[tuple[str, str, int]]  # (type, name, offset)
    shared: list[str]
    labels: list[str] = field(default_factory=list)

    @property
    def param_bytes(self) -> int:
        return max(off + TYPES[t].bytes for t, _, off in self.params)


# ---- literals ------------------------------------------------------------------------------------


@st.composite
def int_literal(draw, t: ScalarType) -> str:
    """An integer literal that fits `t` (as a signed or an unsigned number), in any spelling."""
    bits = t.bits
    v = draw(st.one_of(st.integers(-(1 << (bits - 1)), (1 << bits) - 1), st.sampled_from([0, 1, -1, 2])))
    sign = "-" if v < 0 else draw(st.sampled_from(["", "", "+"]))
    mag = abs(v)
    form = draw(st.sampled_from(["dec", "dec", "hex", "HEX", "bin"]))
    digits = {"dec": str(mag), "hex": f"0x{mag:x}", "HEX": f"0X{mag:X}", "bin": f"0b{mag:b}"}[form]
    return sign + digits


@st.composite
def float_literal(draw, t: ScalarType) -> str:
    """A float literal: decimal, exponent, inf/nan, an integer, or an exact 0f/0d bit pattern."""
    form = draw(st.sampled_from(["repr", "exp", "special", "int", "hexint", "0f", "0d"]))
    if form == "repr":
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False, width=min(t.bits, 64))))
    if form == "exp":
        return f"{draw(st.integers(-999, 999))}e{draw(st.integers(-50, 50))}"
    if form == "special":
        return draw(st.sampled_from(["inf", "-inf", "+inf", "nan", "-0.0", "0.5", ".25", "1."]))
    if form == "int":
        return str(draw(st.integers(-(1 << 70), 1 << 70)))
    if form == "hexint":
        return hex(draw(st.integers(0, 1 << 70)))
    if form == "0f":
        return "0f" + struct.pack(">f", draw(st.floats(width=32))).hex().upper()
    return "0d" + struct.pack(">d", draw(st.floats())).hex().upper()


def immediate(t: ScalarType) -> st.SearchStrategy[str]:
    if t.kind == "pred":
        return st.sampled_from(["0", "1"])
    if t.is_float:
        return float_literal(t)
    return int_literal(t)


# ---- operands ------------------------------------------------------------------------------------


def registers_for(d: Decls, t: ScalarType, subword: bool = False) -> list[str]:
    """Registers a `t` operand may name: compatible ones, and for sub-word `ld`/`st`/`cvt` types any
    integer register of 32 or 64 bits."""
    out = []
    for rtype, names in d.regs.items():
        r = TYPES[rtype]
        if compatible(t, r) or (subword and t.is_int and t.bits < 32 and r.is_int and r.bits >= 32):
            out += names
    return out


@st.composite
def source(draw, d: Decls, t: ScalarType, *, subword: bool = False, special_ok: bool | None = None) -> str:
    wide_int = t.is_int and t.bits >= 32
    kinds = ["reg", "reg", "imm"]
    if wide_int if special_ok is None else special_ok:
        kinds.append("special")
    if wide_int and d.shared:
        kinds.append("sym")
    kind = draw(st.sampled_from(kinds))
    if kind == "reg":
        return draw(st.sampled_from(registers_for(d, t, subword)))
    if kind == "special":
        return draw(st.sampled_from(SPECIAL_REGISTERS))
    if kind == "sym":
        return draw(st.sampled_from(d.shared))
    return draw(immediate(t))


def _offset(draw) -> str:
    v = draw(st.integers(0, 4096))
    return draw(st.sampled_from([str(v), hex(v)]))


@st.composite
def address(draw, d: Decls, space: str, width: int) -> str:
    if space == "param":
        candidates = [(name, off) for t, name, off in d.params if off + width <= d.param_bytes]
        name, off = draw(st.sampled_from(candidates))
        extra = draw(st.integers(0, d.param_bytes - off - width))
        return f"[{name}+{extra}]" if extra else f"[{name}]"
    if space == "global":
        base = registers_for(d, TYPES["u64"])
        form = draw(st.sampled_from(["reg", "reg+", "reg-", "abs"]))
        if form == "abs":
            return f"[{_offset(draw)}]"
        reg = draw(st.sampled_from(base))
        if form == "reg":
            return f"[{reg}]"
        return f"[{reg}{form[-1]}{_offset(draw)}]"
    # shared: any of a 32/64-bit integer register, a symbol, offsets, in any order
    terms = []
    if draw(st.booleans()):
        ints = [n for rt, names in d.regs.items() if TYPES[rt].is_int for n in names]
        terms.append(draw(st.sampled_from(ints)))
    if d.shared and draw(st.booleans()):
        terms.append(draw(st.sampled_from(d.shared)))
    for _ in range(draw(st.integers(0 if terms else 1, 2))):
        terms.append(("-" if draw(st.booleans()) else "") + _offset(draw))
    terms = draw(st.permutations(terms))
    text = terms[0]
    for term in terms[1:]:
        text += term if term.startswith("-") else "+" + term
    return f"[{text}]"


# ---- instructions --------------------------------------------------------------------------------


def qualifier_ok(op: str, t: ScalarType | None, q: str) -> bool:
    """The assembler's rules beyond the table: which qualifiers go with which types (`t` is the
    instruction's first type: the destination's for `cvt`)."""
    if q == "rna":  # cvt.rna.tf32.f32 only
        return False
    if t is None:
        return True
    if q == "wide":
        return t.is_int and t.bits == 32
    if q in ("lo", "hi") and op in ("mul", "mad"):
        return t.is_int
    if q in ("rn", "approx", "full") and t.is_int:
        return False
    if q == "rn" and op in ("sin", "cos", "ex2", "lg2", "rsqrt"):
        return False
    if op == "vote":
        return (q == "ballot") == (t.name in ("b32", "b64"))
    if q in ("v2", "v4"):  # vector ld/st take {r0, r1, ...}: tests/isa/test_ptx.py covers them
        return False
    return not (op == "setp" and not t.is_float and q in FLOAT_ONLY_CMP)


@st.composite
def instruction(draw, d: Decls) -> str:
    op = draw(st.sampled_from(sorted(set(OPCODES) - WARP_MATRIX)))
    spec = OPCODES[op]
    types = [draw(st.sampled_from(sorted(spec.types - BITS_ONLY))) for _ in range(spec.ntypes)]
    t = TYPES[types[0]] if types else None
    quals = []
    for i, group in enumerate(spec.quals):
        ok = sorted(q for q in group if qualifier_ok(op, t, q))
        if ok and (i in spec.required or draw(st.booleans())):
            quals.append(draw(st.sampled_from(ok)))
    if type_rule(op, quals, types):  # what a type takes beyond the table (PTX ISA 9.7.3): drop the rest
        quals = [("add" if q in ATOM_OPS else q) if op in ("atom", "red") else q for q in quals
                 if q not in ("rz", "rm", "rp", "ftz", "approx", "full")]
    sig = "dMss" if op == "atom" and "cas" in quals else spec.sig
    if op == "setp" and set(quals) & {"and", "or", "xor"}:  # p = (a CMP b) BOOL q
        sig = "PssQ"
    subword = op in ("ld", "st", "cvt")
    space = next((q for q in quals if q in ("global", "shared", "param")), "")
    ops = []
    for i, letter in enumerate(sig):
        ot = t
        if op == "cvt":
            ot = TYPES[types[0] if letter == "d" else types[1]]
        elif "wide" in quals and (letter == "d" or (op == "mad" and i == 3)):
            ot = widened(t)
        if letter == "d":
            if op == "vote":
                ot = t if "ballot" in quals else TYPES["pred"]
            ops.append(draw(st.sampled_from(registers_for(d, ot, subword))))
        elif letter == "s":
            ops.append(draw(source(d, ot, subword=subword, special_ok=True if op == "cvt" else None)))
        elif letter == "u":
            ops.append(draw(source(d, TYPES["u32"])))
        elif letter in "PQ":
            neg = "!" if letter == "Q" and draw(st.booleans()) else ""
            ops.append(neg + draw(st.sampled_from(d.regs["pred"])))
        elif letter == "M":
            ops.append(draw(address(d, space, t.bytes)))
        elif letter == "L":
            ops.append(draw(st.sampled_from(d.labels)))
        elif letter == "B" and draw(st.booleans()):
            ops.append(str(draw(st.integers(0, 15))))
    guard = ""
    if draw(st.integers(0, 4)) == 0:
        guard = "@" + ("!" if draw(st.booleans()) else "") + draw(st.sampled_from(d.regs["pred"])) + " "
    mnem = ".".join([op, *quals, *types])
    return f"{guard}{mnem}{draw(st.sampled_from([' ', '  '])) if ops else ''}{', '.join(ops)}"


# ---- kernels -------------------------------------------------------------------------------------

_COMMENT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\n\r"), max_size=8)
_DATA_TYPES = sorted(set(TYPES) - {"pred"})


@st.composite
def _declarations(draw) -> tuple[Decls, list[str], list[str]]:
    """(declarations, `.param`/`.shared`/`.maxnreg` lines, `.reg` lines)."""
    names = draw(st.lists(identifiers(), min_size=2, max_size=6, unique=True))
    nparams = draw(st.integers(1, len(names) - 1))
    params, offset = [], 0
    for i, name in enumerate(names[:nparams]):
        ptype = "u64" if i == 0 else draw(st.sampled_from(_DATA_TYPES))  # a pointer first: fits any ld.param
        size = TYPES[ptype].bytes
        offset = -(-offset // size) * size
        params.append((ptype, name, offset))
        offset += size
    shared = names[nparams:]
    lines = [f".param .{ptype} {name}" for ptype, name, _ in params]
    for name in shared:
        align = draw(st.sampled_from(["", ".align 4 ", ".align 16 "]))
        count = draw(st.sampled_from(["", "[1]", "[64]", "[3]"]))
        lines.append(f".shared {align}.{draw(st.sampled_from(_DATA_TYPES))} {name}{count}")
    if draw(st.booleans()):
        lines.append(f".maxnreg {draw(st.integers(1, 255))}")
    regs: dict[str, list[str]] = {}
    reg_lines = []
    for rtype in REGISTER_TYPES:
        prefix = f"%{rtype}_{draw(identifiers(2))}"
        n = draw(st.integers(1, 3))
        regs[rtype] = [f"{prefix}{i}" for i in range(n)]
        ranged = draw(st.booleans())
        reg_lines.append(f".reg .{rtype} " + (f"{prefix}<{n}>" if ranged else ", ".join(regs[rtype])))
    return Decls(regs, params, shared), lines, draw(st.permutations(reg_lines))


@st.composite
def kernels(draw) -> str:
    """The text of a valid kernel."""
    d, decls, reg_lines = draw(_declarations())
    n = draw(st.integers(1, 14))
    d.labels = draw(st.lists(identifiers(), min_size=1, max_size=4, unique=True))
    at = {name: draw(st.integers(0, n - 1)) for name in d.labels}  # the instruction each label marks
    lines: list[str] = []
    for pc in range(n):
        labels = [f"{name}:" for name, where in at.items() if where == pc]
        ins = draw(instruction(d))
        if lines and draw(st.integers(0, 5)) == 0:  # two statements on one line
            lines[-1] += "; " + " ".join(labels + [ins])
        elif labels and draw(st.booleans()):  # labels on a line of their own
            lines += labels + ["    " + ins]
        else:
            lines.append("    " + " ".join(labels + [ins]))
    lines = [line + draw(st.sampled_from(["", ";", " ;"])) for line in lines]
    lines = [line + f" //{draw(_COMMENT)}" if draw(st.integers(0, 6)) == 0 else line for line in lines]
    # .reg declarations may stand anywhere, before, between or after the instructions
    split = draw(st.integers(0, len(reg_lines)))
    where = draw(st.integers(0, len(lines)))
    body = lines[:where] + reg_lines[split:] + lines[where:]
    head = [f"{draw(st.sampled_from(['.kernel', '.entry']))} {draw(identifiers())}", *decls, *reg_lines[:split]]
    return "\n".join(head + body) + "\n"
