"""Greedy then oldest (Rogers et al., "Cache-conscious wavefront scheduling", MICRO 2012): keep
issuing from the warp issued last while it is eligible; otherwise the oldest eligible warp."""

from gpusim.timing.jit import njit
from gpusim.timing.policies.eligible import eligible, oldest


@njit
def pick(P, W, g, t):
    last = P.last[g]
    if last >= 0 and eligible(P, W, g, last):
        return last
    w = oldest(P, W, g)
    P.last[g] = w
    return w


@njit
def on_long_latency(P, g, w):
    pass


@njit
def on_yield(P, g, w):
    """SASS's yield bit: the warp stops being the greedy one (the oldest eligible warp goes next)."""
    if P.last[g] == w:
        P.last[g] = -1
