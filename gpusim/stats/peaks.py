"""Figures above the machine's peak: none is printed as a result without a warning that says why.

One check (`above_peak`) for any figure against its peak, used by every printer of results (`gpusim run`,
`sweep`, `report`, `validate`), and the checks of a kernel's metrics (`kernel_warnings`): each knows what
can put its figure above the peak, so the warning explains rather than only flags:

- `useful_bandwidth_gbps` (the workload's declared `bytes_moved` over the kernel's time) above the DRAM
  peak: the declared bytes did not all cross DRAM within the kernel (stores still in the L2 when it
  ended, loads served by the L2); the DRAM bytes are the bandwidth the kernel drew;
- `dram_bandwidth_gbps` above the DRAM peak: the timing model moved more than its own peak allows (a
  simulator bug);
- `achieved_gflops` above the FP32 peak: the workload's `flops:` counts work the FP32 pipes did not do
  (tensor cores, FP64, or a formula that overcounts)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TOLERANCE = 1e-6  # relative: a figure at its peak, to rounding, is not above it


@dataclass(frozen=True, slots=True)
class PeakWarning:
    """`metric` read `value` `unit`, above `peak` (the config's), and `why`."""

    metric: str
    value: float
    peak: float
    unit: str
    why: str

    @property
    def pct(self) -> float:
        return 100.0 * self.value / self.peak

    def __str__(self) -> str:
        return (f"{self.metric} {self.value:,.1f} {self.unit} is {self.pct:.0f}% of the {self.peak:,.0f} {self.unit} "
                f"peak: {self.why}")

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "peak": self.peak, "unit": self.unit, "why": self.why,
                "text": str(self)}


def above_peak(metric: str, value: float | None, peak: float | None, unit: str, why: str) -> PeakWarning | None:
    """A PeakWarning when `value` exceeds `peak` (both in `unit`), else None (also when either is missing)."""
    if value is None or not peak or value <= peak * (1 + TOLERANCE):
        return None
    return PeakWarning(metric, float(value), float(peak), unit, why)


def kernel_warnings(kernel: Mapping[str, Any], peak_fp32_gflops: float | None = None) -> list[PeakWarning]:
    """The warnings of a kernel's metrics (`SimResult.kernel`, or a sweep row's flattened columns): each
    bandwidth and throughput above its peak, with the reason. `peak_fp32_gflops` defaults to what the
    metrics imply (`achieved_gflops` / `achieved_gflops_pct`)."""
    out: list[PeakWarning] = []
    peak_dram = kernel.get("peak_dram_bandwidth_gbps")
    useful, dram = kernel.get("useful_bandwidth_gbps"), kernel.get("dram_bandwidth_gbps")
    moved = kernel.get("bytes_moved") or 0
    drawn = (kernel.get("dram_bytes_read") or 0) + (kernel.get("dram_bytes_written") or 0)
    out.append(above_peak("useful_bandwidth_gbps", useful, peak_dram, "GB/s",
                          f"the workload's bytes_moved ({moved:,} B) is not DRAM traffic: {max(0, moved - drawn):,} B "
                          "of it did not cross DRAM within the kernel (stores still in the L2 when it ended, loads "
                          f"the L2 served); DRAM moved {drawn:,} B, {dram or 0:,.1f} GB/s"))
    out.append(above_peak("dram_bandwidth_gbps", dram, peak_dram, "GB/s",
                          "the timing model moved more bytes than its DRAM peak allows: a simulator bug, please "
                          "report it with this result"))
    gflops, pct = kernel.get("achieved_gflops"), kernel.get("achieved_gflops_pct")
    if peak_fp32_gflops is None and gflops and pct:
        peak_fp32_gflops = 100.0 * gflops / pct
    out.append(above_peak("achieved_gflops", gflops, peak_fp32_gflops, "GFLOP/s",
                          "the workload's flops: expression counts work the FP32 pipes did not do (tensor-core or "
                          "FP64 instructions, or a formula that overcounts)"))
    return [w for w in out if w is not None]


__all__ = ["PeakWarning", "TOLERANCE", "above_peak", "kernel_warnings"]
