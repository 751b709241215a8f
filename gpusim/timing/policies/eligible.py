"""What every warp-scheduler policy asks of a sub-partition: whether a warp may issue this cycle
(ready, and its unit free: `open` ports), and which eligible warp is oldest."""

from gpusim.timing.jit import njit
from gpusim.timing.warp import QUEUED


@njit
def eligible(P, W, g, w):
    return W.where[w] == QUEUED and P.open[g, W.port[w]]


@njit
def oldest(P, W, g):
    best = -1
    for k in range(P.nw[g]):
        x = P.warps[g, k]
        if eligible(P, W, g, x) and (best < 0 or W.age[x] < W.age[best]):
            best = x
    return best
