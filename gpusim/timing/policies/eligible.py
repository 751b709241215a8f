"""What every warp-scheduler policy asks of a sub-partition: whether a warp may issue this cycle
(ready, and its unit free: `open` ports), and which eligible warp is oldest."""

from gpusim.timing.jit import njit_inline
from gpusim.timing.warp import QUEUED


@njit_inline
def eligible(P, W, g, w):
    return W.where[w] == QUEUED and P.open[g, W.port[w]]


@njit_inline
def oldest(P, W, g):
    best = -1
    best_age = 0
    warps, open_, where, port, age = P.warps, P.open, W.where, W.port, W.age
    for k in range(P.nw[g]):
        x = warps[g, k]
        if where[x] == QUEUED and open_[g, port[x]] and (best < 0 or age[x] < best_age):
            best = x
            best_age = age[x]
    return best
