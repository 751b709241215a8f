"""The node: `system.gpus` GPUs of one configuration, the host memory between them, and the path a
transfer between two GPUs takes (`system.gpu_interconnect`)."""

from __future__ import annotations

import simpy

from gpusim.config.schema import Config
from gpusim.system.gpu import Gpu
from gpusim.system.host import HostMemory
from gpusim.system.link import Stage
from gpusim.system.nvlink import NvLink
from gpusim.system.nvswitch import NvSwitch

NVSWITCH, NVLINK_RING, PCIE = "nvswitch", "nvlink_ring", "pcie"


class Topology:
    """The GPUs and their interconnect:

    - `nvswitch`: all-to-all, any pair through the switch at a GPU's whole NVLink bandwidth;
    - `nvlink_ring`: GPU g has half its links to g+1 and half to g-1 (with two GPUs, all links join
      them); any other pair goes over PCIe through host memory;
    - `pcie`: every pair over PCIe through host memory: the sender's link D2H into host memory, then
      the receiver's link H2D out of it (host memory carries the bytes twice).
    """

    def __init__(self, env: simpy.Environment, cfg: Config):
        self.kind = cfg.system.gpu_interconnect
        self.chunk_bytes = cfg.system.chunk_bytes
        self.gpus = [Gpu(env, cfg, g) for g in range(cfg.system.gpus)]
        self.host = HostMemory(env, cfg)
        n = len(self.gpus)
        self.switch = NvSwitch(env, cfg, n) if self.kind == NVSWITCH and n > 1 else None
        self.ring: dict[frozenset[int], NvLink] = {}
        if self.kind == NVLINK_RING and n > 1:
            per_neighbour = cfg.nvlink.links if n == 2 else cfg.nvlink.links // 2
            for g in range(n if n > 2 else 1):
                a, b = g, (g + 1) % n
                self.ring[frozenset((a, b))] = NvLink(env, cfg, a, b, per_neighbour)

    def route(self, src: int, dst: int) -> list[Stage]:
        """The stages a chunk from GPU `src` to GPU `dst` passes."""
        if self.switch is not None:
            return self.switch.route(src, dst)
        link = self.ring.get(frozenset((src, dst)))
        if link is not None:
            return link.route(src, dst)
        return self.via_host(src, dst)

    def route_name(self, src: int, dst: int) -> str:
        if self.switch is not None:
            return "NVSwitch"
        return "NVLink" if frozenset((src, dst)) in self.ring else "PCIe via host memory"

    def via_host(self, src: int, dst: int) -> list[Stage]:
        """PCIe through host memory: written by `src`'s DMA, read by `dst`'s."""
        port = self.host.port
        return [(self.gpus[src].pcie.d2h,), (port,), (port,), (self.gpus[dst].pcie.h2d,)]
