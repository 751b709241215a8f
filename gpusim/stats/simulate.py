"""`simulate()`: a workload through the functional executor (values, verified against numpy) and the
timing model (cycles), and the stats that come out of both."""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from gpusim import progress
from gpusim.config import Config, load_config
from gpusim.config.vocab import SCHEDULER_POLICIES
from gpusim.errors import ConfigError, GpusimError
from gpusim.functional.executor import Executor
from gpusim.functional.stats import ExecStats
from gpusim.stats.report import SimResult
from gpusim.stats.source import tallied
from gpusim.timing import GPU, KernelTiming
from gpusim.workloads import load_workload

SCHEDULERS = SCHEDULER_POLICIES  # (gpusim.config.vocab)


@dataclass(frozen=True)
class TimedExecution:
    """What the timed executor hands back to the workload runner: the functional stats and the timing."""

    program: Any
    launch: Any
    stats: ExecStats
    timing: KernelTiming


def timed_execute(program, launch, args, memory, *, cfg: Config, max_steps_per_warp: int | None = None,
                  max_cycles: int | None = None, block_limit: int | None = None,
                  loop_cap: int | None = None, warm_l2: float | None = None, per_pc: bool = False,
                  block_ids: list[int] | None = None, issue_log: int = 0,
                  snapshots: tuple[int, ...] = ()) -> TimedExecution:
    """Execute `program` functionally and stream its warps' instructions through the timing model.
    `block_limit` and `loop_cap` (sampled simulation: the first blocks only, loops cut short; see
    `Executor`) time a part of the kernel; `warm_l2` starts the L2 full of foreign lines, that fraction
    of them dirty (`GPU.run`). `per_pc` counts per instruction too (`stats.per_pc`, `timing.pc_states`:
    the source view, gpusim.stats.source). `block_ids` runs those blocks only; `issue_log` N keeps SM 0's
    issue log (`timing.issue_log`, up to N entries: `gpusim step --schedule`); `snapshots` keeps the
    counters after those numbers of blocks retired (`timing.snapshots`, `GPU.run`)."""
    ex = Executor(program, launch, args, memory, cfg=cfg, max_steps_per_warp=max_steps_per_warp, record=True,
                  block_limit=block_limit, loop_cap=loop_cap, block_ids=block_ids)
    sources = ex.stream_batches()
    if per_pc:
        sources, ex.stats.per_pc = tallied(sources, program, cfg)
    with progress.bar(ex.num_blocks, f"simulating {program.name}", "block") as bar:
        timing = GPU(cfg).run(program, launch, _counted(sources, bar), max_cycles=max_cycles,
                              warm_l2=warm_l2, per_pc=per_pc, issue_log=issue_log, snapshots=snapshots)
    return TimedExecution(program, launch, ex.stats, timing)


def _counted(batches, bar):
    """The executor's batches, counting each one's blocks on the progress bar as the timing model takes
    them up (it opens a batch when its SMs need the next blocks)."""
    for src in batches:
        yield src
        bar.update(src.nblocks)


def configure(cfg: Config | str | os.PathLike, scheduler: str | None = None,
              overrides: dict[str, Any] | None = None) -> Config:
    """A Config from a Config, a built-in name or a YAML path, with `scheduler` and dotted `overrides`
    applied (as `simulate` does)."""
    if scheduler is not None and scheduler not in SCHEDULERS:
        raise ConfigError(f"scheduler {scheduler!r} is not one of {', '.join(SCHEDULERS)}", field="scheduler.policy")
    ov = dict(overrides or {})
    if not isinstance(cfg, Config):
        if scheduler is not None:
            ov["scheduler.policy"] = scheduler
        return load_config(cfg, overrides=ov or None)
    if ov:
        # Overrides are applied to the Config's YAML file; a Config that already differs from its file
        # (built with overrides) would silently lose those, so refuse.
        if load_config(cfg.source or cfg.name).hash() != cfg.hash():
            raise ConfigError("overrides need the config's name or path (this Config already differs from "
                              f"{cfg.source or cfg.name}): pass all overrides together")
        cfg = load_config(cfg.source or cfg.name, overrides=ov)
    if scheduler is not None:
        cfg = dataclasses.replace(cfg, scheduler=dataclasses.replace(cfg.scheduler, policy=scheduler))
    return cfg


def simulate(workload, cfg: Config | str | os.PathLike | None = None, *,
             config: Config | str | os.PathLike | None = None, params: dict[str, Any] | None = None, seed: int = 0,
             scheduler: str | None = None, overrides: dict[str, Any] | None = None,
             max_steps_per_warp: int | None = None, max_cycles: int | None = None, verify: bool = True,
             per_pc: bool = False, warm_l2: float | None = None, ptxas_model: bool | None = None,
             **kwargs) -> SimResult:
    """Simulate a workload (a name, a folder or a loaded Workload) on `cfg` (a Config, a built-in name or a YAML path)
    with size parameters `params`: values computed and compared with the numpy reference, cycles from the timing
    model, and the metrics and bottleneck verdict (a SimResult). `scheduler` (a name in
    `gpusim.config.vocab.SCHEDULER_POLICIES`) overrides `scheduler.policy`; `overrides` are dotted config overrides
    (`{"chip.sm_count": 54}`). Guards: a warp that issues more than `max_steps_per_warp` instructions raises
    KernelFault (a runaway loop), a kernel still running at cycle `max_cycles` raises SimulationLimitError naming
    the warps still resident and what they wait on. With `verify`, a wrong result raises VerificationError; without,
    check `result.verified` (`result.run.message()` says where it differs). With `per_pc`, the result also
    holds the source view: `result.source` (per source line) and `result.pcs` (per instruction), with
    each instruction's executions, memory traffic and warp states (docs/stats.md, "Source view").
    `warm_l2` f starts the kernel with the L2 full of lines it does not use, a fraction f of them dirty
    (the steady state that earlier kernels on other data leave; `GPU.run`), instead of empty.
    The kernel runs as the ptxas model compiles it for the config (`Workload.for_config`: docs/isa.md,
    "The ptxas model"); `ptxas_model=False` runs it in program order, as written.

    The workload's parameters are best given as `params={"n": 4096}` and the config as `config="a100"`:
    those keywords cannot be confused with a workload parameter named like one of simulate's own
    (`seed`, `verify`, ...). Extra keywords (`n=4096`) are workload parameters too, a shorthand; one given
    both ways is an error. The config defaults to a100."""
    if cfg is not None and config is not None:
        raise GpusimError("give the config once: as the second argument or as config=")
    cfg = config if config is not None else (cfg if cfg is not None else "a100")
    both = sorted(set(params or {}) & set(kwargs))
    if both:
        raise GpusimError(f"workload parameter {both[0]!r} is given twice: in params= and as a keyword")
    params = {**(params or {}), **kwargs}
    wl = workload if hasattr(workload, "program") else load_workload(workload)
    cfg = configure(cfg, scheduler, overrides)
    wl = wl.for_config(cfg, ptxas_model)  # the kernel as ptxas compiles it (gpusim.isa.ptxas)
    t0 = time.perf_counter()
    run = wl.run(params, cfg, seed=seed, max_steps_per_warp=max_steps_per_warp,
                 executor=partial(timed_execute, max_cycles=max_cycles, per_pc=per_pc, warm_l2=warm_l2))
    wall = time.perf_counter() - t0
    if verify:
        run.check()
    return SimResult.build(cfg, run, run.result.timing, wall_seconds=wall)
