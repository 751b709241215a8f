"""What SASS instructions compute: each instruction of a batch turned into a closure over the batch's
registers and memory, for the warp scheduler (`warps.WarpScheduler`) to run, as `ptx_ops.PtxOps` does for
PTX. Registers are one uint32 numpy array per register over the batch's lanes (R0..Rn, UR0..UR62 — a
uniform register holds its warp's one value in every lane), predicates bool arrays; a 64-bit operand is
a register pair (Rn low, Rn+1 high). The numeric rules are in `sass_semantics`.

Control flow runs on the scheduler's SIMT stack: a divergent `BRA` reconverges at its immediate
post-dominator, which is where ptxas puts the BSYNC of the convergence barrier (BSSY) bracketing it, so
BSSY/BSYNC/WARPSYNC need no state of their own; CALL jumps, RET jumps to the address its register holds.
Constant bank 0 holds the launch's block and grid sizes (c[0x0][0x0..0x14]), the local stack's top
(c[0x0][0x28]) and the parameters (from the cubin's parameter offset). Every form outside what is
implemented is refused when the kernel is decoded (a KernelFault naming the instruction), never run with
a wrong value."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusim.functional.sass_arith import SassArith
from gpusim.functional.sass_memory import SassMemory
from gpusim.functional.sass_operands import NOOPS, Unsupported
from gpusim.functional.warps import _Batch
from gpusim.isa.sass.layout import n_sources


class SassOps(SassArith, SassMemory):
    """The SASS decoder, mixed into the Executor: decode and control flow here, the opcodes' closures in
    `sass_arith.py` and `sass_memory.py`, the operands in `sass_operands.py`."""

    # ---- decode ----------------------------------------------------------------------------------------
    def _decode_sass(self, ins, b: _Batch) -> Callable:
        op = ins.opcode
        if ins.guard_false:  # @!PT: never executes
            return self._advance(ins, b, lambda G, lanes: None)
        if op == "BRA":
            return self._branch(ins, b)
        if op == "EXIT":
            return self._exit(ins, b)
        if op == "BAR":
            if set(ins.mods) & {"ARV"}:
                return self._sass_fault(ins, b, "BAR.ARV")
            return self._barrier(ins, b)
        if op == "CALL" and ins.guard >= 0:  # a guarded call is a jump its lanes may or may not take
            return self._branch(ins, b)
        if op in ("CALL", "RET"):
            return self._call(ins, b)
        try:
            if op in NOOPS:
                def body(G, lanes):
                    pass
            else:
                make = getattr(self, f"_s_{op.lower()}", None)
                if make is None:
                    raise Unsupported(op)
                body = self._checked(ins, b, make(ins, b))
        except Unsupported as exc:
            return self._sass_fault(ins, b, str(exc))
        except (ValueError, IndexError, TypeError, KeyError, AttributeError, StopIteration):
            return self._sass_fault(ins, b, "operands of a form it does not take")
        uniform = op.startswith("U") or op in ("S2UR", "R2UR", "VOTEU", "ULDC")
        if uniform and op not in ("R2UR", "VOTEU"):
            inner = body
            ws, lane_ids = b.ws, b.lane_ids

            def body(G, lanes):  # a uniform result is the warp's: every lane of the warp holds it
                inner(G, (G[:, None] * ws + lane_ids).ravel() if not isinstance(lanes, slice) else lanes)
        return self._advance(ins, b, self._guarded(ins, b, body))

    def _checked(self, ins, b, body) -> Callable:
        """`body`, whose operand mix-ups (an operand of the wrong kind in a hand-edited listing) are faults
        naming the instruction rather than Python errors."""
        def run(G, lanes):
            try:
                body(G, lanes)
            except (ValueError, IndexError, TypeError, KeyError, AttributeError, StopIteration, Unsupported) as exc:
                self.fault(b, ins, int(G[0]) * b.ws, f"unsupported SASS: {ins.mnemonic} (operands of a form it "
                           f"does not take: {type(exc).__name__})")
        return run

    def _advance(self, ins, b, guarded) -> Callable:
        st, nxt = b.stack, ins.pc + 1

        def run(G, lanes):
            guarded(G, lanes)
            st.pc[G] = nxt
        return run

    def _sass_fault(self, ins, b, what: str) -> Callable:
        def run(G, lanes):
            self.fault(b, ins, int(G[0]) * b.ws, f"unsupported SASS: {ins.mnemonic} ({what})")
        return run

    def _ops(self, ins):
        n = n_sources(ins.opcode, ins.mods, len(ins.operands))
        return ins.operands[:len(ins.operands) - n], ins.operands[len(ins.operands) - n:]

    # ---- control -----------------------------------------------------------------------------------------
    def _call(self, ins, b: _Batch) -> Callable:
        st = b.stack
        if ins.guard >= 0:
            return self._sass_fault(ins, b, "a guarded call")
        if ins.opcode == "CALL":
            target = ins.target

            def run(G, lanes):
                st.pc[G] = target
            return run
        reg = next((o for o in ins.operands if o.kind == "R"), None)
        if reg is None:
            return self._sass_fault(ins, b, "RET without its address register")
        arr = self._reg(b, reg).reshape(b.W, b.ws)
        addr_to_pc = {i.addr: i.pc for i in self.program.instructions}
        prog = self.program

        def run(G, lanes):
            act = st.active[G]
            first = np.argmax(act, axis=1)
            addrs = arr[G, first]
            if ((arr[G] != addrs[:, None]) & act).any():
                self.fault(b, ins, int(G[0]) * b.ws, "RET: the warp's lanes return to different addresses")
            for a in np.unique(addrs):
                if int(a) not in addr_to_pc:
                    self.fault(b, ins, int(G[0]) * b.ws, f"RET to {int(a):#x}, no instruction of {prog.name}")
            st.pc[G] = np.array([addr_to_pc[int(a)] for a in addrs], dtype=np.int64)
        return run
