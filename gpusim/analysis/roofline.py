"""The roofline of a configuration: its compute peak, its memory roofs and where they meet.

A kernel of arithmetic intensity I (FLOP per byte) can reach at most min(P, B * I) GFLOP/s under a roof
of bandwidth B (GB/s) and a compute peak P (GFLOP/s); the ridge point I = P / B is where the two meet.

- P, the FP32 peak: `Config.derived()["peak_fp32_gflops"]` = FP32 lanes per SM x SMs x 2 (an FMA is two
  flops) x clock (GHz);
- the DRAM roof: `dram.bandwidth_gbps`;
- the L2 roof: every slice returns `l2.slice_bandwidth_bytes_per_cycle` bytes per SM clock, so
  B_L2 = l2.slices x l2.slice_bandwidth_bytes_per_cycle x chip.clock_mhz / 1000 GB/s
  (bytes per cycle x 10^6 cycles per second per MHz / 10^9 bytes per GB);
- the L1 roof: L1 and shared memory share one data path per SM, `shared_memory.banks` x
  `shared_memory.bank_width_bytes` bytes per cycle (one wavefront), so
  B_L1 = chip.sm_count x banks x bank_width x chip.clock_mhz / 1000 GB/s.

On a100: P = 64 x 108 x 2 x 1.41 = 19491.84 GFLOP/s, B_DRAM = 1555 GB/s (ridge 12.535 FLOP/byte),
B_L2 = 80 x 64 x 1410 / 1000 = 7219.2 GB/s (ridge 2.7 FLOP/byte), B_L1 = 108 x 32 x 4 x 1410 / 1000 =
19491.84 GB/s (ridge 1 FLOP/byte).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusim.config.schema import Config


@dataclass(frozen=True, slots=True)
class Roofline:
    """One configuration's roofs (GFLOP/s, GB/s) and ridge points (FLOP/byte)."""

    config: str
    peak_fp32_gflops: float
    dram_bandwidth_gbps: float
    l2_bandwidth_gbps: float
    l1_bandwidth_gbps: float = 0.0

    @property
    def dram_ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the DRAM roof meets the FP32 peak."""
        return self.peak_fp32_gflops / self.dram_bandwidth_gbps

    @property
    def l1_ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the L1 roof meets the FP32 peak."""
        return self.peak_fp32_gflops / self.l1_bandwidth_gbps

    @property
    def l2_ridge(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the L2 roof meets the FP32 peak."""
        return self.peak_fp32_gflops / self.l2_bandwidth_gbps

    def attainable(self, intensity: float, bandwidth_gbps: float | None = None) -> float:
        """The most GFLOP/s a kernel of `intensity` FLOP/byte can reach under the roof of
        `bandwidth_gbps` (default: DRAM)."""
        bandwidth = self.dram_bandwidth_gbps if bandwidth_gbps is None else bandwidth_gbps
        return min(self.peak_fp32_gflops, bandwidth * intensity)


def l2_bandwidth_gbps(cfg: Config) -> float:
    """The L2's aggregate bandwidth: slices x bytes per slice per cycle x clock, in GB/s."""
    return cfg.l2.slices * cfg.l2.slice_bandwidth_bytes_per_cycle * cfg.chip.clock_mhz / 1000.0


def l1_bandwidth_gbps(cfg: Config) -> float:
    """The L1/shared data path's aggregate bandwidth: SMs x banks x bank width x clock, in GB/s."""
    sm = cfg.shared_memory
    return cfg.chip.sm_count * sm.banks * sm.bank_width_bytes * cfg.chip.clock_mhz / 1000.0


def roofline(cfg: Config) -> Roofline:
    """The roofs of `cfg` (see the module docstring for the formulas)."""
    return Roofline(config=cfg.name, peak_fp32_gflops=cfg.derived()["peak_fp32_gflops"],
                    dram_bandwidth_gbps=float(cfg.dram.bandwidth_gbps), l2_bandwidth_gbps=l2_bandwidth_gbps(cfg),
                    l1_bandwidth_gbps=l1_bandwidth_gbps(cfg))


def arithmetic_intensity(flops: float | None, nbytes: float | None) -> float | None:
    """FLOP per byte; None when either is missing or zero (the kernel cannot be placed)."""
    if not flops or not nbytes:
        return None
    return flops / nbytes


__all__ = ["Roofline", "arithmetic_intensity", "l1_bandwidth_gbps", "l2_bandwidth_gbps", "roofline"]
