"""Disassembler: Program -> `.sasm` text, such that assemble(disassemble(p)) == p."""

from __future__ import annotations

import math
import struct

from gpusim.isa.program import Instruction, Operand, Program
from gpusim.isa.types import TYPES


def _imm(op: Operand) -> str:
    if op.type and TYPES[op.type].is_float:
        v = float(op.value)
        if not math.isfinite(v):
            if op.type == "f64":
                return "0d" + struct.pack(">d", v).hex().upper()
            return "0f" + struct.pack(">f", v).hex().upper()
        return repr(v)
    return str(int(op.value))


def _operand(op: Operand, prog: Program) -> str:
    if op.kind == "reg":
        return ("!" if op.negate else "") + prog.registers[op.reg].name
    if op.kind == "imm":
        return _imm(op)
    if op.kind in ("special", "sym", "label"):
        return op.name
    # address: [%reg + symbol + offset]
    parts = []
    off = op.value
    if op.reg >= 0:
        parts.append(prog.registers[op.reg].name)
    if op.name:
        sym = next((v for v in prog.shared if v.name == op.name), None) or next(
            p for p in prog.params if p.name == op.name)
        parts.append(op.name)
        off -= sym.offset
    text = "+".join(parts)
    if off or not parts:
        text += f"{'-' if off < 0 else ('+' if parts else '')}{abs(off)}"
    return f"[{text}]"


def format_instruction(ins: Instruction, prog: Program) -> str:
    guard = ""
    if ins.guard >= 0:
        guard = "@" + ("!" if ins.guard_negate else "") + prog.registers[ins.guard].name + " "
    dsts = [_operand(o, prog) for o in ins.dsts]
    srcs = [_operand(o, prog) for o in ins.srcs]
    if ins.opcode == "shfl" and len(dsts) == 2:  # `d|p`: the value and whether its source lane was valid
        dsts = ["|".join(dsts)]
    brace = lambda ops: "{" + ", ".join(ops) + "}"  # noqa: E731
    if ins.opcode == "mma":  # {d}, {a}, {b}, {c}: the warp's fragments
        na = 4
        dsts, srcs = [brace(dsts)], [brace(srcs[:na]), brace(srcs[na:na + 2]), brace(srcs[na + 2:])]
    elif ins.opcode == "ldmatrix" or (ins.opcode == "mov" and len(dsts) == 2):  # mov.b32 {lo, hi}, a
        dsts = [brace(dsts)]
    elif ins.opcode == "mov" and len(srcs) == 2:  # mov.b32 d, {lo, hi}
        srcs = [brace(srcs)]
    if ins.vector > 1:  # `{a, b, c, d}`: a vector load's destinations, a vector store's sources
        if ins.opcode == "ld":
            dsts = ["{" + ", ".join(dsts) + "}"]
        else:
            srcs = ["{" + ", ".join(srcs) + "}"]
    body = ", ".join([*dsts, *srcs])
    return f"{guard}{ins.mnemonic}{' ' + body if body else ''};"


def disassemble(prog: Program) -> str:
    lines = [f".kernel {prog.name}"]
    lines += [f".param .{p.type} {p.name}" for p in prog.params]
    if prog.maxnreg:
        lines.append(f".maxnreg {prog.maxnreg}")
    for r in prog.registers:
        lines.append(f".reg .{r.type} {r.name}")
    for v in prog.shared:
        lines.append(f".shared .align {v.align} .{v.type} {v.name}[{v.count}]")
    labels_at: dict[int, list[str]] = {}
    for name, pc in prog.labels:
        labels_at.setdefault(pc, []).append(name)
    for ins in prog.instructions:
        for name in labels_at.get(ins.pc, []):
            lines.append(f"{name}:")
        lines.append("    " + format_instruction(ins, prog))
    return "\n".join(lines) + "\n"
