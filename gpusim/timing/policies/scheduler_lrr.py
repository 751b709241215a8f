"""Loose round robin: the first eligible warp after the one issued last, in age order (wrapping
round to the oldest)."""

from gpusim.timing.jit import njit
from gpusim.timing.policies.eligible import eligible, oldest


@njit
def pick(P, W, g, t):
    w = -1
    last = P.last[g]
    if last >= 0:
        after = W.age[last]
        warps, age = P.warps, W.age
        for k in range(P.nw[g]):
            x = warps[g, k]
            if age[x] > after and eligible(P, W, g, x) and (w < 0 or age[x] < age[w]):
                w = x
    if w < 0:
        w = oldest(P, W, g)
    P.last[g] = w
    return w


@njit
def on_long_latency(P, g, w):
    pass
