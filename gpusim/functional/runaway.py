"""Evidence that a kernel never ends, for the runaway-loop guard (docs/robustness.md, "The runaway-loop
guard"). At default limits gpusim stops a kernel only on proof, not after a fixed count that real
kernels exceed:

- a warp whose active lanes stand at a pc from which no path of the control-flow graph leads out of the
  kernel (no `exit`, no return, no way to fall off its end): `trapped_pcs`, read from the program alone;
- a block, run alone (the runaway-loop probe), that comes back to a state it was in before — every
  warp's pc and SIMT stack, every register and predicate of its lanes, its barrier and exit state, its
  shared memory, and global memory — which it then repeats forever, since execution is deterministic:
  `StateWatch`, Brent's cycle detection over the probe's steps.

A loop whose state keeps changing and whose exit is never taken (a counter that never meets its bound)
is neither; the count `max_steps_per_warp` bounds it, as the user gives it or at its fallback default."""

from __future__ import annotations

import hashlib

import numpy as np

from gpusim.isa.opcodes import Unit
from gpusim.isa.program import Program

OUT = -1  # the virtual node standing for the kernel's end (an exit, a return, a fault)


def trapped_pcs(program: Program) -> np.ndarray:
    """[n] bool: pc p is True when no path from p reaches the kernel's end. Conservative: every control
    instruction but a plain branch (exit, return, call, indirect jumps, SASS's control ops) and every
    branch without a known target counts as a way out, and a guarded branch may go either way."""
    instrs = program.instructions
    n = len(instrs)
    preds: list[list[int]] = [[] for _ in range(n)]
    out = np.zeros(n, dtype=bool)  # pcs that can leave at once
    for ins in instrs:
        is_bra = ins.opcode.lower() == "bra"
        succs: list[int] = []
        if getattr(ins, "guard_false", False):  # (SASS's @!PT: never executes)
            succs.append(ins.pc + 1)
        elif is_bra and 0 <= ins.target < n:
            succs.append(ins.target)
            if ins.guard >= 0:
                succs.append(ins.pc + 1)
        elif ins.unit is Unit.BRANCH or is_bra:
            out[ins.pc] = True
            succs.append(ins.pc + 1)
        else:
            succs.append(ins.pc + 1)
        for s in succs:
            if s >= n:
                out[ins.pc] = True  # (running past the last instruction faults: the kernel ends)
            else:
                preds[s].append(ins.pc)
    leaves = out.copy()
    todo = list(np.flatnonzero(out))
    while todo:
        p = todo.pop()
        for q in preds[p]:
            if not leaves[q]:
                leaves[q] = True
                todo.append(q)
    return ~leaves


def block_state(one) -> bytes:
    """A digest of the state of a one-block batch (gpusim.functional.warps._Batch) but global memory."""
    st = one.stack
    h = hashlib.blake2b(digest_size=32)
    for a in (st.pc, st.active, st.rpc, st.depth, st.below_pc, st.below_mask, st.below_rpc, one.state, one.live,
              one.bar_pc, one.smem, one.cp_groups, *(r for r in one.R if r is not None)):
        h.update(np.ascontiguousarray(a).data)
    for pending in one.cp_pending:
        for a in pending:
            h.update(np.ascontiguousarray(a).data)
    return h.digest()


def memory_state(memory) -> bytes:
    return hashlib.blake2b(memory.buffer.data, digest_size=32).digest()


class StateWatch:
    """Brent's cycle detection over the steps of a block run alone: the state is saved at the block's
    steps 1, 2, 4, 8, ... and each later step whose pcs equal the saved ones is compared with it (the
    block's registers first; global memory, hashed, only when those match: a loop whose registers repeat
    while memory moves on has it hashed twice per save at most). `step()` is True once the block is back
    in the saved state: running alone, deterministically, it never ends."""

    def __init__(self, one, memory):
        self.one, self.memory = one, memory
        self.steps = 0
        self.next_save = 1
        self.saved_pc: np.ndarray | None = None
        self.saved: bytes = b""
        self.saved_memory: bytes | None = None  # hashed when needed
        self.saved_at = 0
        self.memory_differs = False

    @property
    def period(self) -> int:
        """Steps from the saved state to now."""
        return self.steps - self.saved_at

    def step(self) -> bool:
        self.steps += 1
        one = self.one
        if self.steps == self.next_save:
            self._save(None)
            self.next_save *= 2
            return False
        if not np.array_equal(one.stack.pc, self.saved_pc) or block_state(one) != self.saved:
            return False
        if self.memory_differs:
            return False  # (until the next save: memory is hashed twice at most between saves)
        now = memory_state(self.memory)
        if self.saved_memory is None:  # the registers repeat but memory was written: compare memory from here
            self._save(now)
            return False
        self.memory_differs = now != self.saved_memory
        return not self.memory_differs

    def _save(self, memory: bytes | None) -> None:
        self.saved_pc = self.one.stack.pc.copy()
        self.saved = block_state(self.one)
        self.saved_memory = memory
        self.memory_differs = False
        self.saved_at = self.steps
