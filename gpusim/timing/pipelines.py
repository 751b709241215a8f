"""A sub-partition's execution units (FP32, INT, FP64, SFU, LD/ST, branch, sync, tensor): each is a
pipeline that accepts a new warp instruction every `interval` cycles — a 32-thread warp on a unit of
L lanes per cycle occupies it ceil(32 / L) cycles — and delivers results `latency_cycles` later."""

from __future__ import annotations

from gpusim.timing.decode import PORTS


class Pipelines:
    __slots__ = ("free", "busy")

    def __init__(self):
        self.free = [0] * len(PORTS)  # cycle each unit accepts its next instruction
        self.busy = [0] * len(PORTS)  # cycles each unit was occupied
