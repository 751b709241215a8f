"""The optimised graph written back as ONNX (--save-onnx): every file passes onnx.checker and, run in
onnx.reference.ReferenceEvaluator, gives the values of the evaluator on the graph as given; fused
kernels appear as their decomposition, named after the kernel. And the per-kernel --report."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from gpusim.cli.main import main
from gpusim.compiler import CompilerError, Graph, evaluate, import_onnx, models, run_pipeline
from gpusim.compiler.onnx_export import save_onnx, to_onnx

from .helpers import random_inputs
from .test_new_ops import REMAPS


def reference_values(model, inputs):
    got = ReferenceEvaluator(model).run(None, inputs)
    return {o.name: v for o, v in zip(model.graph.output, got, strict=True)}


@pytest.mark.parametrize("graph", [models.mlp2(8, 16, 32, 4), models.attention(16, 32),
                                   models.transformer(16, 32, 4, 64)], ids=["mlp2", "attention", "transformer"])
def test_the_optimised_graph_runs_in_the_reference_evaluator_to_the_same_values(graph, tmp_path):
    optimised, _ = run_pipeline(graph)
    path = tmp_path / "out.onnx"
    save_onnx(optimised, path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert {o.domain for o in model.opset_import} == {""}  # standard operators only
    inputs = random_inputs(graph)
    want, got = evaluate(graph, inputs), reference_values(model, inputs)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-4)
    kernels = json.loads({p.key: p.value for p in model.metadata_props}["gpusim.kernels"])
    fused = [n for n in optimised.topo_order() if n.op == "fused"]
    assert sorted(kernels) == sorted(n.name for n in fused)
    assert all(n.doc_string == f"gpusim.kernel={n.name.split('/')[0]}" for n in model.graph.node if "/" in n.name)


def test_a_folded_transpose_is_written_back_as_a_transpose_and_reimports():
    graph = models.attention(16, 32)
    optimised, _ = run_pipeline(graph)
    assert any(n.op == "matmul_t" for n in optimised.topo_order())
    model = to_onnx(optimised)
    assert "Transpose" in {n.op_type for n in model.graph.node}
    again = import_onnx(model)
    inputs = random_inputs(graph)
    np.testing.assert_allclose(evaluate(again, inputs)["y"], evaluate(graph, inputs)["y"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", list(REMAPS))
def test_remaps_become_gathers_with_the_fill(case):
    shape, attrs = REMAPS[case]
    g = Graph(case)
    g.output(g.emit("remap", (g.parameter("x", shape),), attrs), "y")
    inputs = random_inputs(g)
    np.testing.assert_array_equal(reference_values(to_onnx(g), inputs)["y"], evaluate(g, inputs)["y"])


def test_an_operator_without_an_onnx_form_is_named():
    g = Graph("x")
    x = g.parameter("x", (4,))
    g.output(g.relu(x), "y")
    g.nodes[g.outputs["y"]] = g[g.outputs["y"]].__class__("0", "mystery", ("x",), g[g.outputs["y"]].type)
    with pytest.raises(CompilerError, match="node %0: no ONNX form for operator 'mystery'"):
        to_onnx(g)


def test_compile_saves_onnx_and_reports_per_kernel(tmp_path, capsys):
    out, table, js = tmp_path / "m.onnx", tmp_path / "report.txt", tmp_path / "r.json"
    assert main(["compile", "mlp2", "--config", "a100", "--set", "batch=16", "--save-onnx", str(out),
                 "--report", str(table), "--json", str(js), "--cache-dir", str(tmp_path / "cache")]) == 0
    onnx.checker.check_model(onnx.load(str(out)))
    lines = table.read_text().splitlines()
    assert lines[0].split() == ["kernel", "fused", "ops", "template", "tile", "sim", "cycles", "bottleneck"]
    assert lines[1].split()[:3] == ["k_2", "matmul+add+relu", "matmul"] and "BM=16" in lines[1]
    assert lines[-1].startswith("2 kernels, ")
    rows = json.loads(js.read_text())["report"]
    assert [r["ops"] for r in rows] == [["matmul", "add", "relu"], ["matmul", "add"]]
    assert all(r["simulated_cycles"] > 0 and r["bottleneck"] in ("latency", "issue", "memory") for r in rows)
    assert f"optimised graph written as ONNX to {out}" in capsys.readouterr().out


def test_tuning_flags_need_tune(capsys):
    assert main(["compile", "mlp2", "--refit"]) != 0
    assert "gpusim compile: error: --search, --search-cost, --tie-break, --refit and --objective need --tune" in \
        capsys.readouterr().err


def test_a_fused_convolution_is_written_back_as_conv_and_a_transposed_one_is_refused():
    from .test_conv import conv_graph

    graph = conv_graph((2, 4, 7, 6), (6, 2, 3, 2), strides=(2, 1), pads=(1, 0, 2, 1), dilations=(1, 2), group=2,
                       bias=True, relu=True)
    optimised, _ = run_pipeline(graph)
    model = to_onnx(optimised)
    assert "Conv" in {n.op_type for n in model.graph.node}
    inputs = random_inputs(graph)
    np.testing.assert_allclose(reference_values(model, inputs)["y"], evaluate(graph, inputs)["y"], rtol=1e-4,
                               atol=1e-5)
    with pytest.raises(CompilerError, match=r"node %c: no ONNX Conv for a convolution with input_dilation \[2, 2\]"):
        to_onnx(conv_graph((1, 2, 3, 3), (2, 2, 2, 2), input_dilation=(2, 2)))
