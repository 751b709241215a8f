"""Constant increments of an address register folded into the addresses that follow them, as ptxas
does in an unrolled loop (matmul_naive's SASS reads A at `[R14.64]`, `[R14.64+0x4]`, `[R14.64+0x8]`,
`[R14.64+0xc]` and advances R14 once per trip).

In one basic block, `add r, r, C` (or `sub`; C an immediate; integer, unguarded, no `.sat`) is held
back: the loads and stores that use r as their address in the meantime add C to their offset, and one
`add r, r, <sum of the Cs>` stands where r is next read any other way, or at the block's end (before
its branch). An unguarded write of r before that makes the held increments dead: they are dropped."""

from __future__ import annotations

from dataclasses import replace

from gpusim.isa.program import Instruction, Program
from gpusim.isa.ptxas.code import Code, Label, imm, make, reg
from gpusim.isa.types import TYPES

MEMORY = frozenset({"ld", "st", "atom", "red"})


def _increment(ins: Instruction, prog: Program) -> tuple[int, int] | None:
    """(r, C) of `add r, r, C` / `sub r, r, C`, else None."""
    if ins.opcode not in ("add", "sub") or ins.guard >= 0 or "sat" in ins.quals or not ins.types:
        return None
    t = TYPES[ins.type]
    if not t.is_int or t.bits < 32 or ins.dsts[0].kind != "reg":
        return None
    r = ins.dsts[0].reg
    if TYPES[prog.registers[r].type].bits != t.bits:
        return None
    x, y = ins.srcs
    if ins.opcode == "add" and y.kind == "reg" and y.reg == r:
        x, y = y, x
    if x.kind != "reg" or x.reg != r or y.kind != "imm":
        return None
    v = int(y.value) & ((1 << t.bits) - 1)
    v = v - (1 << t.bits) if v >= 1 << (t.bits - 1) else v
    return r, -v if ins.opcode == "sub" else v


def _only_addresses(ins: Instruction, r: int) -> bool:
    """Does `ins` read r only as the base of its memory address (and not write it)?"""
    if ins.opcode not in MEMORY or ins.space == "param" or r in ins.regs_written() or ins.guard == r:
        return False
    return not any(o.kind == "reg" and o.reg == r for o in ins.srcs + ins.dsts)


def fold_increments(prog: Program) -> Program:
    code = Code.of(prog)
    items: list = []
    pending: dict[int, list] = {}  # r -> [sum of Cs, the first add (its type, line)]
    changed = False

    def flush(regs) -> None:
        for r in sorted(regs, key=lambda r: pending[r][1].pc):
            total, first = pending.pop(r)
            t = first.type
            if total & ((1 << TYPES[t].bits) - 1):
                items.append(make("add", (t,), (reg(r, t),), (reg(r, t), imm(total, t)), like=first))

    for it in code.items:
        if isinstance(it, Label):
            flush(list(pending))
            items.append(it)
            continue
        inc = _increment(it, prog)
        if inc is not None:
            r, c = inc
            if r in pending:
                pending[r][0] += c
                changed = True
            else:
                pending[r] = [c, it]
            continue
        if it.opcode in ("bra",) or (it.opcode == "exit" and it.guard < 0):
            flush(list(pending))
            items.append(it)
            continue
        read = set(it.regs_read())
        for r in [r for r in pending if r in read]:
            if _only_addresses(it, r):
                total = pending[r][0]
                it = replace(it, srcs=tuple(replace(o, value=o.value + total) if o.kind == "addr" and o.reg == r
                                            else o for o in it.srcs),
                             dsts=tuple(replace(o, value=o.value + total) if o.kind == "addr" and o.reg == r
                                        else o for o in it.dsts))
                changed = True
            else:
                flush([r])
        written = set(it.regs_written())
        for r in [r for r in pending if r in written]:
            if it.guard >= 0:
                flush([r])
            else:
                pending.pop(r)
                changed = True
        items.append(it)
    flush(list(pending))
    if not changed:
        return prog
    code.items = items
    return code.build()
