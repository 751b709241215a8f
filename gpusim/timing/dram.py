"""Memory controllers and their DRAM channels. Addresses are interleaved over the controllers every
`interleave_bytes`; each controller's channel is a FIFO server whose service time per request is the
request's bytes over its share of the (sustained) bandwidth, with a bounded queue. Under load requests queue,
so bandwidth saturates and latency grows; unloaded, a read returns `dram.latency_cycles` after it
was sent."""

from __future__ import annotations

from gpusim.config import Config
from gpusim.timing.fifo import FifoServer


class MemoryController:
    """One controller: its channel is a FIFO server with a bounded queue."""

    __slots__ = ("channel", "bytes_per_cycle", "latency", "bytes_read", "bytes_written")

    def __init__(self, bytes_per_cycle: float, latency: int, queue_depth: int):
        self.channel = FifoServer(queue_depth)
        self.bytes_per_cycle = bytes_per_cycle
        self.latency = latency
        self.bytes_read = 0
        self.bytes_written = 0

    # the channel's counters
    busy_cycles = property(lambda self: self.channel.busy_cycles)
    queue_cycles = property(lambda self: self.channel.queue_cycles)
    requests = property(lambda self: self.channel.requests)

    def read(self, t: float, nbytes: int) -> float:
        """A read of `nbytes` sent at `t`: the cycle its data is back at the SM."""
        _, start = self.channel.serve(t, nbytes / self.bytes_per_cycle)
        self.bytes_read += nbytes
        return start + self.latency

    def write(self, t: float, nbytes: int) -> float:
        """A write-back of `nbytes` at `t`: the cycle the channel has taken it."""
        _, start = self.channel.serve(t, nbytes / self.bytes_per_cycle)
        self.bytes_written += nbytes
        return start + nbytes / self.bytes_per_cycle


class Dram:
    """The device memory: its controllers and the address map onto them."""

    def __init__(self, cfg: Config):
        d = cfg.dram
        per_cycle = d.bandwidth_gbps * d.efficiency / (cfg.chip.clock_mhz / 1000.0) / d.controllers
        self.controllers = [MemoryController(per_cycle, d.latency_cycles, d.queue_depth)
                            for _ in range(d.controllers)]
        self.interleave = d.interleave_bytes
        self.peak_bytes_per_cycle = d.bandwidth_gbps / (cfg.chip.clock_mhz / 1000.0)

    def controller(self, address: int) -> MemoryController:
        return self.controllers[(address // self.interleave) % len(self.controllers)]

    @property
    def bytes_read(self) -> int:
        return sum(c.bytes_read for c in self.controllers)

    @property
    def bytes_written(self) -> int:
        return sum(c.bytes_written for c in self.controllers)
