"""The compiler end to end: a model (built in, a .py description, or ONNX) through the pass pipeline
with fusion decided by a cost model, lowered to kernels (tuned or with template defaults), each kernel's
time estimated, against the unoptimised graph (as given: unfused, default parameters).

    >>> from gpusim.compiler import AnalyticalCost, compile_graph, models
    >>> from gpusim.config import load_config
    >>> report = compile_graph(models.mlp2(32, 64, 128, 10), load_config("a100"), cost=AnalyticalCost())
    >>> round(report.speedup, 2) > 1
    True
"""

from __future__ import annotations

import os
import runpy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.compiler import models
from gpusim.compiler.cost.analytical import terms
from gpusim.compiler.cost.base import CostModel, Estimate
from gpusim.compiler.cost.energy import kernel_energy
from gpusim.compiler.cost.fusion import cost_based_fusion
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph
from gpusim.compiler.lower import Kernel, lower
from gpusim.compiler.onnx_import import import_onnx
from gpusim.compiler.passes.manager import PipelineReport, run_pipeline
from gpusim.compiler.tune import Tuner, TuneResult
from gpusim.config import Config


def load_model(spec: str | os.PathLike, *, sizes: Mapping[str, Any] | None = None, dtype: str = "f32",
               shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """A model: a built-in name (models.BUILTIN, `sizes` as keyword arguments), a .py file defining
    `build(**sizes) -> Graph`, or a .onnx file (`shapes` for its symbolic input dimensions)."""
    sizes = dict(sizes or {})
    path = Path(spec)
    if path.suffix in (".py", ".onnx"):
        if not path.is_file():
            raise CompilerError(f"{spec}: no such file")
        if path.suffix == ".onnx":
            if sizes:
                raise CompilerError(f"{spec}: --set sizes apply to built-in and .py models; give ONNX input shapes "
                                    "with --shape NAME=D0,D1,...")
            return import_onnx(path, shapes=shapes)
        build = runpy.run_path(str(path)).get("build")
        if not callable(build):
            raise CompilerError(f"{spec}: defines no function build(**sizes) returning a Graph")
        graph = build(**sizes)
        if not isinstance(graph, Graph):
            raise CompilerError(f"{spec}: build() returned {type(graph).__name__}, not a Graph")
        return graph
    if str(spec) not in models.BUILTIN:
        raise CompilerError(f"unknown model '{spec}': the built-in models are {', '.join(models.BUILTIN)}; "
                            "or give a .py or .onnx file")
    return models.build(str(spec), dtype=dtype, **sizes)


def explain(kernel: Kernel, cfg: Config) -> str:
    """Why a kernel takes its time on `cfg`, in the analytical model's terms: waves of blocks over the
    SMs, occupancy and its limiter, and which term bounds it."""
    t = terms(kernel, cfg)
    bound = max((t.waves * t.chain, "latency-bound (one warp's dependent chain)"),
                (t.waves * t.throughput, "issue-bound"), (t.memory, "memory-bound"))[1]
    blocks = kernel.launch.num_blocks
    return (f"{_count(blocks, 'block')} on {cfg.chip.sm_count} SMs, {_count(t.waves, 'wave')}; occupancy "
            f"{t.occupancy:.0%} (limited by {t.limiter}); {bound}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


@dataclass(frozen=True, slots=True)
class Lowered:
    """A graph's kernels, their estimates, and why each takes its time (`explain`)."""

    graph: Graph
    kernels: tuple[Kernel, ...]
    estimates: tuple[Estimate, ...]
    reasons: tuple[str, ...]

    @property
    def cycles(self) -> float:
        """Every kernel's cycles, launch overheads included."""
        return sum(e.cycles for e in self.estimates)

    @property
    def kernel_cycles(self) -> float:
        return sum(e.kernel_cycles for e in self.estimates)

    @property
    def seconds(self) -> float:
        return sum(e.seconds for e in self.estimates)


@dataclass(frozen=True, slots=True)
class CompileReport:
    """What `compile_graph` did: the pipeline's report, the optimised kernels (with their tuning, by
    node name), the unoptimised baseline, and the models and config used."""

    name: str
    config: str
    cost: str
    tuning: str | None
    pipeline: PipelineReport
    optimised: Lowered
    baseline: Lowered
    tuned: Mapping[str, TuneResult] = field(default_factory=dict)
    objective: str = "time"  # what the tuner minimised
    energy_j: tuple[float, float] | None = None  # with objective energy: (optimised, baseline) joules

    @property
    def speedup(self) -> float:
        """Baseline time / optimised time, launch overheads included (1 when neither has a kernel)."""
        return self.baseline.cycles / self.optimised.cycles if self.optimised.cycles else 1.0

    @property
    def kernel_speedup(self) -> float:
        """The same, kernel execution cycles alone."""
        return self.baseline.kernel_cycles / self.optimised.kernel_cycles if self.optimised.kernel_cycles else 1.0

    def to_dict(self) -> dict[str, Any]:
        def kernels(lowered: Lowered) -> list[dict[str, Any]]:
            return [k.summary() | {"cycles": e.cycles, "kernel_cycles": e.kernel_cycles, "seconds": e.seconds,
                                   "detail": dict(e.detail), "why": why}
                    for k, e, why in zip(lowered.kernels, lowered.estimates, lowered.reasons, strict=True)]

        def total(lowered: Lowered) -> dict[str, Any]:
            return {"kernels": len(lowered.kernels), "cycles": lowered.cycles, "kernel_cycles": lowered.kernel_cycles,
                    "seconds": lowered.seconds}

        return {"model": self.name, "config": self.config, "cost_model": self.cost, "tuning": self.tuning,
                "pipeline": [{"pass": p.name, "nodes_before": p.nodes_before, "nodes_after": p.nodes_after,
                              "changes": [c.description for c in p.changes]} for p in self.pipeline.passes],
                "kernels": kernels(self.optimised), "total": total(self.optimised),
                "tuning_results": {n: r.to_dict() for n, r in self.tuned.items()},
                "baseline": {"kernels": kernels(self.baseline), "total": total(self.baseline)},
                "speedup": self.speedup, "kernel_speedup": self.kernel_speedup, "objective": self.objective,
                **({"energy_j": {"optimised": self.energy_j[0], "baseline": self.energy_j[1]}}
                   if self.energy_j else {})}

    def __str__(self) -> str:
        # the JSON's names: kernel_cycles is the execution alone, its seconds include the launch
        rows = [("kernel", "node", "op", "template", "parameters", "grid", "block", "regs", "smem", "kernel cycles",
                 "us+launch")]
        for k, e in zip(self.optimised.kernels, self.optimised.estimates, strict=True):
            s = k.summary()
            params = " ".join(f"{p}={int(v) if isinstance(v, bool) else v}" for p, v in k.params.items())
            rows.append((k.name, "%" + k.node.name, s["op"], k.template, params, _dims(k.launch.grid),
                         _dims(k.launch.block), str(s["regs_per_thread"]), str(s["shared_bytes"]),
                         f"{e.kernel_cycles:,.0f}", f"{e.seconds * 1e6:.2f}"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        table = ["  ".join(c.rjust(w) if i >= 7 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                              strict=True)))
                 for r in rows]
        tuning = self.tuning or "template defaults (--tune to search)"
        why = [f"{k.name}: {r}" for k, r in zip(self.optimised.kernels, self.optimised.reasons, strict=True)]
        return "\n".join([
            f"{self.name} on {self.config}; cost model: {self.cost}; parameters: {tuning}",
            str(self.pipeline), "", *table, "", *why, "",
            _total("optimised", self.optimised),
            _total("unoptimised (as given, unfused, default parameters)", self.baseline),
            f"speed-up            {self.speedup:.2f}x (kernel cycles alone: {self.kernel_speedup:.2f}x)",
            *self._energy_lines()])

    def _energy_lines(self) -> list[str]:
        if self.energy_j is None:
            return []
        opt, base = self.energy_j
        return [f"energy              optimised {opt * 1e6:,.1f} uJ, unoptimised {base * 1e6:,.1f} uJ: "
                f"{base / opt:.2f}x less ({self.config}'s power model over the {self.cost} model's cycles; "
                f"tuned for --objective energy)"]


def _dims(d: tuple[int, int, int]) -> str:
    return "x".join(str(v) for v in (d[:1] if d[1:] == (1, 1) else d[:2] if d[2] == 1 else d))


def _total(label: str, lowered: Lowered) -> str:
    return (f"{label}: {len(lowered.kernels)} kernels, {lowered.cycles:,.0f} cycles (execution "
            f"{lowered.kernel_cycles:,.0f} + launch overheads) = {lowered.seconds * 1e6:.2f} us")


def estimate(graph: Graph, kernels: Sequence[Kernel], cost: CostModel, cfg: Config) -> Lowered:
    """`kernels` of `graph` with their estimates under `cost` on `cfg`."""
    return Lowered(graph, tuple(kernels), tuple(cost.cost(k, cfg) for k in kernels),
                   tuple(explain(k, cfg) for k in kernels))


def compile_graph(graph: Graph, cfg: Config, *, cost: CostModel, tuner: Tuner | None = None,
                  fusion_cost: CostModel | None = None) -> CompileReport:
    """Optimise `graph` (the default pipeline, fusion decided by `fusion_cost`, default `cost`), lower
    it (each kernel tuned by `tuner`, or with template defaults), estimate every kernel with `cost`, and
    do the same for the unoptimised graph (as given, default parameters)."""
    optimised, pipeline = run_pipeline(graph, should_fuse=cost_based_fusion(fusion_cost or cost, cfg))
    tuned = tuner.tune(optimised) if tuner is not None else {}
    kernels = lower(optimised, {n: r.params for n, r in tuned.items()}, cfg)
    tuning = None
    objective = tuner.objective if tuner is not None else "time"
    if tuner is not None:
        tuning = f"tuned ({tuner.strategy} search, {tuner.cost.name} model"
        tuning += f", top {tuner.top_k} measured by {tuner.measure.name}" if tuner.measure else ""
        tuning += ", minimising energy)" if objective == "energy" else ")"
    opt, base = estimate(optimised, kernels, cost, cfg), estimate(graph, lower(graph, cfg=cfg), cost, cfg)
    energy = (lowered_energy(opt, cfg), lowered_energy(base, cfg)) if objective == "energy" else None
    return CompileReport(graph.name, cfg.name, cost.name, tuning, pipeline, opt, base, tuned, objective, energy)


def lowered_energy(lowered: Lowered, cfg: Config) -> float:
    """Joules of every kernel of `lowered` over its estimated cycles (cost/energy.py)."""
    return sum(kernel_energy(k, cfg, e) for k, e in zip(lowered.kernels, lowered.estimates, strict=True))
