"""Sampled simulation of large kernels (docs/sampling.md): simulate a kernel's first waves of blocks in
detail, with its long loops cut short when the budget asks for it, and extrapolate to the whole grid and
the whole loops, with a bound on the error that the sample grows towards.

    >>> r = simulate_sampled("matmul_tiled", "a100", sample="auto", n=4096)   # doctest: +SKIP
    >>> r.cycles, r.confidence, r.mode, r.result.kernel["l2_hit_rate_pct"]     # doctest: +SKIP

The package, in the order a sample is taken: `profile` (what the kernel is: the static check, a few
whole blocks run functionally, the hardware floor), `plan` (what to simulate, and the next plan while
the bound is too wide), `run` (the detailed runs), `model` (the extrapolation's arithmetic), `estimate`
(runs to cycles, and to the whole kernel's counters), `whole` (the whole kernel's SimResult with each
metric's bound), `result` (`SampledResult`) and `simulate` (the driver: `simulate_sampled`,
`sample_kernel`)."""

from gpusim.analysis.sampling.plan import Plan, level_caps, make_plan
from gpusim.analysis.sampling.profile import hardware_roofs
from gpusim.analysis.sampling.result import SampledResult
from gpusim.analysis.sampling.run import SampleRun
from gpusim.analysis.sampling.simulate import (
    AUTO_MIN_WARP_INSTRUCTIONS,
    DEFAULT_BOUND,
    SAMPLE_MODES,
    KernelSample,
    sample_kernel,
    simulate_sampled,
)

__all__ = ["AUTO_MIN_WARP_INSTRUCTIONS", "DEFAULT_BOUND", "KernelSample", "Plan", "SAMPLE_MODES", "SampleRun",
           "SampledResult", "hardware_roofs", "level_caps", "make_plan", "sample_kernel", "simulate_sampled"]
