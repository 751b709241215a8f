"""Two dependent integer adds fused into one three-input add, as ptxas does (SASS's IADD3: the H200
measures 126 `add.u32` per clock per SM through 63 IADD3s, validation/cuda/microbench.cu's op_iadd).

In one basic block, `add.T a, x, y` followed by `add.T d, a, z` (or `d, z, a`) becomes
`add3.T d, x, y, z` in the second one's place, the first removed, when
- both are unguarded, of the same integer type (32 or 64 bits), without `.sat`;
- the second reads a once and is the only reader of the first one's result (no read of a in between,
  and a is dead after the second unless the second overwrites it);
- x and y are not written in between (so they still hold what the first one read).
An immediate may be any of the three inputs (ptxas would also add two immediates into one: the
instruction count is the same)."""

from __future__ import annotations

from dataclasses import replace

from gpusim.isa.program import Instruction, Program
from gpusim.isa.ptxas.code import Code, Label, basic_blocks, make
from gpusim.isa.ptxas.dataflow import liveness
from gpusim.isa.types import TYPES


def _fusable(ins: Instruction) -> bool:
    return (ins.opcode == "add" and ins.guard < 0 and bool(ins.types) and TYPES[ins.type].is_int
            and TYPES[ins.type].bits >= 32 and "sat" not in ins.quals and ins.dsts[0].kind == "reg")


def fuse_adds(prog: Program) -> Program:
    _, live_out = liveness(prog)
    instrs = prog.instructions
    code = Code.of(prog)
    blocks = basic_blocks(code)
    replaced: dict[int, Instruction] = {}
    removed: set[int] = set()
    for block in blocks:
        last_def: dict[int, int] = {}  # register -> pc of its latest writer in the block so far
        for pc in block:
            ins = replaced.get(pc, instrs[pc])
            fused = _fuse(ins, last_def, instrs, replaced, removed, live_out) if _fusable(ins) else None
            if fused is not None:
                first, new = fused
                removed.add(first)
                replaced[pc] = ins = new
            for r in ins.regs_written():
                last_def[r] = pc
    if not removed:
        return prog
    code.items = [it if isinstance(it, Label) else replaced.get(it.pc, it) for it in code.items
                  if isinstance(it, Label) or it.pc not in removed]
    return code.build()


def _fuse(ins: Instruction, last_def: dict[int, int], instrs, replaced, removed, live_out):
    d = ins.dsts[0].reg
    for k, a in enumerate(ins.srcs):
        if a.kind != "reg" or a.reg not in last_def:
            continue
        i = last_def[a.reg]
        first = replaced.get(i, instrs[i])
        if i in removed or not _fusable(first) or first.type != ins.type or first.dsts[0].reg != a.reg:
            continue
        other = ins.srcs[1 - k]
        if other.kind == "reg" and other.reg == a.reg:
            continue  # a + a: a is read twice
        if a.reg != d and live_out[ins.pc] >> a.reg & 1:
            continue  # the first add's result is read later too
        between = [replaced.get(p, instrs[p]) for p in range(i + 1, ins.pc) if p not in removed]
        if any(a.reg in b.regs_read() for b in between):
            continue
        inputs = {o.reg for o in first.srcs if o.kind == "reg"}
        if any(inputs & set(b.regs_written()) for b in between):
            continue
        new = make("add3", ins.types, ins.dsts, (*first.srcs, other), like=ins)
        return i, replace(new, pc=ins.pc)
    return None
