"""The coalescer: turns a warp's 32 per-lane addresses into the memory transactions the L1 sees —
the distinct 128-byte lines touched and, per line, which 32-byte sectors. A block's memory
instructions are coalesced together in a few numpy operations, before its warps start issuing."""

from __future__ import annotations

import numpy as np

_NONE = np.int64(1) << 62


def _shift(n: int) -> int | None:
    """log2(n) when n is a power of two (then x // n == x >> log2(n) for every integer x, negative
    ones included, and x % n == x & (n - 1)), else None."""
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else None


class Coalescer:
    def __init__(self, line_bytes: int, sector_bytes: int):
        self.sector_bytes = sector_bytes
        self.line_bytes = line_bytes
        self.sectors_per_line = line_bytes // sector_bytes
        # sizes are powers of two on real GPUs: numpy shifts and masks then stand in for its (much
        # slower) integer division and remainder
        self._sector_shift = _shift(sector_bytes)
        self._line_shift = _shift(self.sectors_per_line)

    def line_arrays(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For rows of per-lane byte addresses (-1: lane inactive): the accessed lines as arrays
        (line number, bit mask of its sectors), row after row, each row's in address order, and
        `bounds` (rows + 1): row i's lines are [bounds[i], bounds[i + 1])."""
        m = rows.shape[0]
        if m == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64)
        shift = self._sector_shift
        sec = np.where(rows >= 0, rows >> shift if shift is not None else rows // self.sector_bytes, _NONE)
        sec.sort(axis=1)
        keep = np.empty(sec.shape, dtype=bool)
        keep[:, 0] = True
        np.not_equal(sec[:, 1:], sec[:, :-1], out=keep[:, 1:])
        keep &= sec != _NONE
        r, c = np.nonzero(keep)
        s = sec[r, c]
        spl = self.sectors_per_line
        shift = self._line_shift
        if shift is not None:
            line = s >> shift
            bit = np.left_shift(1, s & (spl - 1))
        else:
            line = s // spl
            bit = np.left_shift(1, s % spl)
        new = np.ones(s.size, dtype=bool)
        if s.size > 1:
            new[1:] = (r[1:] != r[:-1]) | (line[1:] != line[:-1])
        starts = np.flatnonzero(new)
        masks = np.bitwise_or.reduceat(bit, starts) if s.size else np.zeros(0, np.int64)
        bounds = np.searchsorted(r[starts], np.arange(m + 1))
        return line[starts].astype(np.int64), masks.astype(np.int64), bounds.astype(np.int64)

    def lines(self, rows: np.ndarray) -> list[list[tuple[int, int]]]:
        """For each row of per-lane byte addresses (-1: lane inactive), the accessed lines as
        (line number, bit mask of its sectors), in address order."""
        line, mask, bounds = self.line_arrays(rows)
        pairs = list(zip(line.tolist(), mask.tolist(), strict=True))
        b = bounds.tolist()
        return [pairs[lo:hi] for lo, hi in zip(b, b[1:], strict=False)]

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
