"""The SIMT reconvergence stack (immediate post-dominator, IPDOM) of every warp in a batch.

The top entry of each warp lives in flat arrays (`pc`, `active`, `rpc`) so that warps standing at
the same pc step together with numpy; only the entries below the top (which exist while a warp is
diverged) are Python lists."""

from __future__ import annotations

import numpy as np

BOTTOM_RPC = -2  # the bottom entry never reconverges


class SimtStack:
    def __init__(self, num_warps: int, exists: np.ndarray):
        self.pc = np.zeros(num_warps, dtype=np.int64)
        self.active = exists.copy()  # [W, 32] lanes running the top entry
        self.rpc = np.full(num_warps, BOTTOM_RPC, dtype=np.int64)
        self.below: dict[int, list[tuple[int, np.ndarray, int]]] = {}
        self.diverged = np.zeros(num_warps, dtype=bool)  # has entries below the top

    def diverge(self, w: int, taken: np.ndarray, fall_pc: int, target: int, reconv: int) -> None:
        """Split warp `w` at a branch: the fall-through lanes run first, then the taken ones; both
        wait at `reconv`. When the branch reconverges where the current entry does (a loop's exit),
        the current entry narrows instead of growing the stack."""
        act = self.active[w]
        paths = [(p, m) for p, m in ((fall_pc, act & ~taken), (target, taken)) if p != reconv]
        stack = self.below.setdefault(w, [])
        self.diverged[w] = True
        if reconv != self.rpc[w]:
            stack.append((reconv, act.copy(), int(self.rpc[w])))
        for p, m in reversed(paths[1:]):
            stack.append((p, m, reconv))
        self.pc[w], self.active[w], self.rpc[w] = paths[0][0], paths[0][1], reconv

    def pop(self, w: int) -> bool:
        """Leave the top entry of warp `w` (reconverged, or no lanes left); return False when the
        warp has nothing left to run."""
        stack = self.below.get(w)
        while stack:
            pc, mask, rpc = stack.pop()
            if mask.any():
                self.pc[w], self.active[w], self.rpc[w] = pc, mask, rpc
                if not stack:
                    self.below.pop(w, None)
                    self.diverged[w] = False
                if pc != rpc:
                    return True
                continue
        self.below.pop(w, None)
        self.diverged[w] = False
        self.active[w] = False
        return False

    def remove_lanes_below(self, w: int, lanes: np.ndarray) -> None:
        """Lanes that executed `exit` leave the entries below the top too."""
        for i, (pc, mask, rpc) in enumerate(self.below.get(w, ())):
            self.below[w][i] = (pc, mask & ~lanes, rpc)

    def depth(self, w: int) -> int:
        return 1 + len(self.below.get(w, ()))
