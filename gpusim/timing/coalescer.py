"""The coalescer: turns a warp's 32 per-lane addresses into the memory transactions the L1 sees —
the distinct 128-byte lines touched and, per line, which 32-byte sectors. A block's memory
instructions are coalesced together in a few numpy operations, before its warps start issuing."""

from __future__ import annotations

import numpy as np

_NONE = np.int64(1) << 62


class Coalescer:
    def __init__(self, line_bytes: int, sector_bytes: int):
        self.sector_bytes = sector_bytes
        self.line_bytes = line_bytes
        self.sectors_per_line = line_bytes // sector_bytes

    def lines(self, rows: np.ndarray) -> list[list[tuple[int, int]]]:
        """For each row of per-lane byte addresses (-1: lane inactive), the accessed lines as
        (line number, bit mask of its sectors), in address order."""
        m = rows.shape[0]
        if m == 0:
            return []
        sec = np.where(rows >= 0, rows // self.sector_bytes, _NONE)
        sec.sort(axis=1)
        keep = np.empty(sec.shape, dtype=bool)
        keep[:, 0] = True
        np.not_equal(sec[:, 1:], sec[:, :-1], out=keep[:, 1:])
        keep &= sec != _NONE
        r, c = np.nonzero(keep)
        s = sec[r, c]
        spl = self.sectors_per_line
        line = s // spl
        bit = np.left_shift(1, s % spl)
        new = np.ones(s.size, dtype=bool)
        if s.size > 1:
            new[1:] = (r[1:] != r[:-1]) | (line[1:] != line[:-1])
        starts = np.flatnonzero(new)
        masks = np.bitwise_or.reduceat(bit, starts).tolist() if s.size else []
        lines = line[starts].tolist()
        bounds = np.searchsorted(r[starts], np.arange(m + 1)).tolist()
        pairs = list(zip(lines, masks, strict=False))
        return [pairs[lo:hi] for lo, hi in zip(bounds, bounds[1:], strict=False)]

    @staticmethod
    def max_lanes_per_address(rows: np.ndarray) -> np.ndarray:
        """Per row of per-lane addresses (-1: inactive): most lanes that access one address (0 for a
        row with no active lane). Atomics to one address serialise."""
        lanes = rows.shape[1]
        s = np.where(rows >= 0, rows, -1 - np.arange(lanes))  # inactive lanes never match
        s.sort(axis=1)
        pos = np.arange(1, lanes)
        start = np.where(s[:, 1:] == s[:, :-1], 0, pos)
        np.maximum.accumulate(start, axis=1, out=start)
        longest = (pos - start + 1).max(axis=1, initial=1)
        return np.where((rows >= 0).any(axis=1), longest, 0)

    @staticmethod
    def lanes_per_address(row: np.ndarray) -> int:
        """Most lanes of one access that hit the same address (atomics to it serialise)."""
        a = row[row >= 0]
        if a.size == 0:
            return 0
        _, counts = np.unique(a, return_counts=True)
        return int(counts.max())
