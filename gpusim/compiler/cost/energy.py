"""A kernel's energy from its counted work (lower.Work) and a cost model's cycles: the activity the power
model (gpusim.stats.power) multiplies by its per-event energies, estimated from the generated code instead
of the timing model's counters, then the same energy_breakdown, at the config's clock (no power cap, as
the cycles are at that clock). What `gpusim compile --objective energy` minimises.

    warp instructions   = warps x sum_u I_u           thread instructions = threads x sum_u I_u
    lanes of pipe u     = threads x I_u               tensor f16-equivalent FMAs = warps x sum_p F_p x R_f16 / R_p
    L1 sectors          = (load_bytes + store_bytes) / 32
    L2 and crossbar     = (bytes reaching the L2: unique_load_bytes where the L1 caches global loads, else
                           load_bytes; plus store_bytes) / 32
    shared wavefronts   = warps x shared_trips        (one pass a wait: a lower bound, no bank conflicts)
    DRAM bits           = 8 x dram_bytes              (streamed: no row activations counted)
    SM-cycles powered   = kernel cycles x min(SMs, blocks); the static parts over the cycles with the launch

A config without a power model has no energy (CompilerError)."""

from __future__ import annotations

from gpusim.compiler.cost.base import Estimate
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.kernel import Kernel
from gpusim.config import Config
from gpusim.stats.power import Activity, energy_breakdown

SECTOR = 32  # bytes an L1 / L2 sector holds


def work_activity(kernel: Kernel, cfg: Config, cycles: float, kernel_cycles: float) -> Activity:
    """The power model's Activity of `kernel` taking `cycles` (launch included) of which `kernel_cycles`
    execute, from its counted work (module docstring)."""
    work, launch = kernel.work, kernel.launch
    warps = launch.num_blocks * launch.warps_per_block(cfg.sm.warp_size)
    threads = launch.num_blocks * launch.threads_per_block
    per_thread = sum(work.instructions.values())
    tensor = cfg.units.get("tensor")
    fmas = (warps * sum(f * tensor.f16_fma_per_cycle / tensor.fma_per_cycle(p) for p, f in work.tensor_fma.items())
            if tensor is not None else 0.0)
    to_l2 = (work.unique_load_bytes if cfg.l1.caches_global_loads else work.load_bytes) + work.store_bytes
    return Activity(cycles=round(cycles), sm_active_cycles=round(kernel_cycles * min(cfg.chip.sm_count,
                                                                                     launch.num_blocks)),
                    warp_instructions=round(warps * per_thread), thread_instructions=threads * per_thread,
                    lane_ops={u.lower(): threads * n for u, n in work.instructions.items()
                              if u.lower() in ("fp32", "int", "fp64", "sfu", "ldst", "branch", "sync")},
                    tensor_fmas=float(fmas), l1_sectors=round((work.load_bytes + work.store_bytes) / SECTOR),
                    shared_wavefronts=round(warps * work.shared_trips), noc_sectors=round(to_l2 / SECTOR),
                    l2_sectors=round(to_l2 / SECTOR), dram_bits=round(8 * work.dram_bytes), dram_activates=0)


def kernel_energy(kernel: Kernel, cfg: Config, estimate: Estimate) -> float:
    """Joules of `kernel` over `estimate`'s cycles on `cfg` (its `power:` section)."""
    if cfg.power is None:
        raise CompilerError(f"--objective energy: {cfg.name} has no power model (a power: section; a100 and h200 "
                            f"have one)")
    act = work_activity(kernel, cfg, estimate.cycles, estimate.kernel_cycles)
    parts, _ = energy_breakdown(cfg.power, act, cfg.chip.clock_mhz)
    return sum(parts.values())


__all__ = ["kernel_energy", "work_activity"]
