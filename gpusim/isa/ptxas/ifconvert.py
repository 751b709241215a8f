"""If-conversion: a short forward branch around straight-line code becomes that code predicated, as ptxas
does. Where reduce_sum_shfl's PTX has

        setp.ge.u32 %p1, %r7, %r18          // i >= n
        @%p1 bra $L__BB0_2                  // skip the load
        mul.wide.u32 %rd4, %r7, 4
        add.s64 %rd5, %rd1, %rd4
        ld.global.f32 %f46, [%rd5]
    $L__BB0_2:

its sm_90 SASS has `@!P0 IMAD.WIDE.U32 R6, R5, 0x4, R6` and `@!P0 LDG.E R4, desc[UR6][R6.64]`, no branch;
likewise `if (lane == 0) warpsum[warp] = v` is `@!P1 STS` (the kernel's SASS has no divergent branch at
all). A warp then never splits there: the lanes whose guard is false do nothing, and it pays no change of
its active threads (`units.branch.divergence_cycles`).

`@p bra L` (or `@!p bra L`), L later in the kernel, becomes nothing, and each instruction between the
branch and L is guarded `@!p` (`@p`), when
- nothing between them is a label (no other way in) and there are 1..MAX_CONVERTED instructions;
- none of them is guarded already, branches, exits, or is a barrier, fence or warp-synchronous operation
  (bar, membar, fence, shfl, vote, mma, ldmatrix, cp.async: their lanes act together);
- none of them writes p.
L goes when no branch names it any more, so the code before, the predicated code and the code after it
become one basic block for the scheduler. Lanes whose guard is false keep their registers and touch no
memory, as the lanes that branched around the code did: every value is the same."""

from __future__ import annotations

from dataclasses import replace

from gpusim.isa.program import Instruction, Program
from gpusim.isa.ptxas.code import Code, Label, target_name

# instructions a branch may skip and still be predicated: a model assumption (ptxas's own limit is not
# published; the branches the project's sm_90 SASS predicates skip 1-3 instructions, nvcc's PTX of them 4-5)
MAX_CONVERTED = 6
NOT_PREDICATED = frozenset({"bra", "exit", "ret", "bar", "membar", "fence", "shfl", "vote", "mma", "ldmatrix",
                            "cp"})


def if_convert(prog: Program) -> Program:
    code = Code.of(prog)
    items = code.items
    changed = False
    k = 0
    while k < len(items):
        found = _skipped(items, k)
        if found is None:
            k += 1
            continue
        br, end = items[k], found
        guarded = [replace(ins, guard=br.guard, guard_negate=not br.guard_negate) for ins in items[k + 1:end]]
        items[k:end] = guarded
        changed = True
        label = items[k + len(guarded)]
        if not any(isinstance(it, Instruction) and it.opcode == "bra" and target_name(it) == label.name
                   for it in items):
            del items[k + len(guarded)]
    if not changed:
        return prog
    return code.build()


def _skipped(items: list, k: int) -> int | None:
    """The index of the label that the branch at `items[k]` skips to, when the code between can be
    predicated instead; None otherwise."""
    br = items[k]
    if isinstance(br, Label) or br.opcode != "bra" or br.guard < 0:
        return None
    name = target_name(br)
    end = k + 1
    while end < len(items) and not isinstance(items[end], Label):
        ins = items[end]
        if ins.guard >= 0 or ins.opcode in NOT_PREDICATED or br.guard in ins.regs_written():
            return None
        end += 1
        if end - k - 1 > MAX_CONVERTED:
            return None
    if end == k + 1 or end >= len(items) or items[end].name != name:
        return None
    return end
