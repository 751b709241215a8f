"""NVSwitch: every GPU's NVLinks go to the switches, so any two GPUs talk at a GPU's full NVLink bandwidth."""

from __future__ import annotations

import simpy

from gpusim.config.schema import Config
from gpusim.system.link import Channel, Stage
from gpusim.system.nvlink import nvlink_bandwidth
from gpusim.system.pcie import NS


class NvSwitch:
    """A non-blocking switch: GPU g has an output and an input port of all its `nvlink.links` links. A
    transfer holds the sender's output and the receiver's input together, so two GPUs sending to one
    receiver share its input, and the latency (`nvlink.latency_ns`) is paid once."""

    def __init__(self, env: simpy.Environment, cfg: Config, gpus: int):
        bandwidth = nvlink_bandwidth(cfg, cfg.nvlink.links)
        latency = cfg.nvlink.latency_ns * NS
        self.out = [Channel(env, f"GPU {g} NVSwitch out", bandwidth, latency) for g in range(gpus)]
        self.into = [Channel(env, f"GPU {g} NVSwitch in", bandwidth, 0.0) for g in range(gpus)]

    def route(self, src: int, dst: int) -> list[Stage]:
        return [(self.out[src], self.into[dst])]
