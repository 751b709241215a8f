"""docs/architecture.md, "How to add an operator", run as written: softsign, x / (1 + |x|) (ONNX Softsign),
added to every table a new element-wise operator needs (the walkthrough's entries, the modules' private
helpers written out), each entry made for this test alone (monkeypatch takes it out again), and then
taken through every layer: built and printed, verified,
evaluated, fused by the pass pipeline, lowered, run on the functional executor, costed, tuned,
compiled, imported from ONNX, exported to ONNX, and differentiated."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import AnalyticalCost, Graph, GraphError, compile_graph, evaluate, lower, run_kernels, run_pipeline
from gpusim.compiler.autodiff import RULES, grad
from gpusim.compiler.lower import expr
from gpusim.compiler.lower.asm import fimm
from gpusim.compiler.onnx_export import SIMPLE
from gpusim.compiler.onnx_import import CONVERTERS, elementwise, import_onnx
from gpusim.compiler.ops import OPS, Kind, OpDef
from gpusim.compiler.tune import Tuner

RNG = np.random.default_rng(38)


def softsign(x):
    return x / (1 + np.abs(x))


@pytest.fixture
def with_softsign(monkeypatch):
    """The walkthrough's five steps, each one entry of one table."""
    # 1. ops.py: the operator, its kind (fusion follows from it), arity, attributes, type rule and numpy
    monkeypatch.setitem(OPS, "softsign", OpDef("softsign", Kind.ELEMENTWISE, (1, 1), (), OPS["sigmoid"].infer,
                                               lambda a, at: a[0] / (1 + np.abs(a[0])), "x / (1 + |x|)"))
    # 2. lower/expr.py: the element-wise code every template emits for it (f32 registers)
    monkeypatch.setitem(expr.UNARY, "softsign", lambda e, x, at: e.value(
        "div.rn.f32", "f32", x, e.value("add.f32", "f32", e.value("abs.f32", "f32", x), fimm(1.0))))
    # 3. onnx_import: the ONNX operator's converter (a unary one is a row of elementwise.UNARY)
    monkeypatch.setitem(elementwise.UNARY, "Softsign", "softsign")
    monkeypatch.setitem(CONVERTERS, "Softsign", elementwise.unary)
    # 4. onnx_export.py: written back as the ONNX operator of the same meaning
    monkeypatch.setitem(SIMPLE, "softsign", "Softsign")
    # 5. autodiff.py: its gradient rule, dy * (1 - |y|)^2 (= 1 / (1 + |x|)^2), in the IR's own operators
    monkeypatch.setitem(RULES, "softsign", lambda g, n, dy: [g.mul(dy, g.pow(g.sub(1.0, g.emit("abs", (n,))), 2.0))])


def _model() -> Graph:
    g = Graph("softsign_mlp")
    x, w = g.parameter("x", (64, 32)), g.parameter("w", (32, 48))
    g.output(g.emit("softsign", (g.matmul(x, w),), name="y"), "out")
    return g


FEEDS = {"x": RNG.standard_normal((64, 32)).astype(np.float32), "w": RNG.standard_normal((32, 48)).astype(np.float32)}
WANT = softsign(FEEDS["x"].astype(np.float64) @ FEEDS["w"])


def test_the_operator_is_built_verified_and_evaluated(with_softsign):
    g = _model()
    assert "%y = softsign(%0) : f32[64,48]" in str(g)
    np.testing.assert_allclose(evaluate(g, FEEDS)["out"], WANT, rtol=1e-5)
    bad = Graph("bad")
    with pytest.raises(GraphError, match=r"node %s \(softsign\): needs a float operand"):
        bad.emit("softsign", (bad.parameter("i", (4,), "i32"),), name="s")


def test_the_passes_fuse_it_and_the_template_runs_it(with_softsign, a100):
    optimised, _ = run_pipeline(_model())
    (fused,) = [n for n in optimised.nodes.values() if n.op == "fused"]
    assert fused.attrs["kind"] == "epilogue"
    assert [n.op for n in fused.attrs["body"].topo_order() if n.op != "parameter"] == ["matmul", "softsign"]
    kernels = lower(optimised, cfg=a100)
    assert [k.template for k in kernels] == ["matmul"] and "abs.f32" in kernels[0].source
    np.testing.assert_allclose(run_kernels(optimised, kernels, FEEDS, a100)["out"], WANT, rtol=1e-5, atol=1e-6)


def test_it_is_costed_tuned_and_compiled(with_softsign, a100):
    optimised, _ = run_pipeline(_model())
    (node,) = [n for n in optimised.nodes.values() if n.op == "fused"]
    tuned = Tuner(a100, AnalyticalCost(), budget=6, cache=False).tune_node(optimised, node)  # checks its winner
    (kernel,) = lower(optimised, {node.name: tuned.params}, a100)
    (default,) = lower(optimised, cfg=a100)
    assert tuned.cycles == AnalyticalCost().cost(kernel, a100).cycles <= AnalyticalCost().cost(default, a100).cycles
    report = compile_graph(_model(), a100, cost=AnalyticalCost())
    assert (len(report.optimised.kernels), len(report.baseline.kernels)) == (1, 2) and report.speedup > 1


def test_it_imports_from_and_exports_to_onnx(with_softsign):
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    from gpusim.compiler.onnx_export import to_onnx

    h, T = onnx.helper, onnx.TensorProto
    model = h.make_model(h.make_graph(
        [h.make_node("MatMul", ["x", "w"], ["xw"]), h.make_node("Softsign", ["xw"], ["out"])], "m",
        [h.make_tensor_value_info("x", T.FLOAT, [64, 32]), h.make_tensor_value_info("w", T.FLOAT, [32, 48])],
        [h.make_tensor_value_info("out", T.FLOAT, [64, 48])]), opset_imports=[h.make_opsetid("", 17)])
    graph = import_onnx(model)
    assert graph["out"].op == "softsign"
    want = ReferenceEvaluator(model).run(None, FEEDS)[0]
    np.testing.assert_allclose(evaluate(graph, FEEDS)["out"], want, rtol=1e-5, atol=1e-6)  # ONNX: f32 matmul
    exported = to_onnx(run_pipeline(graph)[0])
    assert "Softsign" in [n.op_type for n in exported.graph.node]
    np.testing.assert_allclose(ReferenceEvaluator(exported).run(None, FEEDS)[0], want, rtol=1e-5, atol=1e-6)


def test_it_is_differentiated(with_softsign):
    g = Graph("loss")
    x = g.parameter("x", (5,))
    g.output(g.reduce_sum(g.emit("softsign", (x,))), "loss")
    value = np.array([-2.0, -0.5, 0.0, 0.5, 3.0], np.float32)
    got = evaluate(grad(g, "loss", ["x"]), {"x": value})["grad_x"]
    np.testing.assert_allclose(got, 1 / (1 + np.abs(value)) ** 2, rtol=1e-6)


def test_the_tables_are_as_they_were_after_the_walkthrough():
    assert "softsign" not in OPS and "softsign" not in expr.UNARY and "Softsign" not in CONVERTERS
