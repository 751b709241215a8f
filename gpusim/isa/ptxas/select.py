"""A select of an operation's result folded into the operation, predicated, as ptxas does: where
reduce_sum_shfl's PTX has `add.f32 %f10, %f46, %f9; selp.f32 %f11, %f10, %f46, %p3` (v += t where a
lane's partner exists), its SASS has one `@!P2 FADD R4, R15, R4`, the sum written over the value it
replaces only where the predicate holds.

In one basic block, `OP t, ...` (an unguarded ALU instruction writing one register) and a later
`selp d, t, a, p` (or `selp d, a, t, p`: the operation where p is false) become `@p OP a, ...` (`@!p`)
in the selp's place, and every read of d reads a, when
- the selp is unguarded and `a` is a register whose value nothing else reads after it (the sum takes
  its place, as the register allocator gives d and a one register);
- t is read by the selp alone, and what OP reads is not written in between;
- d is written by the selp alone, and a is not written on any path from the selp to a read of d;
- OP's result type may name a's register (the types PTX allows)."""

from __future__ import annotations

from dataclasses import replace

from gpusim.isa.program import Instruction, Program
from gpusim.isa.ptxas.code import Code, Label, basic_blocks
from gpusim.isa.ptxas.dataflow import available, liveness
from gpusim.isa.ptxas.fold import is_alu
from gpusim.isa.types import TYPES, compatible

MAX_ROUNDS = 256  # one fold a round (each changes the liveness of the next)


def predicate_selects(prog: Program) -> Program:
    for _ in range(MAX_ROUNDS):
        new = _fold_one(prog)
        if new is None:
            return prog
        prog = new
    return prog


def _fold_one(prog: Program) -> Program | None:
    instrs = prog.instructions
    _, live_out = liveness(prog)
    writers: dict[int, list[int]] = {}
    for ins in instrs:
        for r in ins.regs_written():
            writers.setdefault(r, []).append(ins.pc)
    for block in basic_blocks(Code.of(prog)):
        last_def: dict[int, int] = {}
        for pc in block:
            j = instrs[pc]
            if j.opcode == "selp" and j.guard < 0:
                found = _candidate(prog, j, last_def, live_out, writers)
                if found is not None:
                    return _rewrite(prog, *found)
            for r in j.regs_written():
                last_def[r] = pc
    return None


def _candidate(prog: Program, j: Instruction, last_def: dict[int, int], live_out: list[int],
               writers: dict[int, list[int]]):
    instrs = prog.instructions
    d = j.dsts[0].reg
    a_op, b_op, p_op = j.srcs
    for t_op, other, negate in ((a_op, b_op, False), (b_op, a_op, True)):
        if t_op.kind != "reg" or other.kind != "reg" or t_op.reg == other.reg or t_op.reg not in last_def:
            continue
        t, a = t_op.reg, other.reg
        i = instrs[last_def[t]]
        if not is_alu(i) or i.guard >= 0 or len(i.dsts) != 1 or i.opcode in ("mov", "selp", "setp"):
            continue
        if t == d or t == a or (live_out[j.pc] >> t & 1):
            continue
        if a != d and (live_out[j.pc] >> a & 1):
            continue  # a's value is read later: it cannot take the sum's place
        if writers.get(d) != [j.pc]:
            continue
        if not compatible(TYPES[i.dsts[0].type], TYPES[prog.registers[a].type]):
            continue
        between = instrs[i.pc + 1:j.pc]
        inputs = set(i.regs_read())
        if any(t in b.regs_read() or inputs & set(b.regs_written()) for b in between):
            continue
        if a != d and not _a_holds_at_reads_of_d(prog, j.pc, d, a):
            continue
        return i.pc, j.pc, a, d, p_op.reg, p_op.negate != negate
    return None


def _a_holds_at_reads_of_d(prog: Program, at: int, d: int, a: int) -> bool:
    """Is `d = a` (made at pc `at`) still true wherever d is read: no write of a or d on the way?"""
    n = len(prog.instructions)
    gen = [0] * n
    gen[at] = 1
    kill = [1 if (a in ins.regs_written() or d in ins.regs_written()) else 0 for ins in prog.instructions]
    kill[at] = 0
    avail = available(prog, gen, kill)
    return all(avail[ins.pc] for ins in prog.instructions if d in ins.regs_read())


def _rewrite(prog: Program, i_pc: int, j_pc: int, a: int, d: int, p: int, negate: bool) -> Program:
    i = prog.instructions[i_pc]
    folded = replace(i, dsts=(replace(i.dsts[0], reg=a),), guard=p, guard_negate=negate)

    def ren(o):
        return replace(o, reg=a) if o.kind in ("reg", "addr") and o.reg == d else o

    code = Code.of(prog)
    items = []
    for it in code.items:
        if isinstance(it, Label):
            items.append(it)
        elif it.pc == i_pc:
            continue
        elif it.pc == j_pc:
            items.append(folded)
        elif d != a and d in it.regs_read():
            items.append(replace(it, srcs=tuple(map(ren, it.srcs)), dsts=tuple(
                o if o.kind == "reg" else ren(o) for o in it.dsts), guard=a if it.guard == d else it.guard))
        else:
            items.append(it)
    code.items = items
    return code.build()
