"""Dispatch to the warp-scheduler policy chosen in YAML (its index in
`gpusim.config.vocab.SCHEDULER_POLICIES`). A policy's `pick(P, W, g, t)` returns the warp sub-partition
`g` issues next among its eligible ones (or -1), remembering what it needs in `P.last[g]`;
`on_long_latency(P, g, w)` hears that warp `w` waits on global memory or a barrier; `on_yield(P, g, w)` that
it issued an instruction with SASS's yield bit (a hint to turn to another warp)."""

from gpusim.config.vocab import SCHEDULER_POLICIES
from gpusim.timing.jit import njit
from gpusim.timing.policies import scheduler_gto as gto
from gpusim.timing.policies import scheduler_lrr as lrr
from gpusim.timing.policies import scheduler_oldest_first as oldest_first
from gpusim.timing.policies import scheduler_two_level as two_level

LRR, GTO, TWO_LEVEL, OLDEST_FIRST = (SCHEDULER_POLICIES.index(n) for n in ("lrr", "gto", "two_level", "oldest_first"))


@njit
def pick(P, W, g, t):
    policy = P.policy
    if policy == GTO:
        return gto.pick(P, W, g, t)
    if policy == LRR:
        return lrr.pick(P, W, g, t)
    if policy == TWO_LEVEL:
        return two_level.pick(P, W, g, t)
    return oldest_first.pick(P, W, g, t)


@njit
def on_long_latency(P, g, w):
    policy = P.policy
    if policy == TWO_LEVEL:
        two_level.on_long_latency(P, g, w)
    elif policy == GTO:
        gto.on_long_latency(P, g, w)
    elif policy == LRR:
        lrr.on_long_latency(P, g, w)
    else:
        oldest_first.on_long_latency(P, g, w)


@njit
def on_yield(P, g, w):
    if P.policy == GTO:
        gto.on_yield(P, g, w)
