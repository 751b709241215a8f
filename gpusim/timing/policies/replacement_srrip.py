"""Static re-reference interval prediction, 2-bit (Jaleel et al., "High performance cache replacement
using re-reference interval prediction", ISCA 2010), hit-priority variant: each way holds a
re-reference prediction value (RRPV) 0..3. A new line enters at 2 (a long interval, so a streaming
line leaves before the reused ones), a hit sets 0; the victim is the first way at 3, all ways aging
by one until one is."""

from gpusim.timing.jit import njit

DISTANT = 3
LONG = 2


@njit
def on_hit(meta, row, way, clock):
    meta[row, way] = 0


@njit
def on_fill(meta, row, way, clock):
    meta[row, way] = LONG


@njit
def victim(meta, row, ways):
    while True:
        for w in range(ways):
            if meta[row, w] >= DISTANT:
                return w
        for w in range(ways):
            meta[row, w] += 1
