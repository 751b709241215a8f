"""The fused_attention operator and its flash-attention template (lower/attention.py): the evaluator
against numpy, the kernel on the functional executor against the evaluator over sequence lengths, head
dimensions, both key layouts, ragged tiles and every split of the keys, and what it never writes."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import CompilerError, Graph, GraphError, evaluate, lower
from gpusim.compiler.lower import run_kernels
from gpusim.compiler.lower.attention import default

from .helpers import random_inputs


def attention_graph(heads, sq, sk, d, dv, trans_b=False, scale=0.25, dtype="f32"):
    g = Graph("a")
    q = g.parameter("q", (heads, sq, d), dtype)
    b = g.parameter("b", (heads, sk, d) if trans_b else (heads, d, sk), dtype)
    v = g.parameter("v", (heads, sk, dv), dtype)
    g.output(g.emit("fused_attention", (q, b, v), {"scale": scale, "trans_b": trans_b}, name="att"), "y")
    return g


def numpy_attention(q, b, v, scale, trans_b):
    s = scale * (q @ (np.swapaxes(b, -1, -2) if trans_b else b))
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("trans_b", [False, True])
def test_the_evaluator_is_softmax_of_the_scaled_scores_times_v(trans_b):
    g = attention_graph(2, 5, 7, 4, 3, trans_b, scale=0.5)
    inputs = random_inputs(g)
    want = numpy_attention(*(inputs[n].astype(np.float64) for n in ("q", "b", "v")), 0.5, trans_b)
    np.testing.assert_allclose(evaluate(g, inputs)["y"], want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("heads, sq, sk, d, dv, trans_b, params", [
    (4, 32, 32, 16, 16, False, None),                         # the transformer block's heads, defaults
    (1, 37, 45, 8, 12, True, None),                           # seq not a multiple of the tiles, k stored Sk x D
    (2, 128, 128, 32, 32, False, None),                       # longer sequences, a wider head
    (2, 40, 37, 16, 8, True, {"BQ": 32, "BKV": 8, "SPLIT": 4}),  # keys split over 4 groups, ragged
    (3, 5, 7, 4, 4, False, {"BQ": 64, "BKV": 8, "SPLIT": 3}),    # every group but one without keys
    (1, 8, 3, 4, 4, False, {"BQ": 32, "BKV": 16, "SPLIT": 1}),   # one partial tile
    (2, 33, 100, 64, 16, False, {"BQ": 32, "BKV": 16, "SPLIT": 2}),
])
def test_the_flash_kernel_matches_the_evaluator(heads, sq, sk, d, dv, trans_b, params):
    g = attention_graph(heads, sq, sk, d, dv, trans_b)
    inputs = random_inputs(g, seed=sq)
    inputs["q"] *= 4  # scores spread over several units: the running maximum moves between tiles
    (kernel,) = lower(g, {"att": params} if params else None)
    assert kernel.template == "attention"
    np.testing.assert_allclose(run_kernels(g, [kernel], inputs)["y"], evaluate(g, inputs)["y"], rtol=1e-4,
                               atol=1e-5)


def test_f16_tensors_compute_in_f32():
    g = attention_graph(2, 16, 24, 8, 8, dtype="f16")
    inputs = random_inputs(g)
    got = run_kernels(g, lower(g), inputs)["y"].astype(np.float32)
    np.testing.assert_allclose(got, evaluate(g, inputs)["y"].astype(np.float32), rtol=0, atol=2e-3)


def test_the_scores_never_reach_memory_and_the_grid_is_query_tiles_by_heads():
    g = attention_graph(4, 100, 100, 16, 8)
    (kernel,) = lower(g)
    assert kernel.params == {"BQ": 32, "BKV": 16, "SPLIT": 4}
    assert kernel.launch.grid == (4, 4, 1) and kernel.launch.block == (32, 4, 1)  # ceil(100 / 32) x 4 heads
    # the only global stores are the thread's Dv results
    assert kernel.source.count("st.global") == 8
    # key tiles for 4 groups of 16 keys, and the groups' partial (m, l, o) rows to merge
    assert kernel.program.shared_bytes == (4 * 16 * (16 + 8) + (8 + 2) * 4 * 32) * 4
    assert kernel.work.dram_bytes == (2 * 4 * 100 * 16 + 2 * 4 * 100 * 8) * 4  # q, k, v read once, the result


def test_defaults_split_short_sequences_finer():
    from gpusim.compiler.lower.region import region_of
    for sk, want in ((32, {"BQ": 32, "BKV": 8, "SPLIT": 4}), (8, {"BQ": 32, "BKV": 8, "SPLIT": 1}),
                     (512, {"BQ": 32, "BKV": 16, "SPLIT": 4})):
        g = attention_graph(1, 16, sk, 8, 8)
        assert default(region_of(g, g["att"])) == want


def test_bad_parameters_and_shapes_are_errors():
    g = attention_graph(1, 16, 16, 8, 8)
    with pytest.raises(CompilerError, match=r"attention: BQ 48 x SPLIT 1 threads must be whole warps"):
        lower(g, {"att": {"BQ": 48, "BKV": 8, "SPLIT": 1}})
    with pytest.raises(CompilerError, match="BKV x \\(D \\+ Dv\\) = 8192 FMAs unrolled per key tile; at most 4096"):
        lower(g, {"att": {"BQ": 32, "BKV": 512, "SPLIT": 1}})
    h = Graph("bad")
    q, b, v = h.parameter("q", (2, 4, 8)), h.parameter("b", (2, 6, 4)), h.parameter("v", (2, 4, 8))
    with pytest.raises(GraphError, match="inner dimensions differ"):
        h.emit("fused_attention", (q, b, v), {"scale": 1.0, "trans_b": False})


def test_the_optimised_transformer_saves_as_onnx_with_attention_as_its_decomposition(tmp_path):
    import json

    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    from gpusim.compiler import AnalyticalCost, cost_based_fusion, models, run_pipeline
    from gpusim.compiler.onnx_export import save_onnx
    from gpusim.config import load_config

    graph = models.build("transformer")
    optimised, _ = run_pipeline(graph, should_fuse=cost_based_fusion(AnalyticalCost(), load_config("a100")))
    (node,) = [n for n in optimised.topo_order() if n.op == "fused_attention"]
    save_onnx(optimised, tmp_path / "t.onnx")
    model = onnx.load(str(tmp_path / "t.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert {o.domain for o in model.opset_import} == {""}  # standard operators only
    kernels = json.loads({p.key: p.value for p in model.metadata_props}["gpusim.kernels"])
    assert kernels[node.name] == ["matmul", "mul", "softmax", "matmul"]
    tagged = [n.op_type for n in model.graph.node if n.doc_string == f"gpusim.kernel={node.name}"]
    assert tagged == ["MatMul", "Mul", "Softmax", "MatMul"]
    inputs = random_inputs(graph)
    (got,) = ReferenceEvaluator(model).run(None, inputs)
    np.testing.assert_allclose(got, evaluate(graph, inputs)["y"], rtol=1e-4, atol=1e-3)  # |y| up to ~40
