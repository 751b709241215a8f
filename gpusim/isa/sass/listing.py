"""The text of a SASS listing -> raw instructions: what `nvdisasm -c -hex -g` (preferred: labels, line
information) or `cuobjdump -sass` prints for a cubin. Each instruction line is

    /*0040*/   @!P0 IMAD.WIDE.U32 R2, R7, 0x4, R2 ;   /* 0x0000000407027825 */
                                                       /* 0x001fe2000f8e0200 */

(the address, an optional guard, the opcode with its modifiers, the operands, and the 128-bit encoding as
two 64-bit words, the control codes in the high bits of the second). `.L_x_N:` lines are labels,
`//## File "f.cu", line N` lines give the CUDA source line of the instructions after them. Every error is
an AssemblyError naming the listing's file, line and column."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpusim.errors import AssemblyError
from gpusim.isa.sass.control import Control

RZ, URZ, PT, UPT = 255, 63, 7, 7


@dataclass(frozen=True, slots=True)
class SassOperand:
    """One operand as written. kind: 'R' (register; 255 is RZ), 'UR' (63 is URZ), 'P' (7 is PT), 'UP',
    'imm' (integer bits in `value`), 'fimm' (a decimal literal, `value` a float; HFMA2's pair: `pair`),
    'c' (constant bank `bank`, byte offset `value`, plus register `index`/uniform `ureg` when indexed),
    'mem' ([R.64 + UR + offset], `index` the register (-1: none), `wide` 2 for a 64-bit address,
    `scale` its .X4/.X8/.X16 factor, `ureg` the uniform register added (-1: none), `value` the offset),
    'sr' (special register `name`), 'label' (`name`, or the address in `value`), 'B' (convergence barrier),
    'SB' (dependency barrier)."""

    kind: str
    index: int = -1
    value: int | float = 0
    neg: bool = False  # -x (floats: negated; integers: two's complement)
    abs: bool = False  # |x|
    inv: bool = False  # !P or ~R
    wide: int = 1
    scale: int = 1
    ureg: int = -1
    bank: int = 0
    sel: str = ""  # .H0_H0, .H1_H1, .H0, .H1, .F32, .B1 ...: a part of the register
    name: str = ""
    pair: tuple[float, float] = ()
    col: int = 0

    @property
    def is_zero_reg(self) -> bool:
        return (self.kind == "R" and self.index == RZ) or (self.kind == "UR" and self.index == URZ)


@dataclass(frozen=True, slots=True)
class RawInstruction:
    addr: int  # byte offset in the function's section
    opcode: str  # "IMAD"
    mods: tuple[str, ...]  # ("WIDE", "U32")
    operands: tuple[SassOperand, ...]
    guard: SassOperand | None
    control: Control
    encoding: int | None  # the 128-bit word (None when the listing has no -hex words)
    line: int  # in the listing
    text: str  # the instruction as printed
    loc: tuple[str, int] | None = None  # CUDA source (file, line)


@dataclass
class Listing:
    """One function section of a listing: its name, instructions and labels (name -> byte offset)."""

    name: str
    instructions: list[RawInstruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    functions: dict[str, int] = field(default_factory=dict)  # sub-functions in the section: name -> offset
    source: str = "<sass>"


_INS_RE = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;?\s*(?:/\*\s*(0x[0-9a-fA-F]{16})\s*\*/)?\s*$")
_HEX_ONLY_RE = re.compile(r"^\s*/\*\s*(0x[0-9a-fA-F]{16})\s*\*/\s*$")
_LABEL_RE = re.compile(r"^\s*([.$A-Za-z_][\w.$]*)\s*:\s*$")
_FILE_RE = re.compile(r'^\s*//##\s*File\s+"([^"]*)",\s*line\s+(\d+)')
_SECTION_RE = re.compile(r"^\s*\.section\s+\.text\.([\w.$]+)")
_FUNCTION_RE = re.compile(r"^\s*Function\s*:\s*([\w.$]+)")
_TYPE_FUNC_RE = re.compile(r"^\s*\.type\s+([\w.$]+)\s*,\s*@function")
_REG_RE = re.compile(r"^(U?R)(\d+|Z)((?:\.[A-Za-z0-9_]+)*)$")
_PRED_RE = re.compile(r"^(U?P)(\d|T)$")
_INT_RE = re.compile(r"^[-+]?0[xX][0-9a-fA-F]+$")
_DEC_RE = re.compile(r"^[-+]?(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|INF|QNAN|NAN)$")
_CBANK_RE = re.compile(r"^c\[(0x[0-9a-fA-F]+)\]\[(.+)\]$")
_LABEL_OP_RE = re.compile(r"^`\(([^)]*)\)$")
_SCALES = {"X4": 4, "X8": 8, "X16": 16}
_MAX_LINE = 4096  # characters of a listing line that are read at all


def _err(msg: str, file: str, line: int, col: int = 0, token: str | None = None) -> AssemblyError:
    return AssemblyError(msg, file=file, line=line, col=col, token=token)


def _split_top(s: str) -> list[tuple[str, int]]:
    """Comma-separated operands (commas inside [] kept) with their offsets in `s`."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append((s[start:i], start))
            start = i + 1
    out.append((s[start:], start))
    return [(t.strip(), o + len(t) - len(t.lstrip())) for t, o in out if t.strip()]


def _number(tok: str) -> int | float | None:
    if _INT_RE.match(tok):
        return int(tok, 16)
    if _DEC_RE.match(tok):
        t = tok.upper().lstrip("+")
        neg = t.startswith("-")
        t = t.lstrip("-")
        v = float("inf") if t == "INF" else float("nan") if t in ("QNAN", "NAN") else float(t)
        return -v if neg else v
    return None


def _register(tok: str) -> SassOperand | None:
    m = _REG_RE.match(tok)
    if not m:
        return None
    kind, num, suffix = m.groups()
    if num == "Z":
        index = RZ if kind == "R" else URZ
    else:
        index = int(num)
        if index > (254 if kind == "R" else 62):
            return None
    sel, wide, scale = "", 1, 1
    for part in suffix.split(".")[1:]:
        if part == "reuse":
            continue
        if part == "64":
            wide = 2
        elif part == "128":
            wide = 4
        elif part in _SCALES:
            scale = _SCALES[part]
        elif sel:
            return None
        else:
            sel = part
    return SassOperand(kind, index, wide=wide, scale=scale, sel=sel)


def parse_operand(tok: str, col: int, file: str, line: int) -> SassOperand:
    """One operand token -> SassOperand (AssemblyError when it is none gpusim reads)."""
    raw = tok
    neg = inv = ab = False
    t = tok
    if t.startswith("-") and not _number(t):
        neg, t = True, t[1:].strip()
    if t.startswith("|") and t.endswith("|") and len(t) > 2:
        ab, t = True, t[1:-1].strip()
    if t.startswith("!") or t.startswith("~"):
        inv, t = True, t[1:].strip()
    if t.startswith("-") and not _number(t):  # -|x| and |-x| forms
        neg, t = not neg, t[1:].strip()
    op = _register(t)
    if op is not None:
        return SassOperand(op.kind, op.index, neg=neg, abs=ab, inv=inv, wide=op.wide, scale=op.scale, sel=op.sel,
                           col=col)
    m = _PRED_RE.match(t)
    if m:
        kind, num = m.groups()
        return SassOperand(kind, 7 if num == "T" else int(num), inv=inv, col=col)
    if t in ("PR", "UPR"):
        return SassOperand("PR", name=t, col=col)
    if t.startswith("SR_") or t == "SRZ":
        return SassOperand("sr", name=t, col=col)
    m = _CBANK_RE.match(t)
    if m:
        bank = int(m.group(1), 16)
        inner = m.group(2).replace(" ", "")
        index, ureg, off = -1, -1, 0
        for part in re.split(r"\+(?=.)", inner):
            r = _register(part)
            if r is not None and r.kind == "R":
                index = r.index
            elif r is not None and r.kind == "UR":
                ureg = r.index
            elif _INT_RE.match(part):
                off += int(part, 16)
            else:
                raise _err("unreadable constant-bank operand", file, line, col, raw)
        return SassOperand("c", index, off, neg=neg, abs=ab, bank=bank, ureg=ureg, col=col)
    if t.startswith("desc[") or t.startswith("["):
        body = t
        if t.startswith("desc["):
            end = t.find("]")
            body = t[end + 1:]
        if not (body.startswith("[") and body.endswith("]")):
            raise _err("unreadable memory operand", file, line, col, raw)
        inner = body[1:-1].replace(" ", "")
        index, ureg, off, wide, scale = -1, -1, 0, 1, 1
        for part in re.split(r"\+(?=.)", inner) if inner else []:
            r = _register(part)
            if r is not None and r.kind == "R" and index < 0:
                index, wide, scale = r.index, r.wide, r.scale
            elif r is not None and r.kind == "UR" and ureg < 0:
                ureg = r.index
                if index < 0 and r.wide > 1:
                    wide = r.wide
            elif _INT_RE.match(part):
                off += int(part, 16)
            else:
                raise _err("unreadable memory operand", file, line, col, raw)
        return SassOperand("mem", index, off, wide=wide, scale=scale, ureg=ureg, col=col)
    m = _LABEL_OP_RE.match(t)
    if m:
        return SassOperand("label", name=m.group(1).strip(), col=col)
    if re.fullmatch(r"S?B\d+", t):
        return SassOperand("SB" if t.startswith("SB") else "B", int(t.lstrip("SB")), col=col)
    v = _number(tok if not ab else t)
    if v is not None:
        if isinstance(v, int):
            return SassOperand("imm", value=v, abs=ab, col=col)
        return SassOperand("fimm", value=v, abs=ab, col=col)
    raise _err("unreadable operand", file, line, col, raw)


def _instruction(body: str, col0: int, addr: int, enc_lo: int | None, enc_hi: int | None, file: str,
                 line: int, loc) -> RawInstruction:
    text = body.strip().rstrip(";").strip()
    guard = None
    rest, col = text, col0
    if rest.startswith("@"):
        g, _, rest = rest.partition(" ")
        guard = parse_operand(g[1:], col, file, line)
        if guard.kind not in ("P", "UP"):
            raise _err("a guard must be a predicate", file, line, col, g)
        rest = rest.strip()
        col = col0 + text.find(rest)
    name, _, ops = rest.partition(" ")
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)*", name):
        raise _err("unreadable opcode", file, line, col, name)
    opcode, *mods = name.split(".")
    toks = _split_top(re.sub(r"(\S)\s+`\(", r"\1,`(", ops))  # `RET.REL.NODEC R2 `(f)`: the label as an operand
    ocol = col + len(name) + 1
    operands = tuple(parse_operand(t, ocol + o, file, line) for t, o in toks)
    if opcode.startswith("HFMA2") or opcode.startswith("HADD2") or opcode.startswith("HMUL2"):
        # a half2 immediate is printed as two decimal literals: `HFMA2 R0, -RZ, RZ, 0, 1` (low half last)
        merged, i, ops_l = [], 0, list(operands)
        while i < len(ops_l):
            a = ops_l[i]
            if a.kind in ("fimm",) and i + 1 < len(ops_l) and ops_l[i + 1].kind == "fimm":
                merged.append(SassOperand("fimm", value=0.0, pair=(float(a.value), float(ops_l[i + 1].value)),
                                          col=a.col))
                i += 2
            else:
                merged.append(a)
                i += 1
        operands = tuple(merged)
    if enc_lo is not None and enc_hi is not None:
        control = Control.from_high_word(enc_hi)
        encoding = enc_lo | (enc_hi << 64)
    else:
        control, encoding = Control(), None
    return RawInstruction(addr, opcode, tuple(mods), operands, guard, control, encoding, line, text, loc)


def parse_listing(text: str, file: str = "<sass>") -> list[Listing]:
    """Every function section of a listing, in order."""
    out: list[Listing] = []
    cur: Listing | None = None
    loc = None
    lines = text.splitlines()
    i = 0
    pending_funcs: list[str] = []
    while i < len(lines):
        raw = lines[i][:_MAX_LINE]
        i += 1
        ln = i
        m = _SECTION_RE.match(raw) or _FUNCTION_RE.match(raw)
        if m:
            cur = Listing(m.group(1), source=file)
            out.append(cur)
            loc = None
            continue
        m = _FILE_RE.match(raw)
        if m:
            loc = (m.group(1), int(m.group(2)))
            continue
        m = _TYPE_FUNC_RE.match(raw)
        if m:
            pending_funcs.append(m.group(1))
            continue
        m = _LABEL_RE.match(raw)
        if m and cur is not None:
            nxt = cur.instructions[-1].addr + 16 if cur.instructions else 0
            cur.labels[m.group(1)] = nxt
            if m.group(1) in pending_funcs:
                cur.functions[m.group(1)] = nxt
            continue
        m = _INS_RE.match(raw)
        if not m:
            continue
        if cur is None:
            raise _err("an instruction before any function (no `.section .text.NAME` or `Function : NAME`)",
                       file, ln, 0)
        addr = int(m.group(1), 16)
        lo = int(m.group(3), 16) if m.group(3) else None
        hi = None
        if lo is not None and i < len(lines):
            h = _HEX_ONLY_RE.match(lines[i][:_MAX_LINE])
            if h:
                hi = int(h.group(1), 16)
                i += 1
        if lo is not None and hi is None:
            raise _err("the instruction's encoding lacks its second (control) word", file, ln, 0)
        expect = cur.instructions[-1].addr + 16 if cur.instructions else addr
        if addr != expect or addr % 16:
            raise _err(f"instruction address {addr:#x} out of sequence (expected {expect:#x})", file, ln, 0)
        cur.instructions.append(_instruction(m.group(2), m.start(2), addr, lo, hi, file, ln, loc))
    return [f for f in out if f.instructions]
