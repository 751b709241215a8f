"""The LD/ST units' address stage: a global access is coalesced into line and sector requests, a
shared access is mapped onto banks (how many wavefronts it needs). Both depend only on the addresses,
so they are worked out for a whole chunk of a batch's accesses, in one compiled pass, before the warps
issue them; the SM then finds each access's plan when the instruction issues."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing.coalescer import Coalescer, atomic_depths, lines_into, store_partials
from gpusim.timing.decode import GLOBAL_ATOM, GLOBAL_ST, SHARED, TimingInfo
from gpusim.timing.jit import njit
from gpusim.timing.shared_memory import BankMap, bank_wavefronts


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
    """Plans a chunk's accesses into buffers it keeps from chunk to chunk (grown, never shrunk): a chunk's
    Plans are views of them, valid until the next `plan` (the feeder copies them into its pool at once)."""

    def __init__(self, info: list[TimingInfo], coalescer: Coalescer, banks: BankMap):
        self.info = info
        self.coalescer = coalescer
        self.banks = banks
        self.kind = np.array([ti.kind for ti in info] or [0], dtype=np.int64)
        self.width = np.array([ti.width for ti in info] or [0], dtype=np.int64)
        self.atomic = np.array([ti.opcode_is_atomic for ti in info] or [False], dtype=bool)
        self.buf = tuple(np.zeros(0, np.int64) for _ in range(5))  # lo, hi (per row); lines, masks, ops

    def plan(self, rows: np.ndarray, pcs: np.ndarray) -> Plans:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        m, lanes = rows.shape
        if self.buf[0].size < m or self.buf[2].size < m * lanes:
            rows_cap = max(m, 2 * self.buf[0].size)
            lines_cap = max(m * lanes, 2 * self.buf[2].size)
            self.buf = tuple(np.zeros(rows_cap if i < 2 else lines_cap, np.int64) for i in range(5))
        c, b = self.coalescer, self.banks
        k = _plan(rows, np.asarray(pcs, np.int64), self.kind, self.width, *self.buf, c.sector_bytes,
                  c.sectors_per_line, c.line_bytes, b.bank_width, b.banks, b.wide_lanes or 0)
        lo, hi, lines, masks, ops = self.buf
        return Plans(lo[:m], hi[:m], lines[:k], masks[:k], ops[:k])


def compile_plan() -> None:
    """Compile (or load from the cache) `_plan` for the argument types `AddressStage.plan` passes, on an
    empty chunk: a first run starts this in a second process (gpu.py `_compile_aside`), so that the
    address stage compiles on the other core while this one compiles the engine."""
    z = np.zeros(0, np.int64)
    _plan(np.zeros((0, 32), np.int64), z, z, z, z, z, z, z, z, 32, 4, 128, 4, 32, 0)


@njit
def _plan(rows, pcs, kinds, widths, lo, hi, lines, masks, ops, sector_bytes, sectors_per_line, line_bytes,
          bank_width, banks, wide_lanes):
    """Every row's plan (see `Plans`), row j being an access of instruction pcs[j], into lo/hi[:rows] and
    lines/masks/ops[:k]; returns k. A global access's lines in address order with their sector masks, and
    per line: a store's sectors written only in part, an atomic's lanes on its busiest address (they
    serialise at the L2 slice), 1 for a load; a shared access's wavefronts (its busiest bank's words,
    `wide_lanes` lanes at a time for a 128-bit access) and a conflict-free access's."""
    m, lanes = rows.shape
    shared = np.empty(m, np.int64)
    glob = np.empty(m, np.int64)
    ns = ng = 0
    for j in range(m):
        if kinds[pcs[j]] == SHARED:
            shared[ns] = j
            ns += 1
        else:
            glob[ng] = j
            ng += 1
    g = glob[:ng]
    bounds = np.empty(ng + 1, np.int64)
    k = lines_into(rows, g, sector_bytes, sectors_per_line, lines, masks, bounds)
    stores = np.empty(ng, np.int64)  # (indices into g)
    atomics = np.empty(ng, np.int64)
    nst = nat = 0
    for i in range(ng):
        j = g[i]
        lo[j] = bounds[i]
        hi[j] = bounds[i + 1]
        kind = kinds[pcs[j]]
        if kind == GLOBAL_ST:
            stores[nst] = i
            nst += 1
        elif kind == GLOBAL_ATOM:
            atomics[nat] = i
            nat += 1
        else:
            for q in range(bounds[i], bounds[i + 1]):
                ops[q] = 1
    if nst:
        s = stores[:nst]
        store_partials(rows, g[s], widths[pcs[g[s]]], sector_bytes, sectors_per_line, lines, bounds[s],
                       bounds[s + 1], ops)
    if nat:
        a = atomics[:nat]
        atomic_depths(rows, g[a], line_bytes, lines, bounds[a], bounds[a + 1], ops)
    # shared: the rows of one width at a time (the usual chunk has one); an atomic's lanes on one address
    # are one update, its passes the bank wavefronts
    left = shared[:ns]
    while left.size:
        width = widths[pcs[left[0]]]
        same = widths[pcs[left]] == width
        sel = left[same]
        group = wide_lanes if width >= 16 and wide_lanes > 0 else lanes
        wave, ideal = bank_wavefronts(rows, sel, max(1, width // bank_width), bank_width, banks, width, group)
        for i in range(sel.size):
            lo[sel[i]] = wave[i]
            hi[sel[i]] = ideal[i]
        left = left[~same]
    return k
