"""Least recently used: each way keeps the cycle-free clock value of its last use; a hit refreshes
it, the way with the smallest value is evicted."""

from gpusim.timing.jit import njit


@njit
def on_hit(meta, row, way, clock):
    meta[row, way] = clock


@njit
def on_fill(meta, row, way, clock):
    meta[row, way] = clock


@njit
def victim(meta, row, ways):
    best = 0
    for w in range(1, ways):
        if meta[row, w] < meta[row, best]:
            best = w
    return best
