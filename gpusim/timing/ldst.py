"""The LD/ST units' address stage: a global access is coalesced into line and sector requests, a
shared access is mapped onto banks (how many wavefronts it needs). Both depend only on the addresses,
so they are worked out for a whole chunk of a batch's accesses in a few numpy operations before the
warps issue them; the SM then finds each access's plan when the instruction issues."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing.coalescer import Coalescer
from gpusim.timing.decode import GLOBAL_ATOM, GLOBAL_ST, SHARED, TimingInfo
from gpusim.timing.shared_memory import BankMap


class Plans(NamedTuple):
    """One plan per access row. Global: its lines are lines[lo[j]:hi[j]] with their sector masks and
    `ops`: for atomics, the lanes on each line's busiest address; for stores, the mask of the line's
    sectors written only in part (0: every sector written whole); 1 for loads. Shared: lo[j] is the
    wavefronts it needs, hi[j] the wavefronts a conflict-free access of as many bytes would need."""

    lo: np.ndarray
    hi: np.ndarray
    lines: np.ndarray
    masks: np.ndarray
    ops: np.ndarray


class AddressStage:
    def __init__(self, info: list[TimingInfo], coalescer: Coalescer, banks: BankMap):
        self.info = info
        self.coalescer = coalescer
        self.banks = banks
        self.kind = np.array([ti.kind for ti in info] or [0], dtype=np.int64)
        self.width = np.array([ti.width for ti in info] or [0], dtype=np.int64)
        self.atomic = np.array([ti.opcode_is_atomic for ti in info] or [False], dtype=bool)

    def plan(self, rows: np.ndarray, pcs: np.ndarray) -> Plans:
        m = rows.shape[0]
        lo = np.zeros(m, np.int64)
        hi = np.zeros(m, np.int64)
        kind = self.kind[pcs]
        shared = kind == SHARED
        g = np.flatnonzero(~shared)
        lines = masks = ops = np.zeros(0, np.int64)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if g.size:
            lines, masks, bounds = self.coalescer.line_arrays(rows, g)
            lo[g], hi[g] = bounds[:-1], bounds[1:]
            ops = np.ones(lines.size, np.int64)
            store = np.flatnonzero(kind[g] == GLOBAL_ST)
            if store.size:  # the sectors each store writes only in part
                self.coalescer.partial_masks(rows, g[store], self.width[pcs[g[store]]], lines, bounds[store],
                                             bounds[store + 1], ops)
            atomic = kind[g] == GLOBAL_ATOM
            if atomic.any():
                depth = self.coalescer.max_lanes_per_address(rows[g[atomic]])
                for j, d in zip(np.flatnonzero(atomic).tolist(), depth.tolist(), strict=True):
                    if d > 1:  # lanes on one address serialise at the L2 slice
                        a, b = int(bounds[j]), int(bounds[j + 1])
                        ops[a:b] = self._depths(rows[g[j]], lines[a:b])
        s = np.flatnonzero(shared)
        if s.size:
            widths = self.width[pcs[s]]
            w0 = int(widths[0])
            one = bool((widths == w0).all())  # (the usual chunk: one width; np.unique sorts)
            for width in [w0] if one else np.unique(widths).tolist():
                sel = s if one else s[widths == width]
                # (an atomic's lanes on one address are one update: its passes are the bank wavefronts)
                wave, ideal = self.banks.wavefront_arrays(rows, width, sel)
                lo[sel], hi[sel] = wave, ideal
        return Plans(lo, hi, lines, masks, ops)

    def _depths(self, row: np.ndarray, lines: np.ndarray) -> list[int]:
        """Per line of a warp's atomic: how many lanes update its busiest address (they serialise at
        the L2 slice; distinct addresses of one line are updated together)."""
        line_bytes = self.coalescer.line_bytes
        a = row[row >= 0]
        return [self.coalescer.lanes_per_address(a[a // line_bytes == ln]) for ln in lines.tolist()]
