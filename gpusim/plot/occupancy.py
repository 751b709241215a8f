"""The CUDA Occupancy Calculator's three charts: active warps per SM against block size, registers per
thread and shared memory per block, each varying one resource of the kernel and keeping the other two,
with the kernel's own point marked and the limiter named in the title."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

from gpusim.analysis import Occupancy, occupancy
from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.plot.common import new_figure
from gpusim.plot.io import as_result, source_of

MAX_SMEM_POINTS = 512  # shared-memory sizes drawn per curve (a multiple of the allocation unit apart)


def occupancy_figure(cfg: Config, block_size: int, regs_per_thread: int, smem_per_block: int, *,
                     carveout_bytes: int | None = None, name: str | None = None) -> Figure:
    """Three panels of active warps per SM (right axis: % occupancy) against block size (step of a warp
    up to max_threads_per_block), registers per thread (1 to max_registers_per_thread) and shared memory
    per block (0 to the opt-in limit); each panel marks the kernel's point. `name` (a workload) goes into
    the title."""
    sm = cfg.sm

    def occ(b: int = block_size, r: int = regs_per_thread, s: int = smem_per_block) -> Occupancy:
        return occupancy(cfg, b, r, s, carveout_bytes=carveout_bytes)

    here = occ()
    step = sm.shared_memory_allocation_unit_bytes
    step *= -(-sm.max_shared_memory_per_block_optin_bytes // (step * MAX_SMEM_POINTS))
    # (what varies, x label, x values, occupancy at x, the kernel's x, line style): a block size is a
    # whole number of warps, so that curve is points; registers and bytes round up, so those are steps.
    panels: Sequence[tuple[str, str, range, Callable[[int], Occupancy], int, dict]] = [
        ("block size", "block size (threads)", range(sm.warp_size, sm.max_threads_per_block + 1, sm.warp_size),
         lambda b: occ(b=b), block_size, {"marker": ".", "markersize": 4}),
        ("registers per thread", "registers per thread (32-bit)", range(1, sm.max_registers_per_thread + 1),
         lambda r: occ(r=r), regs_per_thread, {"drawstyle": "steps-pre"}),
        ("shared memory per block", "shared memory per block (bytes)",
         range(0, sm.max_shared_memory_per_block_optin_bytes + 1, step), lambda s: occ(s=s), smem_per_block,
         {"drawstyle": "steps-pre"}),
    ]
    fig = new_figure(13, 4.4)
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (what, xlabel, xs, vary, x0, style) in zip(axes, panels, strict=True):
        ax.plot(list(xs), [vary(x).active_warps_per_sm for x in xs], color="tab:blue", gid="curve",
                label=f"varying {what}", **style)
        ax.plot([x0], [here.active_warps_per_sm], "o", color="tab:red", markersize=8, gid="kernel",
                label=f"this kernel: {x0:,}")
        ax.set_title(f"vs {what}")
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, sm.max_warps_per_sm * 1.08)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left", fontsize=8)
    axes[2].xaxis.set_major_formatter(EngFormatter(unit="B"))
    axes[0].set_ylabel("active warps per SM (warps)")
    pct = axes[-1].secondary_yaxis("right", functions=(lambda w: 100 * w / sm.max_warps_per_sm,
                                                       lambda p: p * sm.max_warps_per_sm / 100))
    pct.set_ylabel("occupancy (%)")
    who = f"{name} " if name else ""
    fig.suptitle(f"Occupancy on {cfg.name}: {who}block {block_size} threads, {regs_per_thread} registers/thread, "
                 f"{smem_per_block:,} B shared/block\n{here.occupancy:.0%} ({here.active_warps_per_sm} of "
                 f"{here.max_warps_per_sm} warps per SM, {here.active_blocks_per_sm} blocks), "
                 f"limited by {here.limiter}")
    return fig


def kernel_resources(result: Any) -> tuple[int, int, int]:
    """(block size, registers per thread, shared memory per block) of a result: from its
    `theoretical_occupancy` record (timing runs), else from its workload's kernel and launch, reloaded
    by the name and parameters in its provenance (functional runs), compiled by the ptxas model for the
    config it names (docs/isa.md, "The ptxas model")."""
    r = as_result(result)
    theo = r.get("theoretical_occupancy")
    if theo:
        return theo["block_size"], theo["regs_per_thread"], theo["smem_per_block"]
    if not r.get("workload"):
        raise GpusimError(f"{source_of(r)}: no theoretical_occupancy record and no workload to take the "
                          "kernel's resources from")
    from gpusim.workloads import load_workload

    wl = load_workload(r["workload"])
    if r.get("config"):  # a timed run's kernel as the ptxas model compiled it for its config (its registers)
        from gpusim.config import load_config

        wl = wl.for_config(load_config(r["config"], overrides=r.get("config_overrides") or None))
    launch = wl.launch(wl.params(r.get("params") or {}))
    return launch.threads_per_block, wl.program.regs_per_thread, wl.program.shared_bytes
