"""A first-come-first-served server with a deterministic service time and a queue, bounded (a DRAM
channel) or not (an L2 slice's data port).

For requests that arrive in time order, a FIFO single server's start times follow in closed form
(start = max(arrival, previous finish)), so the server resolves each request when it arrives instead
of spending a SimPy process wake-up and two events on it. `tests/timing/test_fifo.py` checks the
closed form against a `simpy.Resource` model of the same server."""

from __future__ import annotations

from collections import deque


class FifoServer:
    """Serves requests one at a time, `service` cycles each; holds at most `queue_depth` waiting
    requests (None: any number): a request that finds the queue full is accepted only when the oldest
    waiting one starts."""

    __slots__ = ("free_at", "queue_depth", "_waiting", "busy_cycles", "requests", "queue_cycles")

    def __init__(self, queue_depth: int | None = None):
        self.free_at = 0.0
        self.queue_depth = queue_depth  # None: unbounded
        self._waiting: deque[float] = deque()  # start times of accepted requests not yet started
        self.busy_cycles = 0.0
        self.requests = 0
        self.queue_cycles = 0.0  # time requests spent waiting for the server (sum)

    def serve(self, arrival: float, service: float) -> tuple[float, float]:
        """Book one request arriving at `arrival`; returns (accepted, start): when it entered the
        queue (later than `arrival` under back-pressure) and when service starts."""
        accepted = arrival
        depth = self.queue_depth
        if depth is not None:
            waiting = self._waiting
            while waiting and waiting[0] <= arrival:
                waiting.popleft()
            if len(waiting) >= depth:
                accepted = waiting[len(waiting) - depth]
        free = self.free_at
        start = free if free > accepted else accepted
        self.free_at = start + service
        if start > arrival:
            if depth is not None:
                waiting.append(start)
            self.queue_cycles += start - arrival
        self.busy_cycles += service
        self.requests += 1
        return accepted, start
