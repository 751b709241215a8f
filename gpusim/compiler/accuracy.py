"""Precision validation: a model converted to a lower precision (passes/precision.py), optimised and
lowered as `compile_graph` does, its kernels run on the functional executor, and every graph output
compared with the f32 reference (the numpy evaluator on the original graph): max absolute error,
relative error (max |error| / max |reference|: normwise, so that outputs near zero do not blow it up)
and cosine similarity, PASS when the relative error is within tolerance and the cosine above its floor;
beside it the estimated cycles of the f32 and the converted model on the config.

Default tolerances, from the formats' unit roundoff u (half an ulp at 1) and the error a dot product
of K rounded terms accumulates in f32 (about u per rounded input, independent across terms):

| precision | u | relative error | cosine |
|---|---|---|---|
| f16 | 4.9e-4 | 1e-2 | 0.9999 |
| bf16 | 3.9e-3 | 5e-2 | 0.999 |
| int8 | 1/254 of the tensor's max (one quantisation step) | 1e-1 | 0.99 |

f16 and bf16 round every stored tensor once more than f32 does (a few u through a layer or two, well
under 20 u); int8's step is relative to a whole tensor's maximum, so small elements carry most of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.cost.fusion import cost_based_fusion
from gpusim.compiler.driver import Lowered, estimate
from gpusim.compiler.evaluate import evaluate
from gpusim.compiler.ir import Graph
from gpusim.compiler.lower import lower
from gpusim.compiler.lower.run import run_kernels
from gpusim.compiler.passes.manager import run_pipeline
from gpusim.compiler.passes.precision import Converted, convert
from gpusim.config import Config

TOLERANCES: dict[str, tuple[float, float]] = {"f16": (1e-2, 0.9999), "bf16": (5e-2, 0.999), "int8": (1e-1, 0.99)}


@dataclass(frozen=True, slots=True)
class OutputError:
    """One graph output's error against the f32 reference."""

    output: str
    max_abs: float
    relative: float
    cosine: float
    passed: bool


@dataclass(frozen=True, slots=True)
class PrecisionReport:
    """What `validate` found: per-output errors, the tolerances used, and both lowerings' estimates."""

    name: str
    config: str
    precision: str
    cost: str
    tolerance: float
    min_cosine: float
    errors: tuple[OutputError, ...]
    reference: Lowered
    lowered: Lowered
    converted: Converted

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.errors)

    @property
    def speedup(self) -> float:
        """f32 cycles / converted cycles, launch overheads included."""
        return self.reference.cycles / self.lowered.cycles if self.lowered.cycles else 1.0

    def to_dict(self) -> dict:
        return {"model": self.name, "config": self.config, "precision": self.precision, "cost_model": self.cost,
                "tolerance": self.tolerance, "min_cosine": self.min_cosine, "passed": self.passed,
                "outputs": [{"output": e.output, "max_abs_error": e.max_abs, "relative_error": e.relative,
                             "cosine": e.cosine, "passed": e.passed} for e in self.errors],
                "f32_cycles": self.reference.cycles, "cycles": self.lowered.cycles, "speedup": self.speedup,
                "f32_kernels": len(self.reference.kernels), "kernels": len(self.lowered.kernels)}

    def __str__(self) -> str:
        rows = [("output", "max abs error", "relative error", "cosine", "verdict")]
        rows += [(e.output, f"{e.max_abs:.3e}", f"{e.relative:.3e}", f"{e.cosine:.6f}",
                  "PASS" if e.passed else "FAIL") for e in self.errors]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        table = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                             strict=True)))
                 for r in rows]
        return "\n".join([
            f"{self.name} on {self.config}: {self.precision} against the f32 reference (tolerance: relative "
            f"error <= {self.tolerance:g}, cosine >= {self.min_cosine:g})", *table, "",
            f"f32          {len(self.reference.kernels)} kernels, {self.reference.cycles:,.0f} cycles ({self.cost})",
            f"{self.precision:<12} {len(self.lowered.kernels)} kernels, {self.lowered.cycles:,.0f} cycles",
            f"speed-up     {self.speedup:.2f}x",
            f"verdict      {'PASS' if self.passed else 'FAIL'}"])


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for every parameter: normal, a matrix scaled by 1/sqrt(its rows) (a weight of fan-in K
    keeps its product's scale), integers 0..3 for integer parameters."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in graph.parameters():
        if p.type.numpy_dtype.kind in "iu":
            out[p.name] = rng.integers(0, 4, p.shape)
        else:
            scale = 1 / np.sqrt(p.shape[0]) if p.type.rank == 2 else 1.0
            out[p.name] = rng.standard_normal(p.shape) * scale
    return out


def compare(reference: np.ndarray, value: np.ndarray) -> tuple[float, float, float]:
    """Max absolute error, relative error (max |error| / max |reference|) and cosine similarity."""
    ref, got = np.asarray(reference, np.float64).ravel(), np.asarray(value, np.float64).ravel()
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    peak = float(np.max(np.abs(ref))) if ref.size else 0.0
    norms = float(np.linalg.norm(ref) * np.linalg.norm(got))
    cosine = float(ref @ got / norms) if norms else float(np.array_equal(ref, got))
    return err, err / peak if peak else err, cosine


def lower_optimised(graph: Graph, cost: CostModel, cfg: Config) -> Lowered:
    """`graph` through the default pipeline (fusion decided by `cost`), lowered with template defaults."""
    optimised, _ = run_pipeline(graph, should_fuse=cost_based_fusion(cost, cfg))
    return estimate(optimised, lower(optimised, cfg=cfg), cost, cfg)


def validate(graph: Graph, precision: str, cfg: Config, cost: CostModel, *, tolerance: float | None = None,
             min_cosine: float | None = None, inputs: Mapping[str, ArrayLike] | None = None,
             calibration: Mapping[str, ArrayLike] | None = None, per_channel: bool = True) -> PrecisionReport:
    """Convert `graph` to `precision`, run its optimised kernels on `inputs` (default `random_inputs`,
    seed 0) and compare with the f32 reference; int8 is calibrated on `calibration` (default: the same
    weights, activations from seed 1)."""
    default_tol, default_cos = TOLERANCES[precision]
    tolerance = default_tol if tolerance is None else tolerance
    min_cosine = default_cos if min_cosine is None else min_cosine
    inputs = dict(inputs) if inputs is not None else random_inputs(graph)
    if calibration is None:
        fresh = random_inputs(graph, 1)
        calibration = {n: fresh[n] if n in _activations(graph) else v for n, v in inputs.items()}
    converted = convert(graph, precision, calibration=calibration, per_channel=per_channel)
    reference = evaluate(graph, inputs)
    lowered = lower_optimised(converted.graph, cost, cfg)
    got = run_kernels(lowered.graph, lowered.kernels, converted.inputs(inputs), cfg)
    errors = []
    for out in graph.outputs:
        err, rel, cos = compare(reference[out], got[out])
        errors.append(OutputError(out, err, rel, cos, rel <= tolerance and cos >= min_cosine))
    return PrecisionReport(graph.name, cfg.name, precision, cost.name, tolerance, min_cosine, tuple(errors),
                           lower_optimised(graph, cost, cfg), lowered, converted)


def _activations(graph: Graph) -> set[str]:
    """The model's inputs: parameters of rank 2 or more read other than as a matmul's B operand (the
    rest are weights and biases, which calibration shares with the inputs it is validated on)."""
    read = {i for node in graph.nodes.values() for pos, i in enumerate(node.inputs)
            if not (node.op == "matmul" and pos == 1)}
    return {p.name for p in graph.parameters() if p.type.rank >= 2 and p.name in read}
