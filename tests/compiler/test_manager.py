"""The pass manager: the default pipeline end to end, its report, custom pipelines and errors."""

from __future__ import annotations

import pytest

from gpusim.compiler import CompilerError, Graph, Node, TensorType, run_pipeline
from gpusim.compiler.passes import manager

from .helpers import assert_same_values


def demo() -> Graph:
    """A graph with work for every pass."""
    g = Graph("demo")
    x, w = g.parameter("x", (4, 8)), g.parameter("w", (8, 8))
    c = g.mul(g.constant(2.0), g.constant(3.0))  # fold
    a = g.exp(g.mul(x, 1.0))  # simplify, then equal to b: cse
    b = g.exp(x)
    g.tanh(x)  # dead
    h = g.matmul(g.add(a, b), w)
    g.output(g.relu(g.add(h, c)), "y")  # with h: an epilogue
    return g


REPORT = """\
pipeline: fold -> simplify -> cse -> dce -> fuse; nodes 14 -> 5
fold      nodes  14 -> 14  fold 1
    %2 = mul(%0, %1) : f32[] -> constant
simplify  nodes  14 -> 13  mul-one 1
    %4 = mul(%x, %3) : f32[4,8] -> %x
cse       nodes  13 -> 12  cse 1
    %6 = exp(%x) : f32[4,8] -> %5
dce       nodes  12 -> 8   dce 4
    %0 = constant(2.0) : f32[] (unused)
    %1 = constant(3.0) : f32[] (unused)
    %3 = constant(1.0) : f32[] (unused)
    %7 = tanh(%x) : f32[4,8] (unused)
fuse      nodes   8 -> 5   fuse-elementwise 1, fuse-epilogue 1
    %8 = fused.elementwise: exp, add
    %11 = fused.epilogue: matmul, add, relu"""

AFTER = """\
graph demo
  %x = parameter() : f32[4,8]
  %w = parameter() : f32[8,8]
  %2 = constant(6.0) : f32[]
  %8 = fused.elementwise(%x) : f32[4,8] {
      %5 = exp(%x) : f32[4,8]
      %8 = add(%5, %5) : f32[4,8]
  }
  %11 = fused.epilogue(%8, %w, %2) : f32[4,8] {
      %9 = matmul(%8, %w) : f32[4,8]
      %10 = add(%9, %2) : f32[4,8]
      %11 = relu(%10) : f32[4,8]
  }
  output y = %11"""


def test_default_pipeline_and_report():
    before = demo()
    after, report = run_pipeline(before)
    assert str(after) == AFTER
    assert str(report) == REPORT
    assert (report.nodes_before, report.nodes_after) == (14, 5)
    assert [(p.name, p.counts) for p in report.passes] == [
        ("fold", {"fold": 1}), ("simplify", {"mul-one": 1}), ("cse", {"cse": 1}), ("dce", {"dce": 4}),
        ("fuse", {"fuse-elementwise": 1, "fuse-epilogue": 1})]
    assert_same_values(before, after)


def test_custom_pipeline_and_should_fuse():
    after, report = run_pipeline(demo(), ["dce", "fuse"], should_fuse=lambda c: False)
    assert [p.name for p in report.passes] == ["dce", "fuse"]
    assert report.passes[1].changes == () and not any(n.op == "fused" for n in after.nodes.values())


def test_unknown_pass():
    with pytest.raises(CompilerError, match=r"^unknown pass\(es\) inline; the passes are fold, simplify, cse, dce, "
                                            r"fuse$"):
        run_pipeline(demo(), ["fold", "inline"])


def test_a_pass_that_breaks_the_graph_is_caught(monkeypatch):
    def broken(graph):
        bad = Graph.from_nodes([Node("y", "relu", ("gone",), TensorType((4,)))], ["y"])
        return bad, []

    monkeypatch.setitem(manager.PASSES, "broken", broken)
    with pytest.raises(CompilerError, match=r"^pass 'broken' produced an invalid graph: node %y \(relu\): input "
                                            r"%gone is not a node of the graph$"):
        run_pipeline(demo(), ["fold", "broken"])
