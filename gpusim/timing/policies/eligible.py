"""What every warp-scheduler policy asks of a sub-partition: whether a warp may issue this cycle
(ready, and its unit free: `open` ports), and which eligible warp is oldest."""

from gpusim.timing.jit import njit
from gpusim.timing.warp import QUEUED


@njit
def eligible(P, W, g, w):
    return W.where[w] == QUEUED and P.open[g, W.port[w]]


@njit
def oldest(P, W, g):
    """The oldest eligible warp (-1: none). A sub-partition lists its warps in launch order (warps join
    at the end and keep their order), so the first eligible one is the oldest; only two_level, which
    does not ask this, reorders the list."""
    warps, open_, where, port = P.warps, P.open, W.where, W.port
    for k in range(P.nw[g]):
        x = warps[g, k]
        if where[x] == QUEUED and open_[g, port[x]]:
            return x
    return -1
