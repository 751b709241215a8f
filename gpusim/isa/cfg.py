"""Control-flow graph of a kernel, its immediate post-dominators (where divergent lanes reconverge)
and register liveness (how many registers a thread needs)."""

from __future__ import annotations

from dataclasses import dataclass

from gpusim.isa.program import EXIT_PC, Instruction
from gpusim.isa.types import TYPES


@dataclass(frozen=True, slots=True)
class BasicBlock:
    index: int
    start: int  # first pc
    end: int  # last pc (inclusive)
    succs: tuple[int, ...]  # successor block indices; -1 is the virtual exit


def _ends_block(ins: Instruction) -> bool:
    return ins.opcode == "bra" or (ins.opcode == "exit" and ins.guard < 0)


def instruction_successors(ins: Instruction, n: int) -> tuple[int, ...]:
    """Successor pcs of one instruction; EXIT_PC for leaving the kernel. A guarded `exit` falls
    through for the lanes that stay."""
    if ins.opcode == "exit" and ins.guard < 0:
        return (EXIT_PC,)
    if ins.opcode == "bra":
        if ins.guard < 0:
            return (ins.target,)
        return (ins.pc + 1, ins.target) if ins.pc + 1 < n else (ins.target,)
    return (ins.pc + 1,) if ins.pc + 1 < n else (EXIT_PC,)


def build_cfg(instrs: tuple[Instruction, ...]) -> list[BasicBlock]:
    n = len(instrs)
    leaders = {0}
    for ins in instrs:
        if ins.opcode == "bra":
            leaders.add(ins.target)
        if _ends_block(ins) and ins.pc + 1 < n:
            leaders.add(ins.pc + 1)
    starts = sorted(s for s in leaders if s < n)
    block_of = {}
    spans = []
    for i, s in enumerate(starts):
        e = (starts[i + 1] if i + 1 < len(starts) else n) - 1
        spans.append((s, e))
        block_of[s] = i
    blocks = []
    for i, (s, e) in enumerate(spans):
        succ = tuple(dict.fromkeys(block_of.get(p, -1) if p != EXIT_PC else -1
                                   for p in instruction_successors(instrs[e], n)))
        blocks.append(BasicBlock(i, s, e, succ))
    return blocks


def immediate_postdominators(blocks: list[BasicBlock]) -> list[int]:
    """ipdom block index of each block; -1 means the virtual exit (also for blocks that cannot reach
    the exit, such as an endless loop)."""
    nb = len(blocks)
    exit_node = nb
    # None stands for "every node" (not yet known to reach the exit)
    pdom: list[frozenset | None] = [None] * nb + [frozenset({exit_node})]
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            known = [pdom[exit_node if s < 0 else s] for s in b.succs]
            known = [k for k in known if k is not None]
            if not known:
                continue
            new = frozenset({b.index}) | frozenset.intersection(*known)
            if new != pdom[b.index]:
                pdom[b.index] = new
                changed = True
    ipdom = []
    for b in blocks:
        if pdom[b.index] is None:
            ipdom.append(-1)
            continue
        strict = pdom[b.index] - {b.index}
        # the closest strict post-dominator is the one post-dominated by all the others
        best = max(strict, key=lambda d: len(pdom[d]))
        ipdom.append(-1 if best == exit_node else best)
    return ipdom


def reconvergence_points(instrs: tuple[Instruction, ...]) -> dict[int, int]:
    """pc of each guarded branch -> pc where its lanes reconverge (EXIT_PC for the kernel's end)."""
    blocks = build_cfg(instrs)
    ipdom = immediate_postdominators(blocks)
    out = {}
    for b in blocks:
        ins = instrs[b.end]
        if ins.opcode == "bra" and ins.guard >= 0:
            out[ins.pc] = blocks[ipdom[b.index]].start if ipdom[b.index] >= 0 else EXIT_PC
    return out


def peak_live_registers(instrs: tuple[Instruction, ...], reg_types: list[str]) -> int:
    """Peak number of live 32-bit register slots over the kernel (backward dataflow liveness).
    A 64-bit register takes two slots; predicates live in their own file and take none. A guarded
    write does not end a register's previous life."""
    n = len(instrs)
    slots = [0 if t == "pred" else max(1, TYPES[t].bits // 32) for t in reg_types]
    use = [frozenset(i.regs_read()) for i in instrs]
    kill = [frozenset(i.regs_written()) if i.guard < 0 else frozenset() for i in instrs]
    defs = [frozenset(i.regs_written()) for i in instrs]
    succ = [tuple(p for p in instruction_successors(i, n) if p != EXIT_PC) for i in instrs]
    live_in = [frozenset()] * n
    changed = True
    while changed:
        changed = False
        for pc in range(n - 1, -1, -1):
            out = frozenset().union(*(live_in[s] for s in succ[pc])) if succ[pc] else frozenset()
            new = use[pc] | (out - kill[pc])
            if new != live_in[pc]:
                live_in[pc] = new
                changed = True
    peak = 0
    for pc in range(n):
        out = frozenset().union(*(live_in[s] for s in succ[pc])) if succ[pc] else frozenset()
        peak = max(peak, sum(slots[r] for r in live_in[pc]), sum(slots[r] for r in out | defs[pc]))
    return peak
