"""The LD/ST units' address stage: a global access is coalesced into line and sector requests, a
shared access is mapped onto banks (how many wavefronts it needs). Both depend only on the addresses,
so they are worked out for a whole batch of blocks in a few numpy operations before the blocks'
warps issue; the SM then looks each access's plan up when the instruction issues."""

from __future__ import annotations

import numpy as np

from gpusim.timing.coalescer import Coalescer
from gpusim.timing.decode import GLOBAL_ATOM, SHARED, TimingInfo
from gpusim.timing.shared_memory import SharedMemory


class AddressStage:
    def __init__(self, info: list[TimingInfo], coalescer: Coalescer, smem: SharedMemory):
        self.info = info
        self.coalescer = coalescer
        self.smem = smem
        self.kind = np.array([ti.kind for ti in info] or [0], dtype=np.int64)
        self.width = np.array([ti.width for ti in info] or [0], dtype=np.int64)
        self.atomic = np.array([ti.opcode_is_atomic for ti in info] or [False], dtype=bool)

    def plan(self, acc) -> list:
        """One plan per row of a BatchAccesses: [(line, sector mask), ...] for global loads and stores,
        ([(line, mask)], [lanes on the busiest address per line]) for global atomics, (wavefronts,
        ideal wavefronts) for shared accesses."""
        m = acc.rows.shape[0]
        plans: list = [None] * m
        kind = self.kind[acc.pcs]
        shared = kind == SHARED
        g = np.flatnonzero(~shared)
        if g.size:
            rows = acc.rows[g]
            lines = self.coalescer.lines(rows)
            atomic = kind[g] == GLOBAL_ATOM
            if not atomic.any():
                if g.size == m:
                    plans = lines
                else:
                    for j, ls in zip(g.tolist(), lines, strict=True):
                        plans[j] = ls
            else:
                depth = np.zeros(g.size, dtype=np.int64)
                depth[atomic] = self.coalescer.max_lanes_per_address(rows[atomic])
                for j, ls, at, d in zip(g.tolist(), lines, atomic.tolist(), depth.tolist(), strict=True):
                    if not at:
                        plans[j] = ls
                    elif d <= 1:
                        plans[j] = (ls, [1] * len(ls))
                    else:
                        plans[j] = (ls, self._depths(acc.rows[j], ls))
        s = np.flatnonzero(shared)
        if s.size:
            widths = self.width[acc.pcs[s]]
            for width in np.unique(widths).tolist():
                sel = s[widths == width]
                rows = acc.rows[sel]
                wave, ideal = self.smem.wavefronts_of(rows, width)
                atomic = self.atomic[acc.pcs[sel]]
                if atomic.any():
                    # same-address atomics serialise on top of bank conflicts
                    w = np.asarray(wave)
                    w[atomic] = np.maximum(w[atomic], self.coalescer.max_lanes_per_address(rows[atomic]))
                    wave = w.tolist()
                for j, wv, idl in zip(sel.tolist(), wave, ideal, strict=True):
                    plans[j] = (wv, idl)
        return plans

    def _depths(self, row: np.ndarray, lines: list[tuple[int, int]]) -> list[int]:
        """Per line of a warp's atomic: how many lanes update its busiest address (they serialise at
        the L2 slice; distinct addresses of one line are updated together)."""
        line_bytes = self.coalescer.line_bytes
        a = row[row >= 0]
        return [self.coalescer.lanes_per_address(a[a // line_bytes == ln]) for ln, _ in lines]
