"""The simulated cost model: the kernel run through the functional executor and the timing model
(`stats.timed_execute`) on seeded random inputs, its cycles cached on disk by (kernel source, launch,
config hash, gpusim code version, seed)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.lower.kernel import Kernel
from gpusim.compiler.store import Store, digest
from gpusim.config import Config
from gpusim.functional import GlobalMemory
from gpusim.stats.simulate import timed_execute
from gpusim.sweep.cache import code_version


class SimulatedCost(CostModel):
    """Cycles from the timing model; entries under `cache_dir` (default `$GPUSIM_CACHE_DIR`, else
    ~/.cache/gpusim)/compiler/cost/. `simulations` counts the kernels actually simulated."""

    name = "simulated"

    def __init__(self, cache_dir: str | os.PathLike | None = None, *, seed: int = 0):
        self.store = Store(cache_dir, "cost", ("cycles", "detail"))
        self.seed = seed
        self.simulations = 0

    def entry_key(self, kernel: Kernel, cfg: Config) -> str:
        """The cache key of `kernel` on `cfg`."""
        return digest({"source": kernel.source, "grid": kernel.launch.grid, "block": kernel.launch.block,
                       "config": cfg.hash(), "code": code_version(), "seed": self.seed})

    def kernel_cycles(self, kernel: Kernel, cfg: Config) -> tuple[float, dict[str, Any]]:
        key = self.entry_key(kernel, cfg)
        entry = self.store.get(key)
        if entry is None:
            entry = self._simulate(kernel, cfg)
            self.store.put(key, entry)
        return float(entry["cycles"]), entry["detail"]

    def _simulate(self, kernel: Kernel, cfg: Config) -> dict[str, Any]:
        rng = np.random.default_rng(self.seed)
        memory = GlobalMemory(capacity=sum(t.nbytes for t in kernel.buffers.values()) + 512 * (len(kernel.buffers) + 1))
        address = {name: memory.alloc_array(rng.uniform(-1, 1, t.shape).astype(t.numpy_dtype), name)
                   for name, t in kernel.buffers.items()}
        run = timed_execute(kernel.program, kernel.launch, {p: address[b] for p, b in kernel.args.items()}, memory,
                            cfg=cfg)
        self.simulations += 1
        timing = run.timing
        return {"cycles": timing.cycles,
                "detail": {"warp_instructions": timing.warp_instructions,
                           "dram_bytes": timing.dram["bytes_read"] + timing.dram["bytes_written"],
                           "l2_hit_sectors": timing.l2["hit_sectors"], "l2_miss_sectors": timing.l2["miss_sectors"]}}
