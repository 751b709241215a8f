"""A GPU's PCI Express link to the host."""

from __future__ import annotations

import simpy

from gpusim.config.schema import Config
from gpusim.system.link import Channel

GB = 1e9  # bytes per GB (the configs' GB/s are 10^9 bytes per second)
NS = 1e-9  # seconds per ns


class PcieLink:
    """The link between one GPU and the host: a channel each way at `pcie.bandwidth_gbps` x
    `pcie.efficiency` with `pcie.latency_ns`, or one channel both directions share when the link is not
    full duplex (so H2D and D2H copies take turns)."""

    def __init__(self, env: simpy.Environment, cfg: Config, gpu: int):
        pcie = cfg.pcie
        bandwidth = pcie.bandwidth_gbps * pcie.efficiency * GB
        latency = pcie.latency_ns * NS
        if pcie.full_duplex:
            self.h2d = Channel(env, f"GPU {gpu} PCIe H2D", bandwidth, latency)
            self.d2h = Channel(env, f"GPU {gpu} PCIe D2H", bandwidth, latency)
        else:
            self.h2d = self.d2h = Channel(env, f"GPU {gpu} PCIe (half duplex)", bandwidth, latency)
