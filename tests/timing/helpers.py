"""Shared helpers for the timing-model tests: run a workload or a hand-written kernel through the
timing model on a (possibly overridden) built-in config, with results cached per argument set so that
several tests can look at one simulation."""

from __future__ import annotations

from functools import cache

import numpy as np

import gpusim
from gpusim.config import load_config
from gpusim.stats.simulate import simulate
from gpusim.timing import GPU, KernelTiming


def _freeze(d: dict | None) -> tuple:
    return tuple(sorted((d or {}).items()))


@cache
def _sim(workload: str, cfg: str, scheduler: str | None, overrides: tuple, params: tuple, program_order: bool):
    wl = gpusim.load_workload(workload).for_config(None, ptxas_model=False) if program_order else workload
    return simulate(wl, cfg, scheduler=scheduler, overrides=dict(overrides) or None, **dict(params))


def sim(workload: str, cfg: str = "a100", *, scheduler: str | None = None, overrides: dict | None = None,
        program_order: bool = False, **params):
    """`simulate()` (verified against the numpy reference), cached: do not mutate the result.
    `program_order`: the kernel as written, without the ptxas model (the hand-derived expectations of a
    microbenchmark's loop count its instructions as written)."""
    return _sim(workload, cfg, scheduler, _freeze(overrides), _freeze(params), program_order)


def cycles(workload: str, cfg: str = "a100", **kw) -> int:
    return sim(workload, cfg, **kw).timing.cycles


def config(name: str, overrides: dict | None = None):
    return load_config(name, overrides=overrides or None)


def time_kernel(src: str, cfg_name: str = "a100", *, grid=1, block=32, arrays: dict | None = None,
                scalars: dict | None = None, overrides: dict | None = None) -> KernelTiming:
    """Assemble `src`, allocate `arrays` (param name -> numpy array) and time the launch."""
    cfg = config(cfg_name, {"chip.sm_count": 1, **(overrides or {})})
    prog = gpusim.assemble(src, "timing_test.sasm")
    mem = gpusim.GlobalMemory()
    args = {k: mem.alloc_array(np.asarray(v), k) for k, v in (arrays or {}).items()}
    args.update(scalars or {})
    launch = gpusim.Launch.make(grid, block)
    return GPU(cfg).run(prog, launch, gpusim.block_streams(prog, launch, args, mem, cfg=cfg))


# A DRAM without its bank model: no array timings, no refresh, one channel a controller. Each
# controller is then one FIFO data bus, and a 32-byte read comes back exactly dram.latency_cycles after
# its bus slot starts (the tests of queueing and of the caches above DRAM use it).
FLAT_DRAM = {"dram.t_rcd_ns": 0, "dram.t_rp_ns": 0, "dram.t_ras_ns": 0, "dram.t_cl_ns": 0, "dram.t_wtr_ns": 0,
             "dram.t_rtw_ns": 0, "dram.t_refi_ns": 0, "dram.t_rfc_ns": 0, "dram.channels_per_controller": 1,
             "dram.write_batch_requests": 1}
