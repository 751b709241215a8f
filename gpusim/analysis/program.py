"""Programs whose kernels name workloads: each kernel timed by the timing model (`kernel_run`, simulated
once per workload, GPU and parameters), the rest by the system model (`gpusim.system.run_program`)."""

from __future__ import annotations

import os

from gpusim import progress
from gpusim.analysis.kernel_cost import kernel_run
from gpusim.config.schema import Config
from gpusim.system import Kernel, Program, ProgramReport, load_program, run_program


def kernel_cycles(op: Kernel, cfg: Config) -> float:
    """Cycles of a kernel operation naming a workload, on `cfg`'s GPU."""
    return kernel_run(op.workload, cfg, **op.params).cycles


def simulate_program(program: Program | str | os.PathLike, cfg: Config) -> ProgramReport:
    """Run a program (or the YAML file of one) on `cfg`'s node, simulating its kernels."""
    if not isinstance(program, Program):
        program = load_program(program)
    timed = [op for op in program.ops if isinstance(op, Kernel) and op.cycles is None]
    with progress.bar(len(timed), f"program {program.name}", "kernel") as bar:

        def counted(op: Kernel, cfg: Config) -> float:
            cycles = kernel_cycles(op, cfg)
            bar.update(1)
            return cycles

        return run_program(program, cfg, counted)
