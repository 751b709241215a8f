"""A GPU as the system model sees it: SMs that run one kernel at a time, copy engines, a PCIe link."""

from __future__ import annotations

import simpy

from gpusim.config.schema import Config
from gpusim.system.copy_engine import CopyEngines
from gpusim.system.pcie import PcieLink


class Gpu:
    """GPU `index`: its SMs as one server (kernels from different streams take turns; concurrent kernels
    are not modelled), its `chip.copy_engines` copy engines and its PCIe link."""

    def __init__(self, env: simpy.Environment, cfg: Config, index: int):
        self.index = index
        self.sms = simpy.Resource(env, capacity=1)
        self.copy_engines = CopyEngines(env, index, cfg.chip.copy_engines)
        self.pcie = PcieLink(env, cfg, index)
        self.clock_hz = cfg.chip.clock_mhz * 1e6

    def seconds(self, cycles: float) -> float:
        """`cycles` of the SM clock in seconds."""
        return cycles / self.clock_hz
