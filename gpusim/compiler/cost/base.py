"""The cost-model interface: `CostModel.cost(kernel, cfg) -> Estimate`. A model predicts a kernel's
execution cycles (first block dispatched to last block retired, as the timing model counts them); the
launch overhead of the config (`launch.kernel_launch_overhead_ns`) is added the same way for every model."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpusim.compiler.lower.kernel import Kernel
from gpusim.config import Config
from gpusim.errors import GpusimError


@dataclass(frozen=True, slots=True)
class Estimate:
    """A kernel's predicted time: `cycles` (execution + launch overhead) and `seconds` at the config's
    clock; `detail` holds `kernel_cycles`, `launch_overhead_cycles` and the model's own terms."""

    cycles: float
    seconds: float
    detail: Mapping[str, Any]

    @property
    def kernel_cycles(self) -> float:
        """Execution cycles alone (what the models are compared on)."""
        return float(self.detail["kernel_cycles"])


def launch_overhead_cycles(cfg: Config) -> float:
    """The config's kernel launch overhead in SM cycles."""
    return round(cfg.launch.kernel_launch_overhead_ns * cfg.chip.clock_mhz / 1000.0)


class CostModel(ABC):
    """Predicts what a kernel costs on a config."""

    name: str

    @property
    def key(self) -> str:
        """What identifies the model's predictions in cache keys (its name, and anything fitted)."""
        return self.name

    def cost(self, kernel: Kernel, cfg: Config) -> Estimate:
        """What `kernel` costs on `cfg`; a GpusimError when it cannot run there."""
        return self.estimate(*self.kernel_cycles(kernel, cfg), cfg)

    def costs(self, kernels: Sequence[Kernel], cfg: Config, **options: Any) -> list[Estimate | None]:
        """Each kernel's Estimate, None for one that cannot run on `cfg` (a model that can score several
        kernels at once, in parallel, overrides this; `options` are its own)."""
        out: list[Estimate | None] = []
        for k in kernels:
            try:
                out.append(self.cost(k, cfg))
            except GpusimError:
                out.append(None)
        return out

    @staticmethod
    def estimate(cycles: float, terms: Mapping[str, Any], cfg: Config) -> Estimate:
        """The Estimate of `cycles` of execution on `cfg`: the launch overhead added."""
        overhead = launch_overhead_cycles(cfg)
        total = cycles + overhead
        return Estimate(total, total / (cfg.chip.clock_mhz * 1e6),
                        {"kernel_cycles": cycles, "launch_overhead_cycles": overhead, **terms})

    @abstractmethod
    def kernel_cycles(self, kernel: Kernel, cfg: Config) -> tuple[float, dict[str, Any]]:
        """The kernel's execution cycles and the terms behind them."""
