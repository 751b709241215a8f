"""The tensor-core matmul template (lower/mma.py): its kernels' values against numpy per precision (odd
shapes, batched, with epilogues, every num_stages), which template lowering picks where, the tuner's
space, the analytical model's tensor rate, and the pipeline's effect on simulated cycles."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import CompilerError, models
from gpusim.compiler.accuracy import random_inputs
from gpusim.compiler.cost import AnalyticalCost
from gpusim.compiler.cost.analytical import terms
from gpusim.compiler.evaluate import evaluate
from gpusim.compiler.ir import Graph
from gpusim.compiler.lower import lower, lower_node, region_of, run_kernels
from gpusim.compiler.lower.lowering import select
from gpusim.compiler.passes.manager import run_pipeline
from gpusim.compiler.passes.precision import convert
from gpusim.compiler.tune import Tuner


def _matmul(m, k, n, dtype, *, batch=(), trans_b=False, bias=False, relu=False, residual=False):
    """y = [relu](A @ B [+ bias]) [+ r] on `dtype` operands (i8: the i32 product cast to f32), fused."""
    g = Graph("g")
    a = g.parameter("a", (*batch, m, k), dtype)
    b = g.parameter("b", (*batch, n, k) if trans_b else (*batch, k, n), dtype)
    y = g.emit("matmul_t", (a, b), {"trans_a": False, "trans_b": True}) if trans_b else g.matmul(a, b)
    out = "f32" if dtype == "i8" else dtype
    if dtype == "i8":
        y = g.emit("cast", (y,), {"to": "f32"})
    if bias:
        y = g.add(y, g.parameter("bias", (n,), out))
    if relu:
        y = g.relu(y)
    if residual:
        y = g.add(y, g.parameter("r", (*batch, m, n), out))
    g.output(y, "y")
    return run_pipeline(g)[0]


def _inputs(graph, seed=0):
    rng = np.random.default_rng(seed)
    return {p.name: (rng.integers(-127, 128, p.shape) if p.dtype == "i8" else rng.uniform(-1, 1, p.shape))
            .astype(p.type.numpy_dtype) for p in graph.parameters()}


def _check(graph, cfg, params=None, tolerance=0.0):
    """Lower on `cfg` (the mma template expected), run on the functional executor, compare with numpy."""
    (node,) = [n for n in graph.topo_order() if n.op != "parameter"]
    kernel = lower_node(graph, node, params, cfg)
    assert kernel.template == "mma"
    inputs = _inputs(graph)
    got = run_kernels(graph, [kernel], inputs, cfg)["y"].astype(np.float64)
    want = evaluate(graph, inputs)["y"].astype(np.float64)
    assert np.max(np.abs(got - want)) <= tolerance * np.max(np.abs(want))
    return kernel


# f16/bf16 results are rounded once from f32 sums, as the evaluator rounds its float64 ones: they agree
# but for ties of the two roundings (one ulp: 2^-11 f16, 2^-8 bf16 of the largest value); s8 is exact
@pytest.mark.parametrize("dtype, tol", [("f16", 2 ** -10), ("bf16", 2 ** -7)])
@pytest.mark.parametrize("m, k, n, trans_b", [(32, 64, 64, False), (37, 40, 24, False), (33, 48, 20, True),
                                              (64, 64, 64, True), (17, 200, 136, False)])
def test_float_kernels_match_numpy_on_odd_shapes_and_both_b_layouts(a100, dtype, tol, m, k, n, trans_b):
    _check(_matmul(m, k, n, dtype, trans_b=trans_b), a100, tolerance=tol)


@pytest.mark.parametrize("m, k, n", [(32, 64, 64), (45, 80, 10), (16, 32, 16)])
def test_int8_kernels_are_exact_with_the_dequantising_epilogue(a100, m, k, n):
    g = _matmul(m, k, n, "i8", trans_b=True, bias=True, relu=True)
    _check(g, a100, tolerance=1e-6)  # the s32 sums exact; the epilogue in f32 as the evaluator's


def test_epilogues_and_batched_operands(a100):
    g = _matmul(40, 64, 48, "f16", bias=True, relu=True, residual=True)
    _check(g, a100, tolerance=2 ** -10)
    g = _matmul(16, 96, 32, "f16", batch=(3,), bias=True, residual=True)
    kernel = _check(g, a100, tolerance=2 ** -10)
    assert kernel.launch.grid[2] == 3


@pytest.mark.parametrize("params", [
    {"num_stages": 1}, {"num_stages": 2}, {"num_stages": 4},
    {"BM": 16, "BN": 16, "BK": 16, "WM": 1, "WN": 1, "num_stages": 3},   # K = 72: a partial last k tile
    {"BM": 64, "BN": 32, "BK": 64, "WM": 4, "WN": 1, "num_stages": 2},
    {"BM": 32, "BN": 64, "BK": 32, "WM": 2, "WN": 2, "num_stages": 4},
])
def test_every_pipeline_depth_and_tile_computes_the_same(a100, params):
    _check(_matmul(50, 72, 40, "bf16", bias=True), a100, params, tolerance=2 ** -7)


def test_lowering_picks_the_tensor_cores_where_the_config_and_the_operands_allow(a100, gtx980):
    f16 = _matmul(32, 64, 64, "f16")
    (node,) = [n for n in f16.topo_order() if n.op != "parameter"]
    assert select(f16, node, a100) == (select(f16, node, a100)[0], None)
    assert select(f16, node, a100)[0].name == "mma"
    template, why = select(f16, node, gtx980)   # no tensor unit: the CUDA-core template
    assert (template.name, why) == ("matmul", "gtx980 has no tensor unit for f16")
    assert select(f16, node, None)[0].name == "matmul"  # no config: as before
    f32 = _matmul(32, 64, 64, "f32")
    (node,) = [n for n in f32.topo_order() if n.op != "parameter"]
    assert select(f32, node, a100) == (select(f32, node, a100)[0], None)
    assert select(f32, node, a100)[0].name == "matmul"
    cases = [(_matmul(32, 64, 10, "f16"), "N = 10 is not a multiple of 8 f16 elements (16-byte copies)"),
             (_matmul(32, 40, 16, "i8", trans_b=True), "K = 40 is not a multiple of 16 i8 elements"),
             (_matmul(32, 64, 16, "i8"), "s8 B not transposed")]
    for graph, reason in cases:
        node = next(n for n in graph.topo_order() if n.op != "parameter")
        template, why = select(graph, node, a100)
        assert template.name == "matmul" and reason in why
    g = Graph("g")
    a, b = g.parameter("a", (64, 32), "f16"), g.parameter("b", (64, 16), "f16")
    g.output(g.emit("matmul_t", (a, b), {"trans_a": True, "trans_b": False}), "y")
    node = next(n for n in g.topo_order() if n.op != "parameter")
    assert "A is read transposed" in select(g, node, a100)[1]


def test_the_precision_pass_puts_every_linear_layer_on_the_tensor_cores_on_a100_only(a100, gtx980):
    g = models.build("transformer")
    for precision in ("bf16", "int8"):
        converted = convert(g, precision, calibration=random_inputs(g, 1)).graph
        optimised = run_pipeline(converted)[0]
        on_a100 = [k.template for k in lower(optimised, cfg=a100)]
        assert on_a100.count("mma") >= 6 and "mma" not in [k.template for k in lower(optimised, cfg=gtx980)]


def test_bad_parameters_are_one_line_errors(a100):
    g = _matmul(32, 64, 64, "f16")
    node = next(n for n in g.topo_order() if n.op != "parameter")
    for params, message in (({"num_stages": 5}, "num_stages 5; must be 1..4"),
                            ({"BK": 8}, "BK 8 is 16 bytes of f16; a multiple of 32"),
                            ({"BM": 16, "WM": 2}, "a warp's tile (BM/WM x BN/WN = 8 x 32) must be at least 16 x 16"),
                            ({"BM": 48}, "powers of two"),
                            ({"TM": 2}, "unknown mma parameter(s) TM")):
        with pytest.raises(CompilerError, match=message.replace("(", r"\(").replace(")", r"\)")):
            lower_node(g, node, params, a100)


def test_the_tuner_searches_num_stages_beside_the_tiles(a100, tmp_path):
    g = _matmul(64, 256, 64, "f16", bias=True)
    node = next(n for n in g.topo_order() if n.op != "parameter")
    space = select(g, node, a100)[0].space(region_of(g, node), a100)
    assert space["num_stages"] == (1, 2, 3, 4) and set(space) == {"BM", "BN", "BK", "WM", "WN", "num_stages"}
    result = Tuner(a100, AnalyticalCost(), strategy="grid", cache_dir=tmp_path).tune_node(g, node)
    assert result.template == "mma" and result.params["num_stages"] in (2, 3, 4)  # a pipeline beats none
    assert result.evaluated > 100 and not result.rejected


def test_the_analytical_model_charges_mma_at_the_configs_rate_per_precision(a100):
    # 64 x 64 x 64, one block of 2 x 2 warps of 32 x 32: per warp 2 x 4 mma tiles per k step, 4 k
    # steps of 16 (f16: 32 mma of 2048 FMA) or 2 of 32 (s8: 16 mma of 4096): 65,536 FMA a warp either
    # way, over the A100's 256 (f16) and 512 (s8) FMA a cycle: 256 and 128 cycles of the tensor unit
    params = {"BM": 64, "BN": 64, "WM": 2, "WN": 2, "num_stages": 2}
    for dtype, bk, trans_b, held in (("f16", 32, False, 256), ("i8", 64, True, 128)):
        g = _matmul(64, 64, 64, dtype, trans_b=trans_b)
        node = next(n for n in g.topo_order() if n.op != "parameter")
        kernel = lower_node(g, node, {**params, "BK": bk}, a100)
        precision = "f16" if dtype == "f16" else "s8"
        fma = 32 * 2048 if dtype == "f16" else 16 * 4096
        assert dict(kernel.work.tensor_fma) == {precision: fma}
        t = terms(kernel, a100)
        assert t.throughput >= held  # one warp a sub-partition: its tensor time bounds the throughput term
        assert a100.units["tensor"].fma_per_cycle(precision) * held == fma


def test_one_stage_is_slower_than_three_on_a_memory_latency_bound_tile(a100, sim):
    # one block of 4 warps walking K = 1024 in 32 k tiles: with one stage every tile waits for its copy;
    # with three, the copies of two tiles are in flight behind the mma
    g = _matmul(64, 1024, 64, "f16")
    node = next(n for n in g.topo_order() if n.op != "parameter")
    base = {"BM": 64, "BN": 64, "BK": 32, "WM": 2, "WN": 2}
    one, three = (lower_node(g, node, {**base, "num_stages": s}, a100) for s in (1, 3))
    c1, c3 = (e.kernel_cycles for e in sim.costs([one, three], a100))
    assert c1 > 1.3 * c3
    a1, a3 = (AnalyticalCost().cost(k, a100).cycles for k in (one, three))
    assert a1 > a3  # the analytical model sees it too (fewer waits for the copies)


def test_the_report_shows_num_stages_and_why_a_matmul_stayed_on_the_cuda_cores(capsys):
    from gpusim.cli.main import main

    assert main(["compile", "mlp2", "--config", "a100", "--precision", "f16", "--report", "-"]) == 0
    out = capsys.readouterr().out
    assert "mma       BM=32 BN=64 BK=32 WM=1 WN=2 num_stages=3" in out
    assert "k_5: CUDA-core template: N = 10 is not a multiple of 8 f16 elements (16-byte copies)" in out
