"""Dataflow over a Program's instructions, register sets as Python int bitmasks (bit r: register r):
liveness (backward, may) and availability (forward, must: a fact holds at a point when every path
from the kernel's entry to it made it hold and nothing since undid it)."""

from __future__ import annotations

from collections.abc import Sequence

from gpusim.isa.cfg import instruction_successors
from gpusim.isa.program import EXIT_PC, Instruction, Program


def successors(prog: Program) -> list[tuple[int, ...]]:
    n = len(prog.instructions)
    return [tuple(p for p in instruction_successors(i, n) if p != EXIT_PC) for i in prog.instructions]


def predecessors(succ: Sequence[tuple[int, ...]]) -> list[list[int]]:
    pred: list[list[int]] = [[] for _ in succ]
    for pc, ss in enumerate(succ):
        for s in ss:
            pred[s].append(pc)
    return pred


def mask(regs) -> int:
    m = 0
    for r in regs:
        m |= 1 << r
    return m


def reads(ins: Instruction) -> int:
    return mask(ins.regs_read())


def writes(ins: Instruction) -> int:
    return mask(ins.regs_written())


def kills(ins: Instruction) -> int:
    """Registers whose earlier value the instruction ends: its writes, unless it is guarded (lanes whose
    guard is false keep the old value)."""
    return writes(ins) if ins.guard < 0 else 0


def liveness(prog: Program) -> tuple[list[int], list[int]]:
    """(live_in, live_out) per pc: the registers whose current value some later instruction may read."""
    instrs = prog.instructions
    n = len(instrs)
    succ = successors(prog)
    use = [reads(i) for i in instrs]
    kill = [kills(i) for i in instrs]
    live_in = [0] * n
    live_out = [0] * n
    changed = True
    while changed:
        changed = False
        for pc in range(n - 1, -1, -1):
            out = 0
            for s in succ[pc]:
                out |= live_in[s]
            new = use[pc] | (out & ~kill[pc])
            live_out[pc] = out
            if new != live_in[pc]:
                live_in[pc] = new
                changed = True
    return live_in, live_out


def available(prog: Program, gen: Sequence[int], kill: Sequence[int]) -> list[int]:
    """The facts (bits) available on entry to each pc: out = gen | (in & ~kill), in = the intersection
    of the predecessors' outs (nothing at the kernel's entry or where no path leads)."""
    n = len(prog.instructions)
    succ = successors(prog)
    pred = predecessors(succ)
    everything = 0
    for g in gen:
        everything |= g
    ins_ = [everything] * n
    ins_[0] = 0 if n else 0
    outs = [gen[pc] | (ins_[pc] & ~kill[pc]) for pc in range(n)]
    changed = True
    while changed:
        changed = False
        for pc in range(n):
            if pc == 0 or not pred[pc]:
                new_in = 0
            else:
                new_in = everything
                for p in pred[pc]:
                    new_in &= outs[p]
            if new_in != ins_[pc]:
                ins_[pc] = new_in
                changed = True
            out = gen[pc] | (new_in & ~kill[pc])
            if out != outs[pc]:
                outs[pc] = out
                changed = True
    return ins_
