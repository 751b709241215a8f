"""Dispatch to the cache replacement policy chosen in YAML (its index in
`gpusim.config.vocab.REPLACEMENT_POLICIES`)."""

from gpusim.config.vocab import REPLACEMENT_POLICIES
from gpusim.timing.jit import njit
from gpusim.timing.policies import replacement_fifo as fifo
from gpusim.timing.policies import replacement_lru as lru
from gpusim.timing.policies import replacement_srrip as srrip

LRU, FIFO, SRRIP = (REPLACEMENT_POLICIES.index(n) for n in ("lru", "fifo", "srrip"))


@njit
def on_hit(policy, meta, row, way, clock):
    if policy == LRU:
        lru.on_hit(meta, row, way, clock)
    elif policy == FIFO:
        fifo.on_hit(meta, row, way, clock)
    else:
        srrip.on_hit(meta, row, way, clock)


@njit
def on_fill(policy, meta, row, way, clock):
    if policy == LRU:
        lru.on_fill(meta, row, way, clock)
    elif policy == FIFO:
        fifo.on_fill(meta, row, way, clock)
    else:
        srrip.on_fill(meta, row, way, clock)


@njit
def victim(policy, meta, row, ways):
    if policy == LRU:
        return lru.victim(meta, row, ways)
    if policy == FIFO:
        return fifo.victim(meta, row, ways)
    return srrip.victim(meta, row, ways)
