"""First in, first out: each way keeps the clock value of its allocation; hits change nothing, the
earliest allocated line is evicted."""

from gpusim.timing.jit import njit
from gpusim.timing.policies.replacement_lru import victim  # noqa: F401 (the smallest stamp: here, the earliest fill)


@njit
def on_hit(meta, row, way, clock):
    pass


@njit
def on_fill(meta, row, way, clock):
    meta[row, way] = clock
