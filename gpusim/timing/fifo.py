"""A first-come-first-served server with a deterministic service time (an L2 slice's data port, a
DRAM channel). For requests that arrive in time order a FIFO server's start times follow in closed
form — start = max(arrival, previous finish) — so a request is resolved when it arrives instead of
being queued as an event. The servers of one kind are rows of one structure-of-arrays (`Fifos`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing.jit import njit, struct_type


class Fifos(NamedTuple):
    free_at: np.ndarray  # float64: when each server finishes its last accepted request
    busy_cycles: np.ndarray  # float64: service time summed
    queue_cycles: np.ndarray  # float64: time requests waited for the server, summed
    requests: np.ndarray  # int64


struct_type(Fifos)


def make_fifos(n: int) -> Fifos:
    return Fifos(np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64))


@njit
def serve(f, i, arrival, service):
    """Book one request on server `i` arriving at `arrival` (cycles, float); returns when its service
    starts."""
    free = f.free_at[i]
    start = free if free > arrival else arrival
    f.free_at[i] = start + service
    if start > arrival:
        f.queue_cycles[i] += start - arrival
    f.busy_cycles[i] += service
    f.requests[i] += 1
    return start
