"""Strict oldest first: always the oldest eligible warp, whichever issued last (the loose baseline
GTO's greediness is measured against; Rogers et al., MICRO 2012)."""

from gpusim.timing.jit import njit
from gpusim.timing.policies.eligible import oldest


@njit
def pick(P, W, g, t):
    w = oldest(P, W, g)
    P.last[g] = w
    return w


@njit
def on_long_latency(P, g, w):
    pass
