"""Lowering: every template's kernels run in the functional executor and match the reference evaluator,
chained over whole graphs (the MLP and the attention block, fused and unfused, f32 and f16), for default
and non-default parameters, ragged shapes and broadcasting; the work counted as kernels are generated."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import CompilerError, Graph, evaluate, models, run_pipeline
from gpusim.compiler.lower import lower, lower_node, run_kernels

from .helpers import random_inputs

UNFUSED = ("fold", "simplify", "cse", "dce")


def check(graph: Graph, params=None, rtol=1e-4, atol=1e-5):
    """Lower `graph` with `params` and compare the kernels' outputs with `evaluate`."""
    inputs = random_inputs(graph)
    got = run_kernels(graph, lower(graph, params), inputs)
    want = evaluate(graph, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def errors(model, fuse: bool) -> dict[str, tuple[float, float]]:
    """Max absolute and max relative (to the largest reference value) error of the f32 and f16 kernels
    against the f32 evaluation, all from the same inputs (rounded to f16)."""
    g32, g16 = model("f32"), model("f16")
    inputs = {k: v.astype(np.float16).astype(np.float32) for k, v in random_inputs(g32).items()}
    want = evaluate(g32, inputs)["y"].astype(np.float64)
    out = {}
    for dtype, g in (("f32", g32), ("f16", g16)):
        optimised, _ = run_pipeline(g, UNFUSED + ("fuse",) * fuse)
        got = run_kernels(optimised, lower(optimised), inputs)["y"].astype(np.float64)
        err = np.abs(got - want).max()
        out[dtype] = (err, err / np.abs(want).max())
    return out


@pytest.mark.parametrize("fuse", [False, True])
@pytest.mark.parametrize("model", [lambda d: models.mlp2(32, 64, 128, 10, dtype=d),
                                   lambda d: models.attention(32, 32, dtype=d)], ids=["mlp2", "attention"])
def test_models_match_evaluate_f32_and_f16(model, fuse):
    err = errors(model, fuse)
    assert err["f32"][1] < 1e-6  # f32 kernels: rtol ~1e-4 with a wide margin
    # f16 storage (inputs, intermediates, outputs), f32 arithmetic: larger, but bounded
    assert err["f32"][0] < err["f16"][0] and 1e-4 < err["f16"][1] < 5e-3


def test_fusion_rounds_f16_less():
    """Fused kernels keep the intermediates in f32 registers: fewer f16 roundings than kernel by kernel."""
    mlp = lambda d: models.mlp2(32, 64, 128, 10, dtype=d)  # noqa: E731
    assert errors(mlp, True)["f16"][0] < errors(mlp, False)["f16"][0]


def test_kernels_of_the_models():
    mlp, _ = run_pipeline(models.mlp2(32, 64, 128, 10))
    kernels = lower(mlp)
    assert [(k.name, k.template, k.launch.grid, k.launch.block) for k in kernels] == [
        ("k_2", "matmul", (8, 2, 1), (16, 16, 1)), ("k_4", "matmul", (1, 2, 1), (16, 16, 1))]
    k = kernels[0]
    assert k.args == {"in0": "x", "in1": "w1", "in2": "b1", "out": "2"} and k.output == "2"
    assert k.params == {"BM": 16, "BN": 16, "BK": 16, "TM": 1, "TN": 1, "use_shared": True}
    assert k.program.shared_bytes == (16 * 17 + 16 * 16) * 4  # A's rows padded by a word
    # K = 64 in 4 panels: one wait for global loads each, one for the bias; two barriers a panel
    assert (k.work.global_trips, k.work.shared_trips, k.work.barriers) == (5, 64, 8)
    assert k.work.flops == 2 * 32 * 128 * 64 + 2 * 32 * 128
    assert k.work.dram_bytes == (32 * 64 + 64 * 128 + 128 + 32 * 128) * 4
    attention, _ = run_pipeline(models.attention(32, 32))
    assert [k.template for k in lower(attention)] == ["matmul"] * 4 + ["reduce"] + ["matmul"] * 2  # K^T folded


def matmul_graph(m, k, n, epilogue=True):
    g = Graph("mm")
    x, w = g.parameter("x", (m, k)), g.parameter("w", (k, n))
    y = g.matmul(x, w)
    if epilogue:
        y = g.gelu(g.add(y, g.parameter("b", (n,))), "tanh")
    g.output(y, "y")
    fused, _ = run_pipeline(g)
    return fused


@pytest.mark.parametrize("params", [
    {"BM": 32, "BN": 32, "BK": 8, "TM": 2, "TN": 2, "use_shared": True},
    {"BM": 64, "BN": 16, "BK": 32, "TM": 4, "TN": 1, "use_shared": True},
    {"BM": 16, "BN": 32, "BK": 16, "TM": 2, "TN": 4, "use_shared": False},
    {"BM": 8, "BN": 64, "BK": 8, "TM": 1, "TN": 2, "use_shared": False},
])
def test_matmul_parameters_on_ragged_shapes(params):
    g = matmul_graph(37, 50, 23)  # nothing divides: guarded rows, columns and a partial last K panel
    check(g, {g.outputs["y"]: params})


def test_elementwise_broadcasting_and_unroll():
    g = Graph("ew")
    x, row, col = g.parameter("x", (3, 5, 7)), g.parameter("r", (7,)), g.parameter("c", (5, 1))
    y = g.tanh(g.sub(g.div(g.mul(g.exp(x), row), g.add(g.relu(col), 2.0)), g.pow(x, 3.0)))
    g.output(g.add(g.gelu(y), g.pow(g.add(x, 1.5), 0.5)), "y")
    fused, _ = run_pipeline(g)
    for params in ({"block": 64, "unroll": 4}, {"block": 32, "unroll": 1}):
        check(fused, {fused.outputs["y"]: params})
    check(g)  # unfused: one kernel per operator


@pytest.mark.parametrize("block", [32, 256])
@pytest.mark.parametrize("op", ["softmax", "layernorm", "reduce_sum", "reduce_mean"])
def test_row_kernels(op, block):
    g = Graph("rows")
    x = g.parameter("x", (3, 4, 300))  # 300 columns: cached in registers at 256 threads, a loop at 32
    v = g.mul(g.exp(x), 0.5)
    y = {"softmax": lambda: g.softmax(v), "reduce_sum": lambda: g.reduce_sum(v, (1, 2), keepdims=True),
         "reduce_mean": lambda: g.reduce_mean(v, 2),
         "layernorm": lambda: g.layernorm(v, g.parameter("g", (300,)), g.parameter("b", (1,)))}[op]()
    g.output(y, "y")
    fused, _ = run_pipeline(g)
    check(fused, {fused.outputs["y"]: {"block": block}})


@pytest.mark.parametrize("params", [{"tile": 16, "rows": 4, "use_shared": True},
                                    {"tile": 32, "rows": 8, "use_shared": False}])
def test_transpose_2d(params):
    g = Graph("t")
    g.output(g.transpose(g.parameter("x", (37, 70))), "y")
    check(g, {g.outputs["y"]: params})


def test_transpose_gather_and_reshape_views():
    g = Graph("t")
    x = g.parameter("x", (2, 3, 5))
    y = g.transpose(g.reshape(x, (3, 2, 5)), (2, 0, 1))
    g.output(g.reshape(g.relu(y), (30,)), "y")
    kernels = lower(g)
    assert [k.template for k in kernels] == ["transpose", "elementwise"]  # reshapes are views: no kernel
    assert kernels[0].args["in0"] == "x" and kernels[0].params == {"block": 256}
    check(g)


def test_lowering_errors():
    mlp, _ = run_pipeline(models.mlp2(4, 8, 8, 2))
    with pytest.raises(CompilerError, match=r"unknown matmul parameter\(s\) BX; its parameters are BM, BN"):
        lower(mlp, {"2": {"BX": 4}})
    with pytest.raises(CompilerError, match=r"parameters for unknown node\(s\) %nope"):
        lower(mlp, {"nope": {}})
    with pytest.raises(CompilerError, match="BM 16 must be a multiple of TM 3"):
        lower(mlp, {"2": {"TM": 3}})
    with pytest.raises(CompilerError, match="must be 32..1024"):
        lower(mlp, {"2": {"BM": 8, "BN": 8, "TM": 2, "TN": 2}})
    with pytest.raises(CompilerError, match="needs no kernel"):
        lower_node(mlp, mlp["x"])
    g = Graph("bad")
    g.output(g.matmul(g.parameter("a", (3, 2, 3, 4)), g.parameter("b", (3, 1, 4, 5))), "y")
    with pytest.raises(CompilerError, match=r"operand %b: batch dimensions \[3, 1\] neither match the result's "
                                            r"\[3, 2\] nor are all 1"):
        lower(g)
    g = Graph("bad")
    g.output(g.matmul(g.parameter("a", (4,)), g.parameter("b", (4, 5))), "y")
    with pytest.raises(CompilerError, match=r"lowering supports matmul of matrices, not f32\[4\] @ f32\[4,5\]"):
        lower(g)
    g = Graph("bad")
    g.output(g.add(g.parameter("a", (2,), "i32"), 1), "y")
    with pytest.raises(CompilerError,
                       match=r"lowering supports f32, f16, bf16 and i8 tensors \(and an i32 matmul result\), not i32"):
        lower(g)
