"""The SIMT reconvergence stack (immediate post-dominator, IPDOM) of every warp in a batch.

The top entry of each warp lives in flat arrays (`pc`, `active`, `rpc`) so that warps standing at
the same pc step together with numpy. The entries below the top (which exist while a warp is
diverged) live in arrays too, `depth[w]` of them per warp, so that the warps of a step diverge and
reconverge together as well."""

from __future__ import annotations

import numpy as np

BOTTOM_RPC = -2  # the bottom entry never reconverges


class SimtStack:
    def __init__(self, num_warps: int, exists: np.ndarray):
        self.pc = np.zeros(num_warps, dtype=np.int64)
        self.active = exists.copy()  # [W, 32] lanes running the top entry
        self.rpc = np.full(num_warps, BOTTOM_RPC, dtype=np.int64)
        # entries below the top: warp w's are [w, :depth[w]], the last one next to the top
        self.depth = np.zeros(num_warps, dtype=np.int64)
        self.below_pc = np.zeros((num_warps, 2), dtype=np.int64)
        self.below_mask = np.zeros((num_warps, 2, exists.shape[1]), dtype=bool)
        self.below_rpc = np.zeros((num_warps, 2), dtype=np.int64)

    @property
    def diverged(self) -> np.ndarray:
        """Per warp: has entries below the top."""
        return self.depth > 0

    def _push(self, ws: np.ndarray, pc, mask: np.ndarray, rpc) -> None:
        """Push an entry below the top of each warp in `ws` (distinct warps)."""
        d = self.depth[ws]
        if d.size and d.max() >= self.below_pc.shape[1]:  # full: double the room
            self.below_pc, self.below_mask, self.below_rpc = (
                np.concatenate([a, np.zeros_like(a)], 1) for a in (self.below_pc, self.below_mask, self.below_rpc))
        self.below_pc[ws, d] = pc
        self.below_mask[ws, d] = mask
        self.below_rpc[ws, d] = rpc
        self.depth[ws] = d + 1

    def diverge(self, ws: np.ndarray, taken: np.ndarray, fall_pc: int, target: int, reconv: int) -> None:
        """Split warps `ws` (distinct, at the same branch) whose lanes `taken` [len(ws), 32] take it
        while other active lanes do not: the fall-through lanes run first, then the taken ones; both
        wait at `reconv`. Where the branch reconverges where the current entry does (a loop's exit),
        the current entry narrows instead of growing the stack."""
        act = self.active[ws]
        paths = [(p, m) for p, m in ((fall_pc, act & ~taken), (target, taken)) if p != reconv]
        rpc = self.rpc[ws]
        grow = rpc != reconv
        self._push(ws[grow], reconv, act[grow], rpc[grow])
        for p, m in reversed(paths[1:]):
            self._push(ws, p, m, reconv)
        self.pc[ws], self.active[ws], self.rpc[ws] = paths[0][0], paths[0][1], reconv

    def pop(self, ws: np.ndarray) -> np.ndarray:
        """Leave the top entry of warps `ws` (distinct; reconverged, or no lanes left): each takes the
        entries below until one with lanes that is not already at its reconvergence point. Returns,
        per warp, False where the warp has nothing left to run."""
        alive = np.ones(ws.size, dtype=bool)
        todo = np.arange(ws.size)  # positions in ws still popping
        while todo.size:
            w = ws[todo]
            d = self.depth[w]
            empty = d == 0  # nothing below: the warp is finished
            if empty.any():
                alive[todo[empty]] = False
                self.active[w[empty]] = False
                todo, w, d = todo[~empty], w[~empty], d[~empty]
            d -= 1
            self.depth[w] = d
            pc, mask, rpc = self.below_pc[w, d], self.below_mask[w, d], self.below_rpc[w, d]
            lanes = mask.any(1)  # an entry whose lanes all exited is skipped
            self.pc[w[lanes]], self.active[w[lanes]], self.rpc[w[lanes]] = pc[lanes], mask[lanes], rpc[lanes]
            todo = todo[~lanes | (pc == rpc)]
        return alive

    def remove_lanes_below(self, ws: np.ndarray, lanes: np.ndarray) -> None:
        """Lanes [len(ws), 32] of warps `ws` that executed `exit` leave the entries below the top too."""
        self.below_mask[ws] &= ~lanes[:, None, :]
