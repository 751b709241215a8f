"""The simulated cost model: the kernel run through the functional executor and the timing model
(`stats.timed_execute`) on seeded random inputs, its cycles cached on disk by (kernel source, launch,
config hash, gpusim code version, seed, sampling).

A large kernel (more warp instructions than `sample_above`, counted when it was generated) is
*sampled* (`analysis.sampling`, docs/sampling.md): its first waves of blocks with its long loops cut
short, extrapolated to the whole grid and the whole loops, so that one candidate's score costs a
bounded time (at most the sample's budget of warp instructions) whatever the kernel's size. A kernel
the sampler cannot extrapolate (too few waves and no long loop, a sampled run that faults) runs whole.
`detail["sampled"]` says which; a sampled score carries its `confidence` (relative error bound).

`costs(kernels, cfg)` scores a list of kernels in parallel on the sweep package's executors (a process
pool by default, `jobs` workers; or Dask), reading and writing the cache in this process; each
kernel's score is the same as `cost` gives it alone, whatever the executor."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpusim.analysis.sampling import AUTO_MIN_WARP_INSTRUCTIONS, SAMPLE_MODES, simulate_sampled
from gpusim.compiler.cost.base import CostModel, Estimate
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.kernel import Kernel
from gpusim.compiler.store import Store, digest
from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.functional import GlobalMemory
from gpusim.stats.simulate import timed_execute
from gpusim.sweep.cache import code_version
from gpusim.sweep.executors import DaskExecutor, LocalExecutor
from gpusim.workloads.loader import PreparedLaunch

Executor = LocalExecutor | DaskExecutor


class SimulatedCost(CostModel):
    """Cycles from the timing model; entries under `cache_dir` (default `$GPUSIM_CACHE_DIR`, else
    ~/.cache/gpusim)/compiler/cost/. `sample`: "auto" (the default) samples kernels of more than
    `sample_above` warp instructions, "on" every kernel that can be, "off" none; `sample_budget` caps
    the warp instructions a sample simulates (default: the sampler's, a twentieth of the kernel's, at
    most 6,000,000). `costs` runs on `executor` (default: a LocalExecutor of `jobs` processes, one per
    core by default). `simulations` counts the kernels actually simulated by this object, here or in
    its workers."""

    name = "simulated"

    def __init__(self, cache_dir: str | os.PathLike | None = None, *, seed: int = 0, sample: str = "auto",
                 sample_above: int = AUTO_MIN_WARP_INSTRUCTIONS, sample_budget: int | None = None,
                 jobs: int | None = None, executor: Executor | None = None):
        if sample not in SAMPLE_MODES:
            raise CompilerError(f"sample mode {sample!r}: expected one of {', '.join(SAMPLE_MODES)}")
        self.store = Store(cache_dir, "cost", ("cycles", "detail"))
        self.seed = seed
        self.sample, self.sample_above, self.sample_budget = sample, sample_above, sample_budget
        self.executor = executor if executor is not None else LocalExecutor(jobs)
        self.simulations = 0

    @property
    def key(self) -> str:
        if self.sample == "off":
            return self.name
        return f"{self.name}-sample-{self.sample}-{self.sample_above}-{self.sample_budget}"

    def sampling(self, kernel: Kernel) -> dict[str, Any] | None:
        """How `kernel` is sampled ({"budget": warp instructions or None}), or None: simulated whole.
        Decided from the kernel's counted warp instructions, before anything runs."""
        if self.sample == "off" or (self.sample == "auto" and warp_instructions(kernel) <= self.sample_above):
            return None
        return {"budget": self.sample_budget}

    def entry_key(self, kernel: Kernel, cfg: Config) -> str:
        """The cache key of `kernel` on `cfg`."""
        return digest({"source": kernel.source, "grid": kernel.launch.grid, "block": kernel.launch.block,
                       "config": cfg.hash(), "code": code_version(), "seed": self.seed,
                       "sampling": self.sampling(kernel)})

    def kernel_cycles(self, kernel: Kernel, cfg: Config) -> tuple[float, dict[str, Any]]:
        key = self.entry_key(kernel, cfg)
        entry = self.store.get(key)
        if entry is None:
            entry = simulate_kernel(kernel, cfg, self.seed, self.sampling(kernel))
            self.simulations += 1
            self.store.put(key, entry)
        return float(entry["cycles"]), entry["detail"]

    def costs(self, kernels: Sequence[Kernel], cfg: Config, *, executor: Executor | None = None
              ) -> list[Estimate | None]:
        """Each kernel's Estimate (None for one that cannot run on `cfg`), the kernels not in the cache
        simulated in parallel on `executor` (default: this model's)."""
        keys = [self.entry_key(k, cfg) for k in kernels]
        entries: dict[str, dict[str, Any]] = {}
        todo: dict[str, Kernel] = {}
        for key, k in zip(keys, kernels, strict=True):
            if key in entries or key in todo:
                continue
            if (hit := self.store.get(key)) is not None:
                entries[key] = hit
            else:
                todo[key] = k
        tasks = [(k, cfg, self.seed, self.sampling(k)) for k in todo.values()]
        pending = list(todo)
        for i, outcome in (executor or self.executor).run(run_task, tasks):
            if "internal" in outcome:
                raise CompilerError(f"simulating kernel {tasks[i][0].name}: {outcome['internal']}")
            entries[pending[i]] = outcome
            if "error" not in outcome:
                self.simulations += 1
                self.store.put(pending[i], outcome)
        return [None if "error" in (e := entries[key]) else self.estimate(float(e["cycles"]), e["detail"], cfg)
                for key in keys]


def warp_instructions(kernel: Kernel) -> float:
    """The warp instructions `kernel` runs, as counted when it was generated (equal to what the
    functional executor runs: every thread of a block runs the same instructions, guarded)."""
    return sum(kernel.work.instructions.values()) * kernel.launch.num_blocks * kernel.launch.warps_per_block()


def run_task(task: tuple[Kernel, Config, int, dict[str, Any] | None]) -> dict[str, Any]:
    """What runs in a worker: `simulate_kernel(*task)`, or {"error": message} when the kernel cannot run
    (a GpusimError), {"internal": ...} for anything else (a bug, reported by the caller)."""
    try:
        return simulate_kernel(*task)
    except GpusimError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a worker's bug: reported, not mistaken for a kernel that cannot run
        return {"internal": f"{type(exc).__name__}: {exc}"}


def simulate_kernel(kernel: Kernel, cfg: Config, seed: int, sampling: dict[str, Any] | None) -> dict[str, Any]:
    """The cache entry of `kernel` on `cfg`: {"cycles", "detail"}, simulated whole (`sampling` None) or
    sampled within `sampling["budget"]` warp instructions (whole when the sampler cannot extrapolate)."""
    if sampling is not None:
        try:
            r = simulate_sampled(_KernelLaunch(kernel, seed), cfg, sample="on", seed=seed,
                                 max_sample_warp_instructions=sampling["budget"])
        except GpusimError as exc:
            if "cannot sample" not in str(exc):
                raise
            why = str(exc).split("cannot sample: ", 1)[1].rsplit("; use --sample", 1)[0]
        else:
            return {"cycles": r.cycles,
                    "detail": {"sampled": True, "confidence": r.confidence,
                               "warp_instructions": r.warp_instructions_estimated,
                               "warp_instructions_simulated": r.warp_instructions_simulated,
                               "sample_wall_seconds": r.wall_seconds, "sampling": r.reason}}
    else:
        why = None
    pl = prepare(kernel, seed)
    run = timed_execute(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=cfg)
    timing = run.timing
    return {"cycles": timing.cycles,
            "detail": {"sampled": False, "warp_instructions": timing.warp_instructions,
                       "dram_bytes": timing.dram["bytes_read"] + timing.dram["bytes_written"],
                       "l2_hit_sectors": timing.l2["hit_sectors"], "l2_miss_sectors": timing.l2["miss_sectors"],
                       **({"sampling": why} if why is not None else {})}}


def prepare(kernel: Kernel, seed: int) -> PreparedLaunch:
    """`kernel`'s launch over a fresh global memory holding every buffer, filled with seeded uniform
    values in [-1, 1)."""
    rng = np.random.default_rng(seed)
    memory = GlobalMemory(capacity=sum(t.nbytes for t in kernel.buffers.values()) + 512 * (len(kernel.buffers) + 1))
    address = {name: memory.alloc_array(rng.uniform(-1, 1, t.shape).astype(t.numpy_dtype), name)
               for name, t in kernel.buffers.items()}
    return PreparedLaunch(workload=kernel.name, params={}, launch=kernel.launch, program=kernel.program,
                          args={p: address[b] for p, b in kernel.args.items()}, memory=memory, seed=seed)


class _KernelLaunch:
    """A kernel as `simulate_sampled` reads a workload: a name, a program, no size parameters, its
    launch, and its inputs prepared in memory."""

    def __init__(self, kernel: Kernel, seed: int):
        self.kernel, self.seed = kernel, seed
        self.name, self.program = kernel.name, kernel.program

    def for_config(self, cfg: Any, ptxas_model: bool | None = None) -> _KernelLaunch:
        """A generated kernel is timed as generated, as its full runs are (no ptxas model)."""
        return self

    def params(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def launch(self, params: dict[str, Any]):
        return self.kernel.launch

    def prepare(self, params: dict[str, Any], *, seed: int = 0, cfg: Any = None) -> PreparedLaunch:
        return prepare(self.kernel, seed)  # (a generated kernel's arrays are small: no memory check)
