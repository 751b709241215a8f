"""Whole models end to end: the built-in 4-head transformer block (its attention one fused kernel) and
ResNet-50 (the onnx package's light_resnet50: the real network's graph, weights from ConstantOfShape)
compile, lower and estimate per-kernel cycles on a100; the transformer's kernels also run on the
functional executor against the evaluator and are scored by the simulated model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpusim.compiler import AnalyticalCost, compile_graph, cost_based_fusion, evaluate, models, run_pipeline
from gpusim.compiler.cost.base import launch_overhead_cycles
from gpusim.compiler.cost.fusion import alternative_costs
from gpusim.compiler.lower import lower, run_kernels

from .helpers import random_inputs


def test_four_head_transformer_runs_on_the_functional_executor(a100):
    g = models.build("transformer")
    optimised, _ = run_pipeline(g, should_fuse=cost_based_fusion(AnalyticalCost(), a100))
    kernels = lower(optimised)
    inputs = random_inputs(g)
    got, want = run_kernels(optimised, kernels, inputs)["y"], evaluate(g, inputs)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    # x @ wq, wk, wv: one matmul batched over the three (grid z), its head splits three remaps after
    # the weights' concat; q @ k^T, the scale and softmax, p @ v: one flash-attention kernel, a block
    # per head (seq 32: one query tile), the keys split over 4 warp groups
    assert [k.template for k in kernels][:7] == ["reduce", "gather", "matmul", "gather", "gather", "gather",
                                                 "attention"]
    assert kernels[2].launch.grid == (4, 2, 3)
    (attention,) = [k for k in kernels if k.template == "attention"]
    assert attention.launch.grid == (1, 4, 1) and attention.launch.block == (32, 4, 1)
    assert [k.node.op for k in kernels].count("fused") == 3  # three matmul epilogues
    assert len(kernels) == 12


def rewrite_candidate(graph, kind):
    """The fuse pass's rewrite candidate of `kind` in `graph` (rewrites declined: the graph stays as built)."""
    seen = []
    run_pipeline(graph, should_fuse=lambda c: seen.append(c) or not c.replacement)
    (candidate,) = [c for c in seen if c.kind == kind]
    return candidate


def test_batched_projections_pay_in_the_transformer_block(a100, sim):
    """x @ wq, wk, wv and their head splits: 6 kernels, against the concat, one batched matmul and three
    remaps: analytical 51,036 -> 36,590 cycles with launches, simulated 51,605 -> 37,717."""
    candidate = rewrite_candidate(models.build("transformer"), "horizontal")
    assert (len(candidate.unfused.kernels), len(candidate.fused.kernels)) == (6, 5)
    launch = launch_overhead_cycles(a100)
    for cost in (AnalyticalCost(), sim):
        fused, unfused = alternative_costs(candidate, cost, a100)
        assert fused - 5 * launch < unfused - 6 * launch, cost.name  # execution alone too


def test_fused_attention_pays_in_the_transformer_block_even_without_launches(a100, sim):
    """At seq 32 the flash kernel costs less than the three kernels it replaces, execution alone (the
    pass counts launches too): analytical 4,354 against 5,988 cycles, simulated 5,112 against 6,858."""
    candidate = rewrite_candidate(models.build("transformer"), "attention")
    launch = launch_overhead_cycles(a100)
    for cost in (AnalyticalCost(), sim):
        fused, unfused = alternative_costs(candidate, cost, a100)
        assert fused - launch < unfused - 3 * launch, cost.name


def test_four_head_transformer_simulated_per_kernel_on_a100(a100, sim):
    report = compile_graph(models.build("transformer"), a100, cost=sim, fusion_cost=AnalyticalCost())
    cycles = [e.kernel_cycles for e in report.optimised.estimates]
    assert len(cycles) == 12 and all(c > 0 for c in cycles)
    assert [k.template for k in report.optimised.kernels].count("attention") == 1
    assert report.optimised.cycles < report.baseline.cycles  # fusion saves kernels and launches
    assert len(report.baseline.kernels) - len(report.optimised.kernels) == 10


@pytest.mark.slow
def test_resnet50_compiles_with_per_layer_cycles_on_a100(a100):
    onnx = pytest.importorskip("onnx")
    path = Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx"
    report = compile_graph(models_from(path), a100, cost=AnalyticalCost())
    kernels = report.optimised.kernels
    templates = [k.template for k in kernels]
    # 53 convolutions (BatchNorm folded into each, the bias, ReLU and residual add in the epilogue) as one
    # implicit GEMM each, the classifier's GEMM, the max and average pools' windows
    assert templates.count("conv") == 53 and templates.count("matmul") == 1 and templates.count("gather") == 2
    assert len(kernels) == 60
    assert not [n for n in report.optimised.graph.nodes.values() if n.name.endswith(".a")]  # no BN scale left
    assert all(e.kernel_cycles > 0 for e in report.optimised.estimates)
    assert len(kernels) < len(report.baseline.kernels)


def models_from(path):
    from gpusim.compiler import import_onnx

    return import_onnx(path)
