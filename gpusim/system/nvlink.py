"""Point-to-point NVLinks between two GPUs."""

from __future__ import annotations

import simpy

from gpusim.config.schema import Config
from gpusim.system.link import Channel, Stage
from gpusim.system.pcie import GB, NS


def nvlink_bandwidth(cfg: Config, links: int) -> float:
    """Bytes per second one way over `links` NVLinks: each link carries `bandwidth_per_link_gbps` in both
    directions together, half each way, at `nvlink.efficiency`."""
    nv = cfg.nvlink
    return links * nv.bandwidth_per_link_gbps / 2 * nv.efficiency * GB


class NvLink:
    """`links` NVLinks joining GPUs `a` and `b`: one channel each way with `nvlink.latency_ns`."""

    def __init__(self, env: simpy.Environment, cfg: Config, a: int, b: int, links: int):
        bandwidth, latency = nvlink_bandwidth(cfg, links), cfg.nvlink.latency_ns * NS
        self.ends = (a, b)
        self.forward = Channel(env, f"NVLink GPU {a} -> GPU {b}", bandwidth, latency)
        self.backward = Channel(env, f"NVLink GPU {b} -> GPU {a}", bandwidth, latency)

    def route(self, src: int, dst: int) -> list[Stage]:
        return [(self.forward,)] if (src, dst) == self.ends else [(self.backward,)]
