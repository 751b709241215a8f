"""The coalescer: turns a warp's per-lane addresses into the memory transactions the L1 sees — the
distinct 128-byte lines touched and, per line, which 32-byte sectors. A chunk's memory instructions
are coalesced together, in compiled code, before its warps start issuing."""

from __future__ import annotations

import numpy as np

from gpusim.timing.jit import njit, sort_prefix


@njit
def _log2(x):
    """Whether `x` (a configured size, > 0) is a power of two, and the shift that divides by it then."""
    shift = 0
    while (1 << shift) < x:
        shift += 1
    return (x & (x - 1)) == 0, shift


@njit
def _add_sector(lines, masks, k, start, sec, pow2, l_shift, sectors_per_line):
    """Sector `sec` (the row's sectors come in ascending order, each once) added to the row's lines, which
    began at lines[start]; returns the new end."""
    if pow2:
        line = sec >> l_shift
        bit = 1 << (sec & (sectors_per_line - 1))
    else:
        line = sec // sectors_per_line
        bit = 1 << (sec % sectors_per_line)
    if k > start and lines[k - 1] == line:
        masks[k - 1] |= bit
        return k
    lines[k] = line
    masks[k] = bit
    return k + 1


@njit
def _line_arrays(rows, sel, sector_bytes, sectors_per_line):
    """Rows `sel` of `rows` (per-lane byte addresses, -1 inactive) coalesced: each row's distinct lines
    in address order with their sector masks, and where each row's lines start."""
    m = sel.size
    lines = np.empty(m * rows.shape[1], np.int64)
    masks = np.empty(m * rows.shape[1], np.int64)
    bounds = np.empty(m + 1, np.int64)
    k = lines_into(rows, sel, sector_bytes, sectors_per_line, lines, masks, bounds)
    return lines[:k].copy(), masks[:k].copy(), bounds


@njit
def lines_into(rows, sel, sector_bytes, sectors_per_line, lines, masks, bounds):
    """`_line_arrays` into the caller's arrays (room for every lane of every row): the lines and masks into
    lines/masks[:k], row i's from bounds[i] to bounds[i + 1]; returns k."""
    m = sel.size
    lanes = rows.shape[1]
    sectors = np.empty(lanes, np.int64)
    s_pow2, s_shift = _log2(sector_bytes)
    l_pow2, l_shift = _log2(sectors_per_line)
    pow2 = s_pow2 and l_pow2
    k = 0
    for i in range(m):
        r = sel[i]
        bounds[i] = k
        # the usual row: its lanes' addresses ascending, its lines and sectors found in one pass
        prev = -1
        ordered = True
        for lane in range(lanes):
            a = rows[r, lane]
            if a < 0:
                continue
            sec = (a >> s_shift) if pow2 else a // sector_bytes
            if sec < prev:
                ordered = False
                break
            if sec == prev:
                continue  # lanes in one sector share its transfer
            prev = sec
            k = _add_sector(lines, masks, k, bounds[i], sec, pow2, l_shift, sectors_per_line)
        if ordered:
            continue
        k = bounds[i]
        n = 0
        for lane in range(lanes):
            a = rows[r, lane]
            if a >= 0:
                sectors[n] = (a >> s_shift) if pow2 else a // sector_bytes
                n += 1
        sort_prefix(sectors, n)
        for j in range(n):
            if j == 0 or sectors[j] != sectors[j - 1]:
                k = _add_sector(lines, masks, k, bounds[i], sectors[j], pow2, l_shift, sectors_per_line)
    bounds[m] = k
    return k


@njit
def store_partials(rows, sel, widths, sector_bytes, sectors_per_line, lines, lo, hi, out):
    """For the store rows `sel` (bytes per lane `widths`), whose lines are lines[lo[i]:hi[i]]: set
    out[lo[i]:hi[i]] to the mask of the sectors of each line the warp writes only in part (fewer of the
    sector's bytes than it holds: distinct lane addresses in it times the lane's width)."""
    lanes = rows.shape[1]
    addrs = np.empty(lanes, np.int64)
    secs = np.empty(lanes, np.int64)
    pow2, s_shift = _log2(sector_bytes)
    for i in range(sel.size):
        r = sel[i]
        n = 0
        for lane in range(lanes):
            a = rows[r, lane]
            if a >= 0:
                addrs[n] = a
                n += 1
        sort_prefix(addrs, n)
        for j in range(n):
            secs[j] = (addrs[j] >> s_shift) if pow2 else addrs[j] // sector_bytes
        for q in range(lo[i], hi[i]):
            out[q] = 0
        w = widths[i]
        j = 0
        while j < n:
            sec = secs[j]
            distinct = 0
            k = j
            while k < n and secs[k] == sec:
                if k == j or addrs[k] != addrs[k - 1]:
                    distinct += 1
                k += 1
            if distinct * w < sector_bytes:
                line = sec // sectors_per_line
                for q in range(lo[i], hi[i]):
                    if lines[q] == line:
                        out[q] |= 1 << (sec % sectors_per_line)
                        break
            j = k
    return out


@njit
def atomic_depths(rows, sel, line_bytes, lines, lo, hi, out):
    """For the atomic rows `sel`, whose lines are lines[lo[i]:hi[i]]: set out[lo[i]:hi[i]] to how many lanes
    update each line's busiest address (they serialise at the L2 slice; distinct addresses of one line are
    updated together)."""
    addrs = np.empty(rows.shape[1], np.int64)
    for i in range(sel.size):
        r = sel[i]
        n = 0
        for lane in range(rows.shape[1]):
            a = rows[r, lane]
            if a >= 0:
                addrs[n] = a
                n += 1
        sort_prefix(addrs, n)
        for q in range(lo[i], hi[i]):
            out[q] = 0
        j = 0
        while j < n:
            k = j
            while k < n and addrs[k] == addrs[j]:
                k += 1
            line = addrs[j] // line_bytes
            for q in range(lo[i], hi[i]):
                if lines[q] == line:
                    if k - j > out[q]:
                        out[q] = k - j
                    break
            j = k
    return out


class Coalescer:
    def __init__(self, line_bytes: int, sector_bytes: int):
        self.sector_bytes = sector_bytes
        self.line_bytes = line_bytes
        self.sectors_per_line = line_bytes // sector_bytes

    def line_arrays(self, rows: np.ndarray, sel: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For rows of per-lane byte addresses (-1: lane inactive), or the rows `sel` of them: the
        accessed lines as arrays (line number, bit mask of its sectors), row after row, each row's in
        address order, and `bounds` (rows + 1): row i's lines are [bounds[i], bounds[i + 1])."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        sel = np.arange(rows.shape[0]) if sel is None else np.asarray(sel, dtype=np.int64)
        return _line_arrays(rows, sel, self.sector_bytes, self.sectors_per_line)

    def partial_masks(self, rows: np.ndarray, sel: np.ndarray, widths: np.ndarray, lines: np.ndarray,
                      lo: np.ndarray, hi: np.ndarray, out: np.ndarray) -> None:
        """For store rows `sel` (`widths` bytes per lane) whose lines from `line_arrays` are
        lines[lo[i]:hi[i]]: write into out[lo[i]:hi[i]] each line's mask of the sectors written only in
        part, which the L2 has to merge into the sector it holds."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        store_partials(rows, np.asarray(sel, dtype=np.int64), np.asarray(widths, dtype=np.int64), self.sector_bytes,
                       self.sectors_per_line, lines, np.asarray(lo, np.int64), np.asarray(hi, np.int64), out)

    def lines(self, rows: np.ndarray) -> list[list[tuple[int, int]]]:
        """For each row of per-lane byte addresses (-1: lane inactive), the accessed lines as
        (line number, bit mask of its sectors), in address order."""
        line, mask, bounds = self.line_arrays(rows)
        pairs = list(zip(line.tolist(), mask.tolist(), strict=True))
        b = bounds.tolist()
        return [pairs[lo:hi] for lo, hi in zip(b, b[1:], strict=False)]

    @staticmethod
    def lanes_per_address(row: np.ndarray) -> int:
        """Most lanes of one access that hit the same address (atomics to it serialise)."""
        a = row[row >= 0]
        if a.size == 0:
            return 0
        _, counts = np.unique(a, return_counts=True)
        return int(counts.max())
