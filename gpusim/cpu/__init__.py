"""A CPU beside the GPU timing model: out-of-order cores with SIMD and SMT, caches, a prefetcher, a branch
predictor and DRAM channels, timed by interval simulation over the functional executor's per-SIMD-group
streams (docs/cpu.md). It never imports gpusim.timing."""

from gpusim.cpu.model import CpuResult, cpu_spec, dram_bandwidth, simulate_cpu

__all__ = ["CpuResult", "cpu_spec", "dram_bandwidth", "simulate_cpu"]
