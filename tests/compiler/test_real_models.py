"""Whole models end to end: the built-in 4-head transformer block (batched attention matmuls) and
ResNet-50 (the onnx package's light_resnet50: the real network's graph, weights from ConstantOfShape)
compile, lower and estimate per-kernel cycles on a100; the transformer's kernels also run on the
functional executor against the evaluator and are scored by the simulated model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpusim.compiler import AnalyticalCost, compile_graph, evaluate, models, run_pipeline
from gpusim.compiler.lower import lower, run_kernels

from .helpers import random_inputs


def test_four_head_transformer_runs_on_the_functional_executor():
    g = models.build("transformer")
    optimised, _ = run_pipeline(g)
    kernels = lower(optimised)
    inputs = random_inputs(g)
    got, want = run_kernels(optimised, kernels, inputs)["y"], evaluate(g, inputs)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    batched = [k for k in kernels if k.template == "matmul" and k.launch.grid[2] > 1]
    assert [k.launch.grid[2] for k in batched] == [4, 4]  # q @ k^T and p @ v: one batch per head
    assert [k.node.op for k in kernels].count("fused") == 4  # scale+softmax, and three matmul epilogues


def test_four_head_transformer_simulated_per_kernel_on_a100(a100, sim):
    report = compile_graph(models.build("transformer"), a100, cost=sim, fusion_cost=AnalyticalCost())
    cycles = [e.kernel_cycles for e in report.optimised.estimates]
    assert len(cycles) == 15 and all(c > 0 for c in cycles)
    assert report.optimised.cycles < report.baseline.cycles  # fusion saves kernels and launches




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
