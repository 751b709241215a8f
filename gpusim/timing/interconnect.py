"""The crossbar between the SMs and the L2 slices: routes each line to its slice. Lines are spread
over slices by their number, hashed so that power-of-two strides still use every slice; the
crossbar's own latency is part of the L2 hit latency seen from the SM."""

from __future__ import annotations

from gpusim.timing.l2 import L2Slice


class Interconnect:
    def __init__(self, slices: list[L2Slice]):
        self.slices = slices
        self.n = len(slices)

    def slice_of(self, line: int) -> L2Slice:
        return self.slices[(line ^ (line >> 7) ^ (line >> 13)) % self.n]
