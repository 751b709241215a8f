"""First in, first out: each way keeps the clock value of its allocation; hits change nothing, the
earliest allocated line is evicted."""

from gpusim.timing.jit import njit


@njit
def on_hit(meta, row, way, clock):
    pass


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
