"""Where each global cache-line access is served: L1, L2, the shared LLC or DRAM, and which accesses
the stride/stream prefetcher has brought in ahead of time.

Reuse by distance: an access to a line the same hardware thread touched before hits in the smallest
private cache whose share holds the distinct lines touched in between. Their number is estimated as the
line accesses in between, at most the thread's distinct lines (exact for a stream and for a sweep over a
footprint, high by the repeats in a loop nest); no per-access stack is kept.
SMT siblings share their core's L1 and L2 (each gets
size / threads on the core), all threads share the LLC.

First touches: caches start cold, as the GPU's do. The first touch of a line by any thread (the earliest
in the threads' normalised time) goes to DRAM; another thread's first touch of a line already fetched
hits in the LLC while the kernel's footprint fits there, else goes to DRAM.

Prefetcher: for each load or store pc, the stream of distinct lines it touches in thread order; an access
whose line stride equals the previous stride of the same pc, and is at most `prefetch_max_stride_bytes`,
was prefetched: it costs an L2 hit's latency, while its line still crosses the LLC or DRAM."""

from __future__ import annotations

import numpy as np

L1, L2, LLC, DRAM = range(4)


def _prev_same(keys: tuple[np.ndarray, ...], order_keys: tuple[np.ndarray, ...]):
    """Sort by `order_keys` (lexsort, last key primary); return the order and, in that order, whether each
    entry's `keys` equal the previous entry's."""
    order = np.lexsort(order_keys)
    same = np.zeros(order.size, dtype=bool)
    if order.size > 1:
        same[1:] = np.logical_and.reduce([k[order][1:] == k[order][:-1] for k in keys])
    return order, same


def classify(h, seq, pcs, line, *, threads_on_core, cpu, active_threads: int) -> tuple[np.ndarray, np.ndarray]:
    """(level, prefetched) per access (arrays in the order given)."""
    n = line.size
    level = np.full(n, DRAM, dtype=np.int64)
    if not n:
        return level, np.zeros(0, dtype=bool)
    lines_of = cpu.line_bytes
    # thread order: position among the thread's line accesses
    t_order = np.lexsort((seq, h))
    idx = np.empty(n, dtype=np.int64)
    idx[t_order] = np.arange(n)
    # distinct lines per access, per thread
    order, same = _prev_same((h, line), (seq, line, h))
    H = int(h.max()) + 1
    distinct = np.bincount(h[order][~same], minlength=H)
    reuse = np.zeros(n, dtype=bool)
    gap = np.zeros(n)
    cur, prev = order[1:][same[1:]], order[:-1][same[1:]]
    reuse[cur] = True
    gap[cur] = np.minimum(idx[cur] - idx[prev], distinct[h[cur]])  # at most every line the thread touches
    share = threads_on_core[h]
    l1 = cpu.l1_bytes / lines_of / share
    l2 = cpu.l2_bytes / lines_of / share
    llc_lines = cpu.llc_bytes / lines_of
    llc = llc_lines / max(1, active_threads)
    level[reuse] = np.select([gap[reuse] < l1[reuse], gap[reuse] < l2[reuse], gap[reuse] < llc],
                             [L1, L2, LLC], DRAM)
    # first touches: the earliest over all threads is cold; others hit the LLC if the footprint fits
    first = np.flatnonzero(~reuse)
    t = seq[first] / np.maximum(_last_seq(h, seq, H), 1)[h[first]]  # normalised time within its thread
    o = np.lexsort((t, line[first]))
    earliest = np.ones(o.size, dtype=bool)
    earliest[1:] = line[first][o][1:] != line[first][o][:-1]
    footprint = np.unique(line).size
    level[first[o[~earliest]]] = LLC if footprint <= llc_lines else DRAM
    return level, _prefetched(h, seq, pcs, line, cpu.prefetch_max_stride_bytes // lines_of)


def _last_seq(h, seq, H: int) -> np.ndarray:
    last = np.zeros(H, dtype=np.int64)
    np.maximum.at(last, h, seq)
    return last


def _prefetched(h, seq, pcs, line, max_stride_lines: int) -> np.ndarray:
    n = line.size
    out = np.zeros(n, dtype=bool)
    if max_stride_lines <= 0 or n < 3:
        return out
    order = np.lexsort((line, seq, pcs, h))
    hh, pp, ll = h[order], pcs[order], line[order]
    stream = np.ones(n, dtype=bool)  # a new line in its (thread, pc) stream
    stream[1:] = (hh[1:] != hh[:-1]) | (pp[1:] != pp[:-1]) | (ll[1:] != ll[:-1])
    s = np.flatnonzero(stream)
    sh, sp, sl = hh[s], pp[s], ll[s]
    delta = np.zeros(s.size, dtype=np.int64)
    same = np.zeros(s.size, dtype=bool)
    same[1:] = (sh[1:] == sh[:-1]) & (sp[1:] == sp[:-1])
    delta[1:] = sl[1:] - sl[:-1]
    hit = np.zeros(s.size, dtype=bool)
    hit[2:] = (same[2:] & same[1:-1] & (delta[2:] == delta[1:-1]) & (delta[2:] != 0)
               & (np.abs(delta[2:]) < max_stride_lines))
    out[order[s[hit]]] = True
    return out
