"""gpusim: a GPU architecture simulator.

The public API (the CLI is a thin layer over it):

    >>> import gpusim
    >>> cfg = gpusim.load_config("a100")
    >>> run = gpusim.run_workload("saxpy", cfg, n=4096)     # functional execution, verified
    >>> run.ok, run.result.stats.simt_efficiency
    (True, 1.0)
    >>> r = gpusim.simulate("saxpy", cfg, n=1 << 16)        # + the timing model: cycles, metrics, verdict
    >>> r.cycles > 0, r.verified, r.verdict.kind in gpusim.stats.VERDICTS
    (True, True, True)
    >>> print(r.summary_table())                            # doctest: +SKIP
    >>> r.to_dict()["kernel"]["dram_bandwidth_gbps"]        # doctest: +SKIP
    >>> gpusim.stats.write_trace(r, "saxpy.json")  # for ui.perfetto.dev  # doctest: +SKIP
    >>> gpusim.occupancy(cfg, block_size=256, regs_per_thread=64, smem_per_block=16384).occupancy
    0.5
"""

from __future__ import annotations

from gpusim.lazy import attribute
from gpusim.version import __version__

# The public names and the modules that define them, imported on first use (PEP 562): `import gpusim`
# loads no layer, so that a command that simulates nothing starts at once (docs/bench.md, start-up).
_LAZY = {
    "Config": "gpusim.config", "load_config": "gpusim.config",
    "occupancy": "gpusim.config.occupancy",  # gpusim.analysis.occupancy: the package imports no analysis
    **dict.fromkeys(["AssemblyError", "ConfigError", "DeadlockError", "GpusimError", "KernelFault", "LaunchError",
                     "SimulationLimitError", "VerificationError", "WorkloadError"], "gpusim.errors"),
    **dict.fromkeys(["GlobalMemory", "Launch", "block_streams", "execute"], "gpusim.functional"),
    **dict.fromkeys(["assemble", "assemble_file", "disassemble", "load_kernel", "read_ptx", "read_ptx_file"],
                    "gpusim.isa"),
    **dict.fromkeys(["from_numba", "from_triton", "launch"], "gpusim.kernel_launch"),
    **dict.fromkeys(["SimResult", "simulate"], "gpusim.stats"),
    **dict.fromkeys(["list_workloads", "load_workload"], "gpusim.workloads"),
}


def __getattr__(name: str):
    return attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def run_workload(workload, cfg=None, *, seed: int = 0, max_steps_per_warp: int | None = None, **params):
    """Run a workload (a name, a folder path or a loaded Workload) functionally on `cfg` (a Config, a
    built-in name or a YAML path) with size parameters `params`, and compare it with its numpy
    reference. Returns a WorkloadRun (`.ok`, `.check()`, `.result.stats`, `.summary()`)."""
    from gpusim.config import load_config
    from gpusim.workloads import load_workload

    wl = workload if hasattr(workload, "program") else load_workload(workload)
    if isinstance(cfg, str):
        cfg = load_config(cfg)
    return wl.run(params, cfg, seed=seed, max_steps_per_warp=max_steps_per_warp)


def kernel_occupancy(workload, cfg, **params):
    """Theoretical occupancy of a workload's kernel at its launch: block size from the launch,
    registers per thread from the assembled program, shared memory from its declarations."""
    from gpusim.config import load_config
    from gpusim.config.occupancy import occupancy
    from gpusim.workloads import load_workload

    wl = workload if hasattr(workload, "program") else load_workload(workload)
    if isinstance(cfg, str):
        cfg = load_config(cfg)
    launch = wl.launch(wl.params(params))
    return occupancy(cfg, launch.threads_per_block, wl.program.regs_per_thread, wl.program.shared_bytes)


__all__ = [
    "AssemblyError", "Config", "ConfigError", "DeadlockError", "GlobalMemory", "GpusimError", "KernelFault",
    "Launch", "LaunchError", "SimResult", "SimulationLimitError", "VerificationError", "WorkloadError",
    "__version__", "assemble",
    "assemble_file", "block_streams", "disassemble", "execute", "from_numba", "from_triton", "kernel_occupancy",
    "launch", "list_workloads",
    "load_config", "load_kernel", "load_workload", "occupancy", "read_ptx", "read_ptx_file", "run_workload",
    "simulate",
]
