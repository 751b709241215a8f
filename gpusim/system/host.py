"""The host: its memory, shared by every transfer staged through it, and the driver's memcpy that stages
pageable buffers."""

from __future__ import annotations

import simpy

from gpusim.config.schema import Config
from gpusim.system.link import Channel, Stage
from gpusim.system.pcie import GB


class HostMemory:
    """The host's DRAM as one port at `host.memory_bandwidth_gbps`: a GPU-to-GPU transfer over PCIe is
    written into it by one GPU and read out by the other, two passes of its bytes. A pageable copy is
    staged through pinned buffers of `host.staging_buffer_bytes`, each filled (H2D) or emptied (D2H) by
    the calling thread's memcpy at `host.memcpy_bandwidth_gbps`."""

    def __init__(self, env: simpy.Environment, cfg: Config):
        host = cfg.host
        self.env = env
        self.port = Channel(env, "host memory", host.memory_bandwidth_gbps * GB, 0.0)
        self.memcpy_bandwidth = host.memcpy_bandwidth_gbps * GB
        self.staging_buffer_bytes = host.staging_buffer_bytes
        self.pinned_by_default = host.buffers == "pinned"

    def memcpy_stage(self, name: str) -> Stage:
        """The CPU memcpy of one pageable copy, as a stage of its own (each copy's calling thread copies
        for itself, so copies do not queue for it)."""
        return (Channel(self.env, name, self.memcpy_bandwidth, 0.0),)
