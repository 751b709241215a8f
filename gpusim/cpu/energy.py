"""A CPU package's energy over one kernel (the `cpu_power:` section, docs/power.md "The CPU"): the CPU
model's counts times an energy each, plus static power over the kernel's time.

    energy = instructions x instruction_pj + vector FP operations x vector_fp_op_pj
           + L1 accesses x l1_access_pj + L1 misses x l2_line_pj + L2 misses x llc_line_pj
           + DRAM bits x dram_pj_per_bit                                            dynamic
           + (uncore_static_w + core_static_w x cores with work + dram_static_w) x seconds   static

No voltage scaling: the CPU runs at its base clock (chip.clock_mhz), the one its vendor guarantees
within the TDP, and the energies are quoted there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PJ = 1e-12
# breakdown keys, in the order reports print them
PARTS = ("instruction", "vector_fp", "l1", "l2", "llc", "dram", "core_static", "uncore_static", "dram_static")


@dataclass(frozen=True, slots=True)
class CpuActivity:
    """The events of one CPU kernel that cost energy (summed over hardware threads)."""

    instructions: float
    vector_fp_ops: float  # fp32 vectors, fp64 vectors twice, a transcendental sfu_cycles times
    l1_accesses: float  # vector loads and stores, gathered elements
    l2_lines: float  # line accesses that missed the L1
    llc_lines: float  # ... that missed the L2
    dram_bytes: float
    cores: int  # cores with work


@dataclass(frozen=True, slots=True)
class CpuEnergy:
    """A CPU kernel's energy (J) by part, over `seconds`; `static_w` the part that scales with time."""

    seconds: float
    breakdown_j: dict[str, float]
    static_w: float
    tdp_w: float

    @property
    def energy_j(self) -> float:
        return sum(self.breakdown_j.values())

    @property
    def average_power_w(self) -> float:
        return self.energy_j / self.seconds if self.seconds else 0.0

    @property
    def dynamic_j(self) -> float:
        """The energy of the events (what does not scale with time)."""
        return self.energy_j - self.static_w * self.seconds

    def metrics(self) -> dict[str, Any]:
        """energy_j, average_power_w and the breakdown, as the GPU's power model names them."""
        return {"energy_j": self.energy_j, "average_power_w": self.average_power_w, "power_limit_w": self.tdp_w,
                "energy_breakdown_j": dict(self.breakdown_j)}


def static_power(pw: Any, cores: int) -> float:
    """Watts the package and DIMMs draw whatever the cores do, with `cores` cores awake."""
    return pw.uncore_static_w + pw.core_static_w * cores + pw.dram_static_w


def cpu_energy(pw: Any, act: CpuActivity, seconds: float) -> CpuEnergy:
    """`act`'s energy over `seconds` with the coefficients of a `cpu_power:` section."""
    parts = {
        "instruction": act.instructions * pw.instruction_pj * PJ,
        "vector_fp": act.vector_fp_ops * pw.vector_fp_op_pj * PJ,
        "l1": act.l1_accesses * pw.l1_access_pj * PJ,
        "l2": act.l2_lines * pw.l2_line_pj * PJ,
        "llc": act.llc_lines * pw.llc_line_pj * PJ,
        "dram": act.dram_bytes * 8 * pw.dram_pj_per_bit * PJ,
        "core_static": pw.core_static_w * act.cores * seconds,
        "uncore_static": pw.uncore_static_w * seconds,
        "dram_static": pw.dram_static_w * seconds,
    }
    return CpuEnergy(seconds, parts, static_power(pw, act.cores), pw.tdp_w)


__all__ = ["PARTS", "CpuActivity", "CpuEnergy", "cpu_energy", "static_power"]
