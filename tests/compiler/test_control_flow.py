"""Graph-level control flow: ONNX If and Loop imported as `if`/`loop` nodes, evaluated, and run on the
functional executor (branches chosen at run time, static loops unrolled, computed-count loops as
repeated launches) against onnx.reference; the read-back cost of each decision."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import CompilerError, Graph, GraphError, evaluate, import_onnx, lower
from gpusim.compiler.control_flow import emit_if, emit_loop, unroll_loops
from gpusim.compiler.control_flow_run import run_control_flow
from gpusim.compiler.cost import AnalyticalCost
from gpusim.compiler.cost.base import launch_overhead_cycles

RNG = np.random.default_rng(0)
X, W, Y, B = (RNG.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 8), (4, 8), (8,)))


def _read_back(cfg) -> float:
    return round(cfg.pcie.latency_ns * cfg.chip.clock_mhz / 1000.0)


def _if_model(onnx):
    """out = relu(x @ w) if c else tanh(y) * 2 (the branches read x, w and y from the outer graph)."""
    h, T = onnx.helper, onnx.TensorProto
    then_g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["t0"]), h.make_node("Relu", ["t0"], ["t"])], "then",
                          [], [h.make_tensor_value_info("t", T.FLOAT, [4, 8])])
    else_g = h.make_graph([h.make_node("Tanh", ["y"], ["e0"]), h.make_node("Mul", ["e0", "two"], ["e"])], "else",
                          [], [h.make_tensor_value_info("e", T.FLOAT, [4, 8])],
                          [h.make_tensor("two", T.FLOAT, [], [2.0])])
    g = h.make_graph([h.make_node("If", ["c"], ["out"], then_branch=then_g, else_branch=else_g)], "ifm",
                     [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [4, 8]),
                      h.make_tensor_value_info("w", T.FLOAT, [8, 8]), h.make_tensor_value_info("y", T.FLOAT, [4, 8])],
                     [h.make_tensor_value_info("out", T.FLOAT, [4, 8])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _loop_model(onnx, static: bool, cond_from_data: bool = False):
    """x = x * 0.5 + b, M times (M an initializer of 3, or an input)."""
    h, T = onnx.helper, onnx.TensorProto
    nodes = [h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Mul", ["v", "half"], ["v1"]),
             h.make_node("Add", ["v1", "b"], ["v_out"])]
    if cond_from_data:  # exit once the sum is zero: decided by the data
        nodes[:1] = [h.make_node("ReduceSum", ["v"], ["s"], keepdims=0),
                     h.make_node("Cast", ["s"], ["cond_out"], to=T.BOOL)]
    body = h.make_graph(nodes, "body",
                        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
                         h.make_tensor_value_info("v", T.FLOAT, [4, 8])],
                        [h.make_tensor_value_info("cond_out", T.BOOL, []),
                         h.make_tensor_value_info("v_out", T.FLOAT, [4, 8])])
    inits = [h.make_tensor("half", T.FLOAT, [], [0.5]), h.make_tensor("t", T.BOOL, [], [True])]
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [4, 8]), h.make_tensor_value_info("b", T.FLOAT, [8])]
    if static:
        inits.append(h.make_tensor("M", T.INT64, [], [3]))
    else:
        inputs.append(h.make_tensor_value_info("M", T.INT64, []))
    g = h.make_graph([h.make_node("Loop", ["M", "t", "x"], ["out"], body=body)], "loopm", inputs,
                     [h.make_tensor_value_info("out", T.FLOAT, [4, 8])], inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("cond", [True, False])
def test_onnx_if_matches_the_reference_and_runs_the_chosen_branch(a100, cond):
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    model = _if_model(onnx)
    graph = import_onnx(model)
    assert [n.op for n in graph.nodes.values()] == ["parameter"] * 4 + ["if"]
    want = ReferenceEvaluator(model).run(None, {"c": np.array(cond), "x": X, "w": W, "y": Y})[0]
    feeds = {"c": np.int32(cond), "x": X, "w": W, "y": Y}
    np.testing.assert_allclose(evaluate(graph, feeds)["out"], want, rtol=1e-5, atol=1e-6)
    run = run_control_flow(graph, feeds, a100, AnalyticalCost())
    np.testing.assert_allclose(run.outputs["out"], want, rtol=1e-5, atol=1e-5)
    taken, other = ("then_branch", "else_branch") if cond else ("else_branch", "then_branch")
    assert [(s.kind, s.label) for s in run.steps] == [("read-back", "%out predicate"), ("branch", f"%out {taken}")]
    assert run.steps[0].cycles == _read_back(a100) == 1410  # 1,000 ns of PCIe latency at 1,410 MHz
    assert run.steps[1].kernels == 1 and run.steps[1].cycles > launch_overhead_cycles(a100)
    assert run.not_taken == {f"%out {other}": 1}


@pytest.mark.parametrize("static", [True, False])
def test_onnx_loop_matches_the_reference_unrolled_or_relaunched(a100, static):
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    model = _loop_model(onnx, static)
    graph = import_onnx(model)
    (loop,) = [n for n in graph.nodes.values() if n.op == "loop"]
    assert loop.attrs["trip_count"] == (3 if static else None)
    feeds = {"x": X, "b": B} | ({} if static else {"M": np.int32(3)})
    want = ReferenceEvaluator(model).run(None, {"x": X, "b": B} | ({} if static else {"M": np.array(3)}))[0]
    np.testing.assert_allclose(evaluate(graph, feeds)["out"], want, rtol=1e-6)
    run = run_control_flow(graph, feeds, a100, AnalyticalCost())
    np.testing.assert_allclose(run.outputs["out"], want, rtol=1e-5, atol=1e-6)
    if static:  # three copies of the body, fused into one element-wise kernel: no decision, one launch
        assert [s.kind for s in run.steps] == ["segment"] and run.launches == 1
        assert sum(n.op == "mul" for n in unroll_loops(graph).nodes.values()) == 3
    else:  # the count read back, then the body's kernel launched once per iteration
        assert [s.kind for s in run.steps] == ["read-back"] + ["iteration"] * 3 and run.launches == 3
        assert run.steps[1].cycles == run.steps[2].cycles == run.steps[3].cycles
        assert run.cycles == pytest.approx(_read_back(a100) + 3 * run.steps[1].cycles)


def test_onnx_loop_with_a_data_dependent_exit_is_refused():
    onnx = pytest.importorskip("onnx")
    message = r"onnx node 'out' \(Loop\): the body computes its exit condition from data"
    with pytest.raises(CompilerError, match=message):
        import_onnx(_loop_model(onnx, True, cond_from_data=True))


def _branch(name: str, op: str) -> Graph:
    g = Graph(name)
    x = g.parameter("x", (4, 8))
    g.output(g.emit(op, (x,)), "r")
    return g


def test_if_inside_a_loop_body_runs_nested_decisions(a100):
    """x = (relu(x) if p else neg(x)) + 1, n times, n and p read at run time."""
    body = Graph("body")
    body.parameter("i", (), "i32")
    x, p = body.parameter("x", (4, 8)), body.parameter("p", ())
    body.output(body.add(emit_if(body, p, _branch("t", "relu"), _branch("e", "neg"), [x]), 1.0), "x")
    g = Graph("nested")
    n, x0, p0 = g.parameter("n", (), "i32"), g.parameter("x0", (4, 8)), g.parameter("p", ())
    g.output(emit_loop(g, body, x0, [p0], trip_count=n), "y")
    for p in (0.0, 1.0):
        want = X.astype(np.float64)
        for _ in range(2):
            want = (np.maximum(want, 0) if p else -want) + 1
        feeds = {"n": np.int32(2), "x0": X, "p": np.float32(p)}
        np.testing.assert_allclose(evaluate(g, feeds)["y"], want, rtol=1e-6)
        run = run_control_flow(g, feeds, a100, AnalyticalCost())
        np.testing.assert_allclose(run.outputs["y"], want, rtol=1e-6)
        assert [s.kind for s in run.steps] == ["read-back", "iteration", "iteration"]
        # each iteration: the predicate read back, then the branch's kernel, then the add's
        assert run.steps[1].cycles > _read_back(a100)


def test_static_loop_of_zero_trips_is_its_input():
    body = Graph("b")
    body.parameter("i", (), "i32")
    body.output(body.exp(body.parameter("x", (3,))), "x")
    g = Graph("zero")
    g.output(emit_loop(g, body, g.parameter("x", (3,)), trip_count=0), "y")
    assert evaluate(g, {"x": [1.0, 2.0, 3.0]})["y"].tolist() == [1.0, 2.0, 3.0]
    assert evaluate(unroll_loops(g), {"x": [1.0, 2.0, 3.0]})["y"].tolist() == [1.0, 2.0, 3.0]


def test_control_flow_errors_name_the_problem():
    g = Graph("bad")
    c, x = g.parameter("c", ()), g.parameter("x", (4, 8))
    with pytest.raises(GraphError, match="the branches' outputs differ"):
        other = Graph("o")
        other.output(other.reduce_sum(other.parameter("x", (4, 8)), 1), "r")
        emit_if(g, c, _branch("t", "relu"), other, [x])
    with pytest.raises(GraphError, match=r"then_branch's parameters %x: f32\[4,8\] do not match the inputs \(none\)"):
        emit_if(g, c, _branch("t", "relu"), _branch("e", "neg"))
    y = emit_if(g, c, _branch("t", "relu"), _branch("e", "neg"), [x])
    g.output(y, "y")
    with pytest.raises(CompilerError, match=r"node %\d+ \(if\): control flow is not one kernel"):
        lower(g)


def test_onnx_if_inside_a_loop_body_matches_the_reference(a100):
    """y = x + n relu(x @ w) if p else x + n tanh(x): the If reads x and w from two scopes out."""
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    h, T = onnx.helper, onnx.TensorProto

    def info(name, elem=T.FLOAT, shape=(4, 8)):
        return h.make_tensor_value_info(name, elem, list(shape))

    then_g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["t0"]), h.make_node("Relu", ["t0"], ["t"])], "then", [],
                          [info("t")])
    else_g = h.make_graph([h.make_node("Tanh", ["x"], ["e"])], "else", [], [info("e")])
    body = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"]),
                         h.make_node("If", ["p"], ["r"], then_branch=then_g, else_branch=else_g),
                         h.make_node("Add", ["r", "v"], ["v_out"])], "body",
                        [info("i", T.INT64, ()), info("c_in", T.BOOL, ()), info("v")],
                        [info("c_out", T.BOOL, ()), info("v_out")])
    g = h.make_graph([h.make_node("Loop", ["n", "go", "x"], ["y"], body=body)], "cf",
                     [info("n", T.INT64, ()), info("p", T.BOOL, ()), info("x"), info("w", shape=(8, 8))], [info("y")],
                     [h.make_tensor("go", T.BOOL, [], [True])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    graph = import_onnx(model)
    for p in (True, False):
        want = ReferenceEvaluator(model).run(None, {"n": np.array(3), "p": np.array(p), "x": X, "w": W})[0]
        feeds = {"n": np.int32(3), "p": np.int32(p), "x": X, "w": W}
        np.testing.assert_allclose(evaluate(graph, feeds)["y"], want, rtol=1e-5, atol=1e-5)
        run = run_control_flow(graph, feeds, a100, AnalyticalCost())
        np.testing.assert_allclose(run.outputs["y"], want, rtol=1e-5, atol=1e-5)
        assert [s.label for s in run.steps] == ["%y trip count"] + [f"%y iteration {i} (+1 read-back)"
                                                                   for i in range(3)]
        other = "else_branch" if p else "then_branch"
        assert run.not_taken == {f"%y iteration {i} %r {other}": 1 for i in range(3)}


def test_the_operator_table_gets_control_flow_rules_from_the_layers_that_own_them():
    """ops.py declares if and loop and imports no layer above it: their type rule, numpy semantics and host
    run are registered by control_flow.py, evaluate.py and control_flow_run.py (docs/architecture.md)."""
    from gpusim.compiler.ops import OPS, register

    for op in ("if", "loop"):
        d = OPS[op]
        assert [f.__module__ for f in (d.infer, d.compute, d.run_on_host)] == [
            "gpusim.compiler.control_flow", "gpusim.compiler.evaluate", "gpusim.compiler.control_flow_run"]
    assert [op for op, d in OPS.items() if d.run_on_host is not None] == ["if", "loop"]
    with pytest.raises(GraphError, match="unknown operator 'switch': declare it in OPS before registering its rules"):
        register("switch", infer=OPS["if"].infer)
