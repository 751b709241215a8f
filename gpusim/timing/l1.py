"""The SM's L1 data cache (the L1TEX unit's global-memory path): a sectored, set-associative cache
(replacement policy `l1.replacement`) with a tag port that looks up one line per cycle, and MSHRs that
track lines being fetched from L2 (a second miss to a line already on its way waits for the same
fill). Stores write through to L2, updating a resident line without counting as a use of it, and
allocate a line only with write_allocate. Global atomics bypass the L1 (its copy is dropped) and run
at the L2. Where global loads are not cached (`caches_global_loads: false`), loads still pass the tag
port and the MSHRs but never hit. Every SM's L1 is a row block of one structure of arrays."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.config.vocab import REPLACEMENT_POLICIES
from gpusim.timing import interconnect as _noc
from gpusim.timing import l2 as _l2
from gpusim.timing import tags as _tags
from gpusim.timing.jit import njit, prefetch, struct_type
from gpusim.timing.l2 import popcount
from gpusim.timing.tags import EMPTY, Tags, make_tags


class L1(NamedTuple):
    tags: Tags  # rows: sm * nsets + set
    port_free: np.ndarray  # int64 per SM: the cycle the tag port takes its next line
    # lines being fetched, per SM: an open-addressing table line -> (fill cycle, sectors coming)
    pend_line: np.ndarray  # (sms, cap) int64, EMPTY where free
    pend_fill: np.ndarray  # (sms, cap) float64
    pend_coming: np.ndarray  # (sms, cap) int64
    pend_n: np.ndarray  # (sms,) entries in use
    mshr: np.ndarray  # (sms, entries + 1) float64: a min-heap of the fill times of lines in flight
    mshr_n: np.ndarray
    hits: np.ndarray  # sectors
    misses: np.ndarray
    requests: np.ndarray  # lines looked up (tag wavefronts)
    mshr_full_cycles: np.ndarray
    nsets: int
    hit_latency: int
    mshr_entries: int
    caches_loads: bool
    write_allocate: bool


struct_type(L1)


def make_l1(cfg: Config, sms: int, size_bytes: int) -> L1:
    l1 = cfg.l1
    nsets = max(1, size_bytes // (l1.line_size_bytes * l1.ways))
    cap = 16
    while cap < 8 * l1.mshr_entries:
        cap *= 2
    z = lambda: np.zeros(sms, dtype=np.int64)  # noqa: E731
    return L1(make_tags(sms * nsets, l1.ways, REPLACEMENT_POLICIES.index(l1.replacement)), z(),
              np.full((sms, cap), EMPTY, dtype=np.int64), np.zeros((sms, cap)), np.zeros((sms, cap), np.int64),
              z(), np.zeros((sms, l1.mshr_entries + 1)), z(), z(), z(), z(), z(),
              nsets, l1.hit_latency_cycles, l1.mshr_entries, bool(l1.caches_global_loads and size_bytes > 0),
              bool(l1.write_allocate))


# -- lines in flight ------------------------------------------------------------------------------

@njit
def _home(line, cap):
    """The slot the table of lines in flight (`cap` slots, a power of two) looks in first for `line`."""
    return (line ^ (line >> 11) ^ (line >> 23)) & (cap - 1)


@njit
def _slot(c, sm, line):
    """The table slot of `line` (or the free slot where it would go)."""
    lines = c.pend_line
    cap = lines.shape[1]
    i = _home(line, cap)
    while True:
        k = lines[sm, i]
        if k == line or k == EMPTY:
            return i
        i = (i + 1) & (cap - 1)


@njit
def prefetch_line(c, noc, l2, sm, line):
    """Start loading what an access of `line` by SM `sm` will read: its L1 set, its entry in the table
    of lines in flight, and its L2 sets (a hint: no value changes)."""
    _tags.prefetch_set(c.tags, sm * c.nsets + line % c.nsets)
    j = _home(line, c.pend_line.shape[1])
    prefetch(c.pend_line, sm, 8 * j)
    prefetch(c.pend_fill, sm, 8 * j)
    prefetch(c.pend_coming, sm, 8 * j)
    _l2.prefetch_line(l2, noc, line)


@njit
def _forget_arrived(c, sm, now):
    """Drop the lines whose fill has arrived by `now` (no later lookup can wait on them: lookups come
    in time order) and rebuild the table."""
    cap = c.pend_line.shape[1]
    keep_l = c.pend_line[sm].copy()
    keep_f = c.pend_fill[sm].copy()
    keep_c = c.pend_coming[sm].copy()
    c.pend_line[sm, :] = EMPTY
    c.pend_n[sm] = 0
    for i in range(cap):
        if keep_l[i] != EMPTY and keep_f[i] > now:
            j = _slot(c, sm, keep_l[i])
            c.pend_line[sm, j] = keep_l[i]
            c.pend_fill[sm, j] = keep_f[i]
            c.pend_coming[sm, j] = keep_c[i]
            c.pend_n[sm] += 1


@njit
def _mshr_push(c, sm, x):
    h = c.mshr[sm]
    i = c.mshr_n[sm]
    c.mshr_n[sm] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        if h[parent] <= x:
            break
        h[i] = h[parent]
        i = parent
    h[i] = x


@njit
def _mshr_pop(c, sm):
    h = c.mshr[sm]
    n = c.mshr_n[sm] - 1
    top = h[0]
    x = h[n]
    c.mshr_n[sm] = n
    i = 0
    while True:
        k = 2 * i + 1
        if k >= n:
            break
        if k + 1 < n and h[k + 1] < h[k]:
            k += 1
        if h[k] >= x:
            break
        h[i] = h[k]
        i = k
    if n > 0:
        h[i] = x
    return top


@njit
def _allocate_mshr(c, sm, s):
    """An MSHR for a miss looked up at cycle `s`; returns when one is free (later if all are busy)."""
    while c.mshr_n[sm] > 0 and c.mshr[sm, 0] <= s:
        _mshr_pop(c, sm)
    if c.mshr_n[sm] >= c.mshr_entries:
        free = int(_mshr_pop(c, sm) + 0.999999)
        c.mshr_full_cycles[sm] += free - s
        s = free
    return s


# -- accesses -------------------------------------------------------------------------------------

@njit
def load(c, noc, l2, d, sm, t, lines, masks, lo, hi):
    """A warp's load of lines[lo:hi] (sector masks masks[lo:hi]) issued at cycle `t`. Returns (ready,
    accepted): the cycle the last sector is back, and the cycle the last line left the tag port (the
    LSU can take the next instruction then)."""
    ready = float(t)
    port = c.port_free[sm]
    c.requests[sm] += hi - lo
    tg = c.tags
    for k in range(lo, hi):
        line = lines[k]
        mask = masks[k]
        s = port if port > t else t
        port = s + 1
        nsec = popcount(mask)
        if c.caches_loads:
            row = sm * c.nsets + line % c.nsets
            way = _tags.find(tg, row, line)
            if way >= 0:
                _tags.touch(tg, row, way)
                valid = tg.valid[row, way]
            else:
                way, _, _ = _tags.allocate(tg, row, line)
                valid = 0
            tg.valid[row, way] = valid | mask
            missing = mask & ~valid
        else:
            missing = mask
        j = _slot(c, sm, line)
        known = c.pend_line[sm, j] == line
        in_flight = known and c.pend_fill[sm, j] > s
        fill = 0.0
        if in_flight:
            fill = c.pend_fill[sm, j]
            missing &= ~c.pend_coming[sm, j]  # sectors already on their way are waited for, not fetched again
        if missing:
            nmiss = popcount(missing)
            c.misses[sm] += nmiss
            c.hits[sm] += nsec - nmiss
            s2 = _allocate_mshr(c, sm, s)
            if s2 + 1 > port:
                port = s2 + 1
            # fetch the missing sectors from the line's L2 slice
            sl = _noc.slice_of(noc, sm, line)
            at = _l2.read(l2, noc, d, sl, _noc.to_slice(noc, float(s2)), line, missing)
            done = _noc.to_sm(noc, sl, at, popcount(missing) * l2.sector_bytes)
            if known and c.pend_fill[sm, j] > s2:
                missing |= c.pend_coming[sm, j]
            if not known:
                if 2 * (c.pend_n[sm] + 1) > c.pend_line.shape[1]:
                    _forget_arrived(c, sm, s2)
                    j = _slot(c, sm, line)
                c.pend_n[sm] += 1
            c.pend_line[sm, j] = line
            c.pend_fill[sm, j] = done
            c.pend_coming[sm, j] = missing
            _mshr_push(c, sm, done)
            if in_flight and fill > done:
                done = fill
        elif in_flight:
            c.misses[sm] += nsec
            done = fill if fill > s + c.hit_latency else float(s + c.hit_latency)
        else:
            c.hits[sm] += nsec
            done = float(s + c.hit_latency)
        if done > ready:
            ready = done
    c.port_free[sm] = port
    return int(ready + 0.999999), port


@njit
def store(c, noc, l2, d, sm, t, lines, masks, partial, lo, hi):
    """A warp's store issued at `t` (`partial[k]`: the sectors of line k it writes only in part):
    returns (acknowledged, accepted)."""
    ack = float(t)
    port = c.port_free[sm]
    c.requests[sm] += hi - lo
    tg = c.tags
    for k in range(lo, hi):
        line = lines[k]
        mask = masks[k]
        s = port if port > t else t
        port = s + 1
        row = sm * c.nsets + line % c.nsets
        way = _tags.find(tg, row, line)
        if way >= 0:
            tg.valid[row, way] |= mask
        elif c.write_allocate and c.caches_loads:
            way, _, _ = _tags.allocate(tg, row, line)
            tg.valid[row, way] = mask
        sl = _noc.slice_of(noc, sm, line)
        at = _l2.write(l2, noc, d, sl, _noc.to_slice(noc, float(s)), line, mask, partial[k])
        done = _noc.to_sm(noc, sl, at, 0)
        if done > ack:
            ack = done
    c.port_free[sm] = port
    return int(ack + 0.999999), port


@njit
def atomic(c, noc, l2, d, sm, t, lines, masks, ops, lo, hi):
    """Global atomics bypass the L1 (its copy of the line is dropped) and run at the L2 slice."""
    ready = float(t)
    port = c.port_free[sm]
    tg = c.tags
    for k in range(lo, hi):
        line = lines[k]
        s = port if port > t else t
        port = s + 1
        c.requests[sm] += 1
        row = sm * c.nsets + line % c.nsets
        way = _tags.find(tg, row, line)
        if way >= 0:
            _tags.invalidate(tg, row, way)
        sl = _noc.slice_of(noc, sm, line)
        at = _l2.atomic(l2, noc, d, sl, _noc.to_slice(noc, float(s)), line, masks[k], ops[k])
        done = _noc.to_sm(noc, sl, at, 0)
        if done > ready:
            ready = done
    c.port_free[sm] = port
    return int(ready + 0.999999), port
