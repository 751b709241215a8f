"""The GigaThread engine: hands thread blocks to SMs in block order. It first fills every SM up to
the occupancy limit, breadth first across GPCs, then places the next block on an SM as soon as one
of that SM's blocks retires. Placing a block takes `block_dispatch_cycles`.

The blocks it places come from a queue the feeder keeps filled (`staged`: each block's id and its
warps' stream handles); `exhausted` once the launch has no more."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing.jit import NEVER, njit, struct_type


class Dispatcher(NamedTuple):
    staged_id: np.ndarray  # ring of staged blocks: id, first stream handle, warps
    staged_h0: np.ndarray
    staged_nw: np.ndarray
    head: np.ndarray  # (1,) next staged block to place
    tail: np.ndarray  # (1,) where the feeder stages the next one
    exhausted: np.ndarray  # (1,) bool: the launch has no more blocks to stage
    outstanding: np.ndarray  # (1,) blocks placed and not yet retired
    all_done: np.ndarray  # (1,) bool
    end: np.ndarray  # (1,) the last block's end cycle
    timeline: np.ndarray  # (blocks, 4): block, sm, start, end
    ntimeline: np.ndarray  # (1,)
    dispatch_cycles: int
    blocks_per_sm: int
    capacity: int  # of the staged ring


struct_type(Dispatcher)


def make_dispatcher(capacity: int, dispatch_cycles: int, blocks_per_sm: int) -> Dispatcher:
    one = lambda: np.zeros(1, dtype=np.int64)  # noqa: E731
    return Dispatcher(np.zeros(capacity, np.int64), np.zeros(capacity, np.int64), np.zeros(capacity, np.int64),
                      one(), one(), np.zeros(1, np.bool_), one(), np.zeros(1, np.bool_), one(),
                      np.zeros((1024, 4), np.int64), one(), dispatch_cycles, blocks_per_sm, capacity)


@njit
def staged(q):
    return q.tail[0] - q.head[0]


@njit
def take(q):
    """The next staged block: (id, first handle, warps)."""
    i = q.head[0] % q.capacity
    q.head[0] += 1
    return q.staged_id[i], q.staged_h0[i], q.staged_nw[i]


@njit
def record(q, block, sm, start, end):
    """A block retired: its line in the timeline (returns False when the timeline needs more room)."""
    n = q.ntimeline[0]
    q.timeline[n, 0] = block
    q.timeline[n, 1] = sm
    q.timeline[n, 2] = start
    q.timeline[n, 3] = end
    q.ntimeline[0] = n + 1
    q.outstanding[0] -= 1
    if end > q.end[0]:
        q.end[0] = end


__all__ = ["NEVER", "Dispatcher", "make_dispatcher", "staged", "take", "record"]
