"""Kernel cycles from the timing model, simulated once per (workload, GPU, parameters) and kept for the
session, and the straight line that carries them past the sizes it is practical to simulate."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from gpusim.config.occupancy import occupancy
from gpusim.config.schema import Config
from gpusim.stats.power import kernel_power
from gpusim.stats.simulate import simulate
from gpusim.workloads import load_workload
from gpusim.workloads.loader import Workload

# sections the timing model never reads: configs that differ only there time a kernel the same
SYSTEM_SECTIONS = ("name", "source", "description", "pcie", "nvlink", "host", "system")


@dataclass(frozen=True, slots=True)
class KernelRun:
    """One simulated kernel: its cycles, its blocks and warp instructions, and how many of its blocks the
    GPU holds at once (a wave: blocks resident per SM by occupancy x SMs)."""

    cycles: int
    blocks: int
    warp_instructions: int
    blocks_per_wave: int
    dram_bytes: int = 0  # read and written
    energy_j: float | None = None  # at chip.clock_mhz, as the cycles (the power cap not applied); None: no power:
    static_w: float = 0.0  # of which this many watts scale with time (leakage, background, constant)

    @property
    def waves(self) -> float:
        return self.blocks / self.blocks_per_wave


_RUNS: dict[tuple[str, str, tuple], KernelRun] = {}


def gpu_key(cfg: Config) -> str:
    """A hash of what the timing model reads of `cfg` (not its host, links or node)."""
    data = {k: v for k, v in cfg.to_dict().items() if k not in SYSTEM_SECTIONS}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def as_workload(workload: Workload | str) -> Workload:
    return workload if isinstance(workload, Workload) else load_workload(workload)


def blocks_per_wave(workload: Workload | str, cfg: Config, **params: Any) -> int:
    """Blocks of the workload's kernel at `params` resident on the whole GPU at once."""
    wl = as_workload(workload)
    launch = wl.launch(wl.params(params))
    occ = occupancy(cfg, launch.threads_per_block, wl.program.regs_per_thread, wl.program.shared_bytes)
    return occ.active_blocks_per_sm * cfg.chip.sm_count


def kernel_run(workload: Workload | str, cfg: Config, **params: Any) -> KernelRun:
    """Simulate (and verify) the workload at `params` on `cfg`, or return the run kept from before."""
    wl = as_workload(workload)
    key = (str(wl.folder), gpu_key(cfg), tuple(sorted(wl.params(params).items())))
    if key not in _RUNS:
        result = simulate(wl, cfg, **params)
        k = result.kernel
        power = kernel_power(cfg, result.timing, result.run.result.stats, cap=False)
        _RUNS[key] = KernelRun(result.cycles, k["blocks"], k["warp_instructions"], blocks_per_wave(wl, cfg, **params),
                               int(k["dram_bytes_read"] + k["dram_bytes_written"]),
                               None if power is None else power.energy_j, 0.0 if power is None else power.static_w)
    return _RUNS[key]


def extrapolate(x: float, x0: float, y0: float, x1: float, y1: float) -> float:
    """The line through (x0, y0) and (x1, y1), at x."""
    return y0 + (x - x0) * (y1 - y0) / (x1 - x0)
