"""Assembler: `.sasm` text -> Program. Every error names file:line:col, the token and what was
expected. See docs/isa.md for the language."""

from __future__ import annotations

import math
import re
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpusim.errors import AssemblyError
from gpusim.isa.cfg import peak_live_registers, reconvergence_points
from gpusim.isa.opcodes import MMA_SHAPES, OPCODES, PACKED_CVT, Unit, type_rule
from gpusim.isa.program import (
    SPECIAL_REGISTERS,
    Instruction,
    Operand,
    Param,
    Program,
    Register,
    SharedVar,
)
from gpusim.isa.types import REGISTER_TYPES, TYPES, ScalarType, compatible, widened

_IDENT = r"[A-Za-z_$][\w$]*"
_LABEL_RE = re.compile(rf"^({_IDENT})\s*:")
_REG_NAME_RE = re.compile(r"^%[A-Za-z_$][\w$]*$")
_RANGE_RE = re.compile(r"^(%[A-Za-z_$][\w$]*?)<(\d+)>$")
_INT_RE = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)$")
_FLOAT_RE = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?$|^[-+]?(inf|nan)$")
_HEXF_RE = re.compile(r"^0[fF]([0-9a-fA-F]{8})$|^0[dD]([0-9a-fA-F]{16})$")
_SHARED_RE = re.compile(rf"^({_IDENT})\s*\[\s*([0-9]+)\s*\]$")
_MAX_LITERAL = 80  # characters of an integer literal: more than any 64-bit value needs, even in binary
MAX_REGISTERS = 65536  # registers a kernel may declare (a `%r<N>` range is expanded name by name)
_SIG_NAMES = {"d": "destination", "s": "source", "u": "u32 source", "P": "predicate destination",
              "Q": "predicate source", "M": "[address]", "L": "label", "B": "barrier number",
              "N": "group count"}
# registers of each mma fragment ({d}, {a}, {b}, {c}) by shape (PTX ISA 9.7.13.4.8-10)
MMA_FRAGMENT_REGS = {"m16n8k16": (4, 4, 2, 4), "m16n8k8": (4, 4, 2, 4), "m16n8k32": (4, 4, 2, 4)}


class _Stmt:
    __slots__ = ("line", "col", "text")

    def __init__(self, line: int, col: int, text: str):
        self.line, self.col, self.text = line, col, text


def _lines(text: str) -> list[str]:
    """The source's lines: ends of line are \\n, \\r\\n or \\r (as a file read in text mode has them);
    other characters `str.splitlines` would break at (form feed, U+2028, ...) do not end a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _statements(text: str):
    """Split source into statements (line, col, text), dropping `//` comments, splitting at `;`."""
    for lineno, raw in enumerate(_lines(text), 1):
        code = raw.split("//", 1)[0]
        pos = 0
        for piece in code.split(";"):
            stripped = piece.strip()
            if stripped:
                yield _Stmt(lineno, pos + piece.index(stripped[0]) + 1, stripped)
            pos += len(piece) + 1


def _split_operands(text: str, col0: int) -> list[tuple[str, int]]:
    """Split `a, [b+4], c` at top-level commas -> [(token, col)]."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            tok = text[start:i]
            if tok.strip():
                out.append((tok.strip(), col0 + start + (len(tok) - len(tok.lstrip()))))
            else:
                out.append(("", col0 + start))
            start = i + 1
    return out


def _int_literal(tok: str) -> int | None:
    """The value of an integer literal (decimal, 0x hex or 0b binary, optionally signed), or None.
    A decimal literal with a leading zero is refused (PTX would read it as octal)."""
    if not _INT_RE.match(tok):
        return None
    digits = tok.lstrip("+-")
    if digits[0] == "0" and digits[1:2].isdigit():
        return None
    if len(digits) > _MAX_LITERAL and digits.isdigit():  # Python refuses int() of 4300+ decimal digits
        return -(10 ** _MAX_LITERAL) if tok.startswith("-") else 10 ** _MAX_LITERAL  # fits no type either way
    return int(tok, 0)


def _float_of_int(v: int) -> float:
    """An integer as a float64, infinite when it is beyond the float64 range."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


class _Assembler:
    def __init__(self, text: str, file: str):
        self.text, self.file = text, file
        self.name: str | None = None
        self.params: list[Param] = []
        self.param_offset = 0
        self.regs: dict[str, Register] = {}
        self.shared: list[SharedVar] = []
        self.shared_offset = 0
        self.labels: dict[str, int] = {}
        self.label_order: list[tuple[str, int]] = []
        self.label_lines: dict[str, int] = {}
        self.maxnreg = 0
        self.pending: list[tuple[_Stmt, dict]] = []  # parsed instructions awaiting label resolution

    def error(self, msg: str, stmt: _Stmt, col: int | None = None, token: str | None = None):
        raise AssemblyError(msg, file=self.file, line=stmt.line, col=col or stmt.col, token=token)

    def count(self, text: str, what: str, lo: int, hi: int, st: _Stmt, col: int) -> int:
        """A decimal count in a directive (`%r<N>`, `NAME[N]`, `.align N`, `.maxnreg N`) within lo..hi."""
        if not (text.isascii() and text.isdigit()) or len(text) > _MAX_LITERAL or not lo <= int(text) <= hi:
            self.error(f"expected {what} ({lo}..{hi})", st, col, text or st.text)
        return int(text)

    # ---- directives ---------------------------------------------------------------------------
    def directive(self, st: _Stmt):
        head, _, rest = st.text.partition(" ")
        rest = rest.strip()
        col_rest = st.col + len(head) + 1 + (len(st.text) - len(head) - 1 - len(rest)) if rest else st.col
        if head in (".kernel", ".entry"):
            if self.name is not None:
                self.error("only one .kernel per file", st, token=head)
            if not re.fullmatch(_IDENT, rest):
                self.error("expected a kernel name after .kernel", st, col_rest, rest or head)
            self.name = rest
        elif head == ".param":
            t, name, col_rest = self._typed(st, rest, col_rest, "parameter")
            if t.kind == "pred":
                self.error("a parameter cannot be .pred", st, col_rest, rest)
            if not re.fullmatch(_IDENT, name):
                self.error("expected a parameter name", st, col_rest, name)
            if self._symbol_taken(name):
                self.error(f"name '{name}' declared twice", st, col_rest, name)
            self.param_offset = -(-self.param_offset // t.bytes) * t.bytes
            self.params.append(Param(name, t.name, self.param_offset))
            self.param_offset += t.bytes
        elif head == ".reg":
            t, names, col_names = self._typed(st, rest, col_rest, "register")
            if t.name not in REGISTER_TYPES:
                self.error(f"registers cannot be .{t.name}; use one of "
                           + ", ".join("." + r for r in REGISTER_TYPES), st, col_rest, "." + t.name)
            for tok, col in _split_operands(names, col_names):
                m = _RANGE_RE.match(tok)
                if m:
                    n = self.count(m.group(2), "a register count", 0, MAX_REGISTERS - len(self.regs), st, col)
                    declared = [f"{m.group(1)}{i}" for i in range(n)]
                else:
                    declared = [tok]
                for name in declared:
                    if not _REG_NAME_RE.match(name):
                        self.error("expected a register name like %r1", st, col, tok)
                    if name in self.regs or name in SPECIAL_REGISTERS or name.split(".")[0] in (
                            "%tid", "%ntid", "%ctaid", "%nctaid"):
                        self.error(f"register '{name}' declared twice or reserved", st, col, tok)
                    if len(self.regs) >= MAX_REGISTERS:
                        self.error(f"more than {MAX_REGISTERS} registers", st, col, tok)
                    self.regs[name] = Register(name, t.name, len(self.regs))
        elif head == ".shared":
            align = 0
            m = re.match(r"^\.align\s+(\S+)\s+", rest)
            if m:
                align = self.count(m.group(1), "an alignment", 1, 1 << 20, st, col_rest)
                if align & (align - 1):
                    self.error("alignment must be a power of two", st, col_rest, m.group(1))
                rest = rest[m.end():]
            t, decl, col_rest = self._typed(st, rest, col_rest, "shared variable")
            m = _SHARED_RE.match(decl) or re.fullmatch(_IDENT, decl)
            if not m:
                self.error("expected NAME[COUNT] after .shared .type", st, col_rest, decl)
            name = m.group(1) if m.re is _SHARED_RE else decl
            count = 1
            if m.re is _SHARED_RE:
                count = self.count(m.group(2), "a shared array size", 1, 1 << 40, st, col_rest)
            if self._symbol_taken(name):
                self.error(f"name '{name}' declared twice", st, col_rest, name)
            align = align or t.bytes
            off = -(-self.shared_offset // align) * align
            self.shared.append(SharedVar(name, t.name, count, align, off))
            self.shared_offset = off + t.bytes * count
        elif head == ".maxnreg":
            self.maxnreg = self.count(rest, "a register count after .maxnreg", 1, 255, st, col_rest)
        else:
            self.error("unknown directive; expected .kernel, .param, .reg, .shared or .maxnreg", st,
                       token=head)

    def _symbol_taken(self, name: str) -> bool:
        return any(v.name == name for v in self.shared) or any(p.name == name for p in self.params)

    def _typed(self, st: _Stmt, rest: str, col: int, what: str) -> tuple[ScalarType, str, int]:
        """Parse `.type names`; return the type, the names and the column where the names start."""
        tname, _, tail = rest.partition(" ")
        if not tname.startswith(".") or tname[1:] not in TYPES:
            self.error(f"expected a type (.u32, .f32, ...) for the {what}", st, col, tname or rest)
        if not tail.strip():
            self.error(f"expected a {what} name after the type", st, col, rest)
        return TYPES[tname[1:]], tail.strip(), col + len(tname) + 1 + len(tail) - len(tail.lstrip())

    # ---- instructions -------------------------------------------------------------------------
    def instruction(self, st: _Stmt):
        text, col = st.text, st.col
        guard, guard_neg = -1, False
        if text.startswith("@"):
            gtok, _, text2 = text.partition(" ")
            name = gtok[1:]
            if name.startswith("!"):
                guard_neg, name = True, name[1:]
            reg = self.regs.get(name)
            if reg is None:
                self.error("undefined register in guard; expected a declared .pred register", st, col, gtok)
            if reg.type != "pred":
                self.error(f"guard register {name} is .{reg.type}; expected .pred", st, col, gtok)
            guard = reg.index
            stripped = text2.lstrip()
            col += len(text) - len(stripped)
            text = stripped
            if not text:
                self.error("expected an instruction after the guard", st, col, gtok)
        mnem, _, ops = text.partition(" ")
        ops_stripped = ops.strip()
        ops_col = col + len(mnem) + 1 + (len(ops) - len(ops.lstrip()))
        parts = mnem.split(".")
        spec = OPCODES.get(parts[0])
        if spec is None:
            self.error("unknown opcode", st, col, parts[0])
        types, quals = [], []
        for p in parts[1:]:
            if p in TYPES and spec.ntypes:
                types.append(p)
            else:
                quals.append(p)
        if len(types) != spec.ntypes:
            if spec.ntypes == 0:
                self.error(f"{spec.name} takes no type suffix", st, col, mnem)
            self.error(f"{spec.name} needs {spec.ntypes} type suffix{'es' if spec.ntypes > 1 else ''} "
                       f"(e.g. {spec.name}.{sorted(spec.types)[0]})", st, col, mnem)
        for t in types:
            if t not in spec.types:
                self.error(f"{spec.name} does not take .{t}; expected one of "
                           + " ".join("." + x for x in sorted(spec.types)), st, col, mnem)
        seen = set()
        for q in quals:
            group = next((i for i, g in enumerate(spec.quals) if q in g), None)
            if group is None:
                self.error(f"unknown qualifier .{q} for {spec.name}", st, col, mnem)
            if group in seen:
                self.error(f"two qualifiers of one kind in {mnem}", st, col, mnem)
            seen.add(group)
        for g in spec.required:
            if g not in seen:
                self.error(f"{spec.name} needs one of " + " ".join("." + x for x in sorted(spec.quals[g])),
                           st, col, mnem)
        sig = spec.sig
        if spec.name == "atom" and "cas" in quals:
            sig = "dMss"
        if spec.name == "setp" and set(quals) & {"and", "or", "xor"}:
            sig = "PssQ"
        if spec.name == "cvt" and types[0] in PACKED_CVT:  # cvt.rn.f16x2.f32 d, a, b
            sig = "dss"
        if spec.name == "cp":  # cp.async.commit_group; cp.async.wait_group N; cp.async.wait_all
            sig = {"commit_group": "", "wait_group": "N", "wait_all": ""}.get(quals[1] if len(quals) > 1 else "", sig)
            if sig == "MMs":  # a copy: [dst], [src], cp-size[, src-size]
                sig = "MMsu"
            if sig == "MMsu" and not {"shared", "global"} <= set(quals):
                self.error("cp.async copies need .shared.global (global to shared memory)", st, col, mnem)
            if sig != "MMsu" and set(quals) & {"shared", "global"}:
                self.error(f"cp.async.{quals[1]} takes no state space", st, col, mnem)
        toks = _split_operands(ops_stripped, ops_col) if ops_stripped else []
        if spec.name == "shfl" and toks and "|" in toks[0][0]:  # `d|p`: also the source lane's validity
            d_tok, _, p_tok = toks[0][0].partition("|")
            toks[0:1] = [(d_tok.strip(), toks[0][1]), (p_tok.strip(), toks[0][1] + len(d_tok) + 1)]
            sig = "dP" + sig[1:]
        optional = spec.optional or (1 if sig.endswith("B") or sig == "MMsu" else 0)
        if not len(sig) - optional <= len(toks) <= len(sig):
            want = ", ".join(_SIG_NAMES[c] for c in sig) or "no operands"
            self.error(f"{mnem} expects {len(sig) - optional if optional else len(sig)} operand(s) ({want}), "
                       f"got {len(toks)}", st, ops_col if toks else col, ops_stripped or mnem)
        self.pending.append((st, dict(spec=spec, quals=tuple(quals), types=tuple(types), sig=sig,
                                      toks=toks, guard=guard, guard_neg=guard_neg)))

    def operand(self, st, letter, tok, col, itype: ScalarType | None, ins: dict) -> Operand:
        if not tok:
            self.error(f"missing {_SIG_NAMES[letter]}", st, col, ",")
        if letter in "PQ":
            neg = letter == "Q" and tok.startswith("!")
            name = tok[1:] if neg else tok
            reg = self.regs.get(name)
            if reg is None:
                self.error("undefined register; expected a declared .pred register", st, col, tok)
            if reg.type != "pred":
                self.error(f"type mismatch: {name} is .{reg.type}; expected a .pred register", st, col, tok)
            return Operand("reg", "pred", reg.index, negate=neg)
        if letter == "L":
            if not re.fullmatch(_IDENT, tok):
                self.error("expected a label", st, col, tok)
            if tok not in self.labels:
                self.error("undefined label", st, col, tok)
            return Operand("label", "", -1, self.labels[tok], tok)
        if letter == "B":
            v = _int_literal(tok)
            if v is None or not 0 <= v <= 15:
                self.error("expected a barrier number 0..15", st, col, tok)
            return Operand("imm", "u32", value=v)
        if letter == "N":
            v = _int_literal(tok)
            if v is None or not 0 <= v <= 7:
                self.error("expected a count of groups 0..7", st, col, tok)
            return Operand("imm", "u32", value=v)
        if letter == "M":
            return self.address(st, tok, col, ins)
        if letter == "d":
            reg = self.regs.get(tok)
            if reg is None:
                what = "immediate" if _INT_RE.match(tok) or _FLOAT_RE.match(tok) else "register"
                self.error("undefined register; expected a destination register" if what == "register"
                           else "expected a destination register, got an immediate", st, col, tok)
            self._check_type(st, col, tok, reg, itype, ins, dst=True)
            return Operand("reg", itype.name, reg.index)
        # 's' / 'u' sources
        if tok in self.regs:
            reg = self.regs[tok]
            self._check_type(st, col, tok, reg, itype, ins, dst=False)
            return Operand("reg", itype.name, reg.index)
        if tok in SPECIAL_REGISTERS:
            if not (itype.is_int and itype.bits >= 32) and ins["spec"].name != "cvt":
                self.error(f"type mismatch: {tok} is .u32; {ins['spec'].name}.{itype.name} needs .{itype.name}",
                           st, col, tok)
            return Operand("special", itype.name, name=tok)
        if tok.startswith("%"):
            self.error("undefined register", st, col, tok)
        sym = next((v for v in self.shared if v.name == tok), None)
        if sym is not None:
            if not (itype.is_int and itype.bits >= 32):
                self.error("a shared symbol's address needs an integer type of 32 or 64 bits", st, col, tok)
            return Operand("sym", itype.name, value=sym.offset, name=tok)
        return Operand("imm", itype.name, value=self.immediate(st, tok, col, itype))

    def _check_type(self, st, col, tok, reg: Register, itype: ScalarType, ins: dict, dst: bool):
        rtype = TYPES[reg.type]
        spec = ins["spec"]
        ok = compatible(itype, rtype)
        if not ok and spec.name in ("ld", "st", "cvt") and itype.is_int and itype.bits < 32:
            ok = rtype.is_int and rtype.bits >= itype.bits  # sub-word memory widths extend into wider registers
        if not ok:
            written = ".".join((spec.name, *ins["quals"], *ins["types"]))
            self.error(f"type mismatch: {tok} is .{reg.type}; {written} needs a .{itype.name} register", st, col, tok)

    def immediate(self, st, tok, col, itype: ScalarType):
        m = _HEXF_RE.match(tok)
        if itype.kind == "pred":
            if tok in ("0", "1"):
                return int(tok)
            self.error("expected 0 or 1 for a .pred immediate", st, col, tok)
        if itype.is_float:  # every form is rounded to the instruction's type
            if m and m.group(1):
                v = float(struct.unpack(">f", bytes.fromhex(m.group(1)))[0])
            elif m:
                v = float(struct.unpack(">d", bytes.fromhex(m.group(2)))[0])
            elif _FLOAT_RE.match(tok):
                v = float(tok)
            elif _int_literal(tok) is not None:
                v = _float_of_int(_int_literal(tok))
            else:
                self.error(f"expected a register or a .{itype.name} immediate", st, col, tok)
            with np.errstate(over="ignore"):  # too large for the type: infinity, as in C
                return float(np.asarray(v, dtype=itype.dtype))
        if _INT_RE.match(tok):
            v = _int_literal(tok)
            if v is None:
                self.error("leading zero in a decimal immediate (octal is not supported)", st, col, tok)
            lo, hi = -(1 << (itype.bits - 1)), (1 << itype.bits) - 1
            if not lo <= v <= hi:
                self.error(f"immediate does not fit .{itype.name}", st, col, tok)
            return v
        if _FLOAT_RE.match(tok) or m:
            self.error(f"type mismatch: float immediate for .{itype.name}", st, col, tok)
        self.error(f"expected a register or a .{itype.name} immediate", st, col, tok)

    def address(self, st, tok, col, ins, space: str | None = None) -> Operand:
        space = space or next(q for q in ins["quals"] if q in ("global", "shared", "param"))
        if not (tok.startswith("[") and tok.endswith("]")):
            self.error("expected a memory address like [%rd1+4]", st, col, tok)
        inner = tok[1:-1].replace(" ", "")
        terms = re.findall(r"([+-]?)([^+-]+)", inner)
        if not inner or "".join(sg + t for sg, t in terms) != inner:
            self.error("expected [register], [register+offset], [symbol+offset] or [address]", st, col, tok)
        reg_tok, sym_tok, offset = None, None, 0
        for sign, term in terms:
            if _INT_RE.match(term):
                v = _int_literal(term)
                if v is None:
                    self.error("expected a decimal or hex offset without leading zeros", st, col, tok)
                offset += v * (-1 if sign == "-" else 1)
            elif sign == "-":
                self.error("only an integer offset may be subtracted in an address", st, col, tok)
            elif term.startswith("%"):
                if reg_tok is not None:
                    self.error("an address has at most one register", st, col, tok)
                reg_tok = term
            elif sym_tok is None:
                sym_tok = term
            else:
                self.error("an address has at most one symbol", st, col, tok)
        if not -(1 << 63) <= offset < (1 << 63):
            self.error("address offset out of the 64-bit range", st, col, tok)
        if space == "param":
            p = next((p for p in self.params if p.name == sym_tok), None) if sym_tok else None
            if p is None or reg_tok is not None:
                self.error("expected a kernel parameter name in ld.param", st, col, sym_tok or tok)
            size = max(q.offset + TYPES[q.type].bytes for q in self.params)
            width = TYPES[ins["types"][0]].bytes
            if not 0 <= p.offset + offset <= size - width:
                self.error(f"ld.param reads {width} bytes at offset {p.offset + offset}, outside the "
                           f"{size}-byte parameter block", st, col, tok)
            return Operand("addr", "", -1, p.offset + offset, p.name)
        base = -1
        if reg_tok is not None:
            reg = self.regs.get(reg_tok)
            if reg is None:
                self.error("undefined register", st, col, reg_tok)
            t = TYPES[reg.type]
            if not t.is_int:
                self.error(f"address register {reg_tok} is .{reg.type}; expected an integer register", st, col, tok)
            if space == "global" and t.bits != 64:
                self.error(f"global addresses are 64-bit: {reg_tok} is .{reg.type}; expected .u64", st, col, tok)
            base = reg.index
        name = ""
        if sym_tok is not None:
            sym = next((v for v in self.shared if v.name == sym_tok), None)
            if sym is None or space != "shared":
                self.error(f"undefined symbol in a .{space} address", st, col, sym_tok)
            offset += sym.offset
            name = sym.name
        return Operand("addr", "", base, offset, name)

    # ---- driver -------------------------------------------------------------------------------
    def run(self) -> Program:
        stmts = list(_statements(self.text))
        # pass 1: labels and declarations; instruction statements are kept in order
        instr_stmts = []
        for st in stmts:
            while True:
                m = _LABEL_RE.match(st.text)
                if not m or st.text.startswith("."):
                    break
                name = m.group(1)
                if name in self.labels:
                    self.error(f"label '{name}' defined twice", st, token=name)
                self.labels[name] = len(instr_stmts)
                self.label_lines[name] = st.line
                self.label_order.append((name, len(instr_stmts)))
                rest = st.text[m.end():]
                stripped = rest.lstrip()
                st = _Stmt(st.line, st.col + m.end() + len(rest) - len(stripped), stripped)
                if not stripped:
                    break
            if not st.text:
                continue
            if st.text.startswith("."):
                if instr_stmts and st.text.split()[0] in (".param", ".kernel", ".entry"):
                    self.error("declarations must come before the first instruction", st,
                               token=st.text.split()[0])
                self.directive(st)
            else:
                if self.name is None:
                    self.error("expected .kernel NAME before the first instruction", st,
                               token=st.text.split()[0])
                instr_stmts.append(st)
        if self.name is None:
            raise AssemblyError("no .kernel declared", file=self.file, line=1, col=1)
        for st in instr_stmts:
            self.instruction(st)
        # pass 2: operands (labels are known now)
        instrs = []
        for pc, (st, ins) in enumerate(self.pending):
            instrs.append(self.build(pc, st, ins))
        if not instrs or not (instrs[-1].opcode in ("exit", "bra") and instrs[-1].guard < 0):
            last_line = instrs[-1].line if instrs else 1
            instrs.append(Instruction(len(instrs), "exit", (), (), (), (), Unit.BRANCH, line=last_line,
                                      text="exit (implicit, at the end of the kernel)"))
        for name, pc in self.label_order:
            if pc >= len(instrs):
                raise AssemblyError(f"label '{name}' at the end of the kernel marks no instruction",
                                    file=self.file, line=self.label_lines[name], col=1, token=name)
        instrs_t = tuple(instrs)
        reconv = reconvergence_points(instrs_t)
        instrs_t = tuple(replace(i, reconv=reconv[i.pc]) if i.pc in reconv else i for i in instrs_t)
        regs = tuple(self.regs.values())
        return Program(
            name=self.name, params=tuple(self.params), registers=regs, shared=tuple(self.shared),
            instructions=instrs_t, labels=tuple(self.label_order), maxnreg=self.maxnreg,
            live_registers=peak_live_registers(instrs_t, [r.type for r in regs]), source=self.file,
        )

    def build(self, pc: int, st: _Stmt, ins: dict) -> Instruction:
        spec, types, quals, sig = ins["spec"], ins["types"], ins["quals"], ins["sig"]
        itype = TYPES[types[0]] if types else None
        dsts, srcs, target = [], [], -1
        wide = "wide" in quals
        if wide and not (itype and itype.is_int and itype.bits in (16, 32)):
            self.error(".wide needs a 16- or 32-bit integer type", st, token=".".join((spec.name, *quals, *types)))
        mnem = ".".join((spec.name, *quals, *types))
        if spec.name in ("mul", "mad") and itype and itype.is_float and set(quals) & {"lo", "hi", "wide"}:
            self.error(".lo/.hi/.wide apply to integer multiplies only", st, token=mnem)
        if itype and itype.is_int and set(quals) & {"rn", "approx", "full"}:
            self.error("rounding qualifiers (.rn/.approx/.full) apply to floating-point types only", st,
                       token=mnem)
        if spec.name in ("sin", "cos", "ex2", "lg2", "rsqrt") and "rn" in quals:
            self.error(f"{spec.name} is approximate: use .approx", st)
        if why := type_rule(spec.name, quals, types):
            self.error(why, st, token=mnem)
        if spec.name == "mma":
            return self._mma(pc, st, ins, mnem)
        if spec.name == "ldmatrix":
            return self._ldmatrix(pc, st, ins, mnem)
        if spec.name == "cp" and sig == "MMsu":
            return self._cp_async(pc, st, ins, mnem)
        if spec.name == "cvt" and types[0] in PACKED_CVT:
            return self._cvt_packed(pc, st, ins, mnem)
        if spec.name == "mov" and any(tok.startswith("{") for tok, _ in ins["toks"]):
            return self._mov_halves(pc, st, ins, mnem)
        if itype and itype.name in ("bf16", "tf32") and spec.name not in ("cvt", "mov", "ld", "st"):
            self.error(f".{itype.name} is a storage format here: {spec.name} does not compute on it (cvt it to "
                       ".f32)", st, token=mnem)
        if spec.name == "cvt" and "tf32" in types and (types != ("tf32", "f32") or "rna" not in quals):
            self.error("tf32 conversions are cvt.rna.tf32.f32 only", st, token=mnem)
        if spec.name == "cvt" and "rna" in quals and "tf32" not in types:
            self.error(".rna applies to cvt.rna.tf32.f32 only", st, token=mnem)
        nan_cmp = set(quals) & {"equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}
        if spec.name == "setp" and itype and not itype.is_float and nan_cmp:
            self.error(f"setp.{nan_cmp.pop()} tests for NaN and needs a float type", st, token=mnem)
        for i, (letter, (tok, col)) in enumerate(zip(sig, ins["toks"], strict=False)):
            t = itype
            if letter == "u":
                t = TYPES["u32"]
            elif spec.name == "cvt":
                t = TYPES[types[0]] if letter == "d" else TYPES[types[1]]
            elif wide and (letter == "d" or (spec.name == "mad" and i == 3)):
                t = widened(itype)
            if spec.name == "vote" and letter == "d":
                t = itype if itype.name in ("b32", "b64") else TYPES["pred"]
                if itype.name == "pred" and "ballot" in quals:
                    self.error("vote.ballot gives a .b32 or .b64 mask", st,
                               token=".".join((spec.name, *quals, *types)))
                if itype.name in ("b32", "b64") and "ballot" not in quals:
                    self.error("vote.any/.all give a .pred", st, token=".".join((spec.name, *quals, *types)))
            vec = 4 if "v4" in quals else 2 if "v2" in quals else 1
            if vec > 1 and letter == ("d" if spec.name == "ld" else "s"):  # {r0, r1[, r2, r3]}
                inner = _split_operands(tok[1:-1], col + 1) if tok.startswith("{") and tok.endswith("}") else []
                if len(inner) != vec:
                    self.error(f"expected {{...}} with {vec} registers for .v{vec}", st, col, tok)
                ops = [self.operand(st, letter, t2, c2, t, ins) for t2, c2 in inner]
                (dsts if letter == "d" else srcs).extend(ops)
                continue
            op = self.operand(st, letter, tok, col, t, ins)
            if letter == "L":
                target = op.value
                srcs.append(op)
            elif letter in "dP" or (letter == "M" and spec.name in ("st", "red")):
                dsts.append(op)
            else:
                srcs.append(op)
        unit = spec.unit_for(types[0] if types else None)
        if spec.name == "div" and itype and itype.kind == "f" and itype.bits <= 32:
            unit = Unit.SFU
        if spec.name == "cvt" and "f64" in types:
            unit = Unit.FP64
        if spec.name == "cp":  # commit_group / wait_group: the warp's bookkeeping of its copy groups
            unit = Unit.SYNC
        return Instruction(pc, spec.name, quals, types, tuple(dsts), tuple(srcs), unit, ins["guard"],
                           ins["guard_neg"], target, line=st.line, text=st.text)


    # ---- tensor-core and asynchronous-copy instructions -----------------------------------------
    def _regs_in_braces(self, st, tok: str, col: int, n: int, what: str, ok, want: str, ins) -> list[Operand]:
        """`{%r0, %r1, ...}`: n registers, each of a type `ok` accepts (named `want` in the error)."""
        inner = _split_operands(tok[1:-1], col + 1) if tok.startswith("{") and tok.endswith("}") else []
        if len(inner) != n:
            self.error(f"expected {{...}} with {n} registers for {what}", st, col, tok)
        out = []
        for t2, c2 in inner:
            reg = self.regs.get(t2)
            if reg is None:
                self.error("undefined register", st, c2, t2)
            if not ok(TYPES[reg.type]):
                self.error(f"type mismatch: {t2} is .{reg.type}; {what} needs {want}", st, c2, t2)
            out.append(Operand("reg", reg.type, reg.index))
        return out

    def _mma(self, pc: int, st: _Stmt, ins: dict, mnem: str) -> Instruction:
        quals, types = ins["quals"], ins["types"]
        shape = next(q for q in quals if q in MMA_FRAGMENT_REGS)
        dt, at, bt, ct = types
        ok_in = MMA_SHAPES[shape]
        acc = "s32" if shape == "m16n8k32" else "f32"
        if at not in ok_in or bt not in ok_in or (at != bt and shape != "m16n8k32") or dt != acc or ct != acc:
            self.error(f"mma.{shape} takes .{acc}.AT.BT.{acc} with AT, BT among "
                       + ", ".join("." + t for t in ok_in) + " (A and B alike for floats)", st, token=mnem)
        if "satfinite" in quals and acc != "s32":
            self.error(".satfinite applies to integer mma only", st, token=mnem)
        if quals.index("row") > quals.index("col"):
            self.error("mma takes .row.col (A row-major, B column-major)", st, token=mnem)
        nd, na, nb, nc = MMA_FRAGMENT_REGS[shape]
        toks = ins["toks"]
        word = lambda t: t.bits == 32 and t.kind != "pred"  # noqa: E731
        accum = lambda t: t.name == acc or (t.bits == 32 and t.kind == "b")  # noqa: E731
        d = self._regs_in_braces(st, *toks[0], nd, "the D fragment", accum, f"a .{acc} register", ins)
        a = self._regs_in_braces(st, *toks[1], na, "the A fragment", word, "a 32-bit register", ins)
        b = self._regs_in_braces(st, *toks[2], nb, "the B fragment", word, "a 32-bit register", ins)
        c = self._regs_in_braces(st, *toks[3], nc, "the C fragment", accum, f"a .{acc} register", ins)
        return Instruction(pc, "mma", quals, types, tuple(d), tuple(a + b + c), Unit.TENSOR, ins["guard"],
                           ins["guard_neg"], line=st.line, text=st.text)

    def _ldmatrix(self, pc: int, st: _Stmt, ins: dict, mnem: str) -> Instruction:
        quals = ins["quals"]
        n = int(next(q for q in quals if q in ("x1", "x2", "x4"))[1])
        (dtok, dcol), (atok, acol) = ins["toks"]
        word = lambda t: t.bits == 32 and t.kind != "pred"  # noqa: E731
        d = self._regs_in_braces(st, dtok if dtok.startswith("{") else "{" + dtok + "}", dcol, n,
                                 f"ldmatrix .x{n}", word, "a 32-bit register", ins)
        addr = self.address(st, atok, acol, ins)
        return Instruction(pc, "ldmatrix", quals, ins["types"], tuple(d), (addr,), Unit.LDST, ins["guard"],
                           ins["guard_neg"], line=st.line, text=st.text)

    def _cp_async(self, pc: int, st: _Stmt, ins: dict, mnem: str) -> Instruction:
        (dtok, dcol), (stok, scol), (ntok, ncol) = ins["toks"][:3]
        dst = self.address(st, dtok, dcol, ins, "shared")
        src = self.address(st, stok, scol, ins, "global")
        size = _int_literal(ntok)
        allowed = (16,) if "cg" in ins["quals"] else (4, 8, 16)
        if size not in allowed:
            self.error(f"expected a copy size of {' or '.join(map(str, allowed))} bytes", st, ncol, ntok)
        srcs = [src, Operand("imm", "u32", value=size)]
        if len(ins["toks"]) == 4:  # src-size: the bytes read from global memory, the rest of the copy zeroed
            (ztok, zcol) = ins["toks"][3]
            srcs.append(self.operand(st, "u", ztok, zcol, TYPES["u32"], ins))
            if srcs[-1].kind == "imm" and not 0 <= srcs[-1].value <= size:
                self.error(f"src-size must be 0..{size} (the copy's size)", st, zcol, ztok)
        return Instruction(pc, "cp", ins["quals"], (), (dst,), tuple(srcs), Unit.LDST,
                           ins["guard"], ins["guard_neg"], line=st.line, text=st.text)

    def _cvt_packed(self, pc: int, st: _Stmt, ins: dict, mnem: str) -> Instruction:
        """`cvt.rn.f16x2.f32 d, a, b` (or .rz, .bf16x2): a and b rounded to f16 (bf16) and packed in the
        32-bit d, a's in the upper half and b's in the lower (PTX's order; sm_80's one F2FP instruction)."""
        quals, types = ins["quals"], ins["types"]
        if types[1] != "f32" or not set(quals) & {"rn", "rz"} or not set(quals) <= {"rn", "rz"}:
            self.error(f"cvt.{types[0]} is cvt.rn.{types[0]}.f32 or cvt.rz.{types[0]}.f32 (.rn or .rz required)",
                       st, token=mnem)
        (dtok, dcol), (atok, acol), (btok, bcol) = ins["toks"]
        d = self.operand(st, "d", dtok, dcol, TYPES["b32"], ins)
        a = self.operand(st, "s", atok, acol, TYPES["f32"], ins)
        b = self.operand(st, "s", btok, bcol, TYPES["f32"], ins)
        return Instruction(pc, "cvt", quals, types, (d,), (a, b), Unit.INT, ins["guard"], ins["guard_neg"],
                           line=st.line, text=st.text)

    def _mov_halves(self, pc: int, st: _Stmt, ins: dict, mnem: str) -> Instruction:
        """`mov.b32 d, {lo, hi}` packs two 16-bit registers into one (`mov.b64`: two 32-bit ones), the
        first in the low half; `mov.b32 {lo, hi}, a` unpacks one. PTX's vector move of a register's halves."""
        types = ins["types"]
        whole = TYPES[types[0]]
        if whole.name not in ("b32", "b64"):
            self.error("a move of {halves} is mov.b32 or mov.b64", st, token=mnem)
        half = lambda t: t.bits == whole.bits // 2 and t.kind != "pred"  # noqa: E731
        want = f"a {whole.bits // 2}-bit register"
        (dtok, dcol), (stok, scol) = ins["toks"]
        if dtok.startswith("{") == stok.startswith("{"):
            self.error("expected one {lo, hi} pair and one register", st, dcol, dtok)
        if dtok.startswith("{"):  # unpack
            dsts = self._regs_in_braces(st, dtok, dcol, 2, f"the halves of a .{whole.name}", half, want, ins)
            srcs = [self.operand(st, "s", stok, scol, whole, ins)]
        else:  # pack
            dsts = [self.operand(st, "d", dtok, dcol, whole, ins)]
            srcs = self._regs_in_braces(st, stok, scol, 2, f"the halves of a .{whole.name}", half, want, ins)
        if srcs[0].kind != "reg":
            self.error("expected a register", st, scol, stok)
        return Instruction(pc, "mov", ins["quals"], types, tuple(dsts), tuple(srcs), Unit.INT, ins["guard"],
                           ins["guard_neg"], line=st.line, text=st.text)


def assemble(text: str, file: str = "<string>") -> Program:
    """Assemble `.sasm` source text into a Program."""
    return _Assembler(text, file).run()


def assemble_file(path: str | Path) -> Program:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AssemblyError(f"cannot read kernel: {exc.strerror}", file=str(path), line=0, col=0) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        lines = data[:exc.start].replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        raise AssemblyError(f"not UTF-8 text: byte {data[exc.start]:#04x}", file=str(path), line=len(lines),
                            col=len(lines[-1].decode("utf-8")) + 1) from None
    return assemble(text, str(path))
