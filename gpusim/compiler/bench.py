"""The tuning benchmark (`gpusim bench --tune`, docs/compiler.md): one N x N x N matmul tuned by the
simulated cost model — a local search over the matmul template's tiles, block shape, K step, per-thread
micro-tile and shared-memory choice, every candidate simulated (large ones sampled), in parallel — and
what it cost: wall time, candidates scored, kernels simulated and sampled, the winner and its cycles."""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from gpusim.compiler.cost.simulated import SimulatedCost
from gpusim.compiler.ir import Graph
from gpusim.compiler.lower import lower_node
from gpusim.compiler.tune import Tuner
from gpusim.config import Config
from gpusim.sweep.executors import DaskExecutor, LocalExecutor


def matmul_graph(n: int) -> Graph:
    """y = a @ b, both n x n, f32."""
    g = Graph(f"matmul_{n}")
    g.output(g.matmul(g.parameter("a", (n, n)), g.parameter("b", (n, n))), "y")
    return g


def tune_matmul(cfg: Config, *, n: int = 512, candidates: int = 200, executor: LocalExecutor | DaskExecutor,
                sample: str = "auto", sample_budget: int | None = None, cache_dir: str | os.PathLike | None = None,
                seed: int = 0) -> dict[str, Any]:
    """Tune an n^3 matmul on `cfg` over at least `candidates` simulated candidates (a local search of
    that budget; no cached result is reused: `cache_dir` default a fresh temporary folder) and report it."""
    graph = matmul_graph(n)
    node = graph[graph.outputs["y"]]
    with tempfile.TemporaryDirectory(prefix="gpusim-tune-") as tmp:
        sim = SimulatedCost(cache_dir or tmp, seed=seed, sample=sample, sample_budget=sample_budget,
                            executor=executor)
        tuner = Tuner(cfg, sim, strategy="local", budget=candidates, seed=seed, cache=False)
        t0 = time.perf_counter()
        r = tuner.tune_node(graph, node)
        wall = time.perf_counter() - t0
        winner = sim.cost(lower_node(graph, node, r.params), cfg)
    return {"kind": "tune", "n": n, "config": cfg.name, "config_hash": cfg.hash(), "candidates": r.evaluated,
            "simulations": sim.simulations, "wall_seconds": wall,
            "workers": getattr(executor, "jobs", None) or getattr(executor, "workers", None),
            "sample": sample, "sample_budget": sample_budget, "params": r.params, "cycles": r.cycles,
            "kernel_cycles": winner.kernel_cycles, "sampled": bool(winner.detail.get("sampled")),
            "confidence": winner.detail.get("confidence", 0.0), "rejected": list(r.rejected),
            "top": [[p, c] for p, c in r.top]}

