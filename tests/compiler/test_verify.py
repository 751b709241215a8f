"""The verifier: each kind of malformed graph gives a GraphError naming the node and its operator."""

from __future__ import annotations

import re

import pytest

from gpusim.compiler import Graph, GraphError, Node, TensorType, verify

F4 = TensorType((4,))


def param(name: str, t: TensorType = F4) -> Node:
    return Node(name, "parameter", (), t)


def check(nodes, outputs, message):
    g = Graph.from_nodes(nodes, outputs, name="bad")
    with pytest.raises(GraphError, match="^" + re.escape(message) + "$"):
        verify(g)


def test_a_good_graph_verifies():
    verify(Graph.from_nodes([param("x"), Node("y", "relu", ("x",), F4)], ["y"]))


def test_cycle():
    check([param("x"), Node("a", "add", ("x", "c"), F4), Node("b", "relu", ("a",), F4), Node("c", "exp", ("b",), F4)],
          ["c"], "node %a (add): cycle %a -> %b -> %c -> %a")


def test_self_loop():
    check([Node("a", "relu", ("a",), F4)], ["a"], "node %a (relu): cycle %a -> %a")


def test_dangling_input():
    check([param("x"), Node("y", "add", ("x", "w"), F4)], ["y"], "node %y (add): input %w is not a node of the graph")


def test_unknown_operator():
    from gpusim.compiler.ops import OPS
    check([param("x"), Node("y", "swish", ("x",), F4)], ["y"],
          f"node %y (swish): unknown operator 'swish' (known: {', '.join(OPS)})")


def test_shape_mismatch():
    check([param("x"), param("v", TensorType((3,))), Node("y", "add", ("x", "v"), F4)], ["y"],
          "node %y (add): shapes f32[4] and f32[3] do not broadcast")


def test_declared_type_differs_from_inferred():
    check([param("x"), Node("y", "relu", ("x",), TensorType((4,), "f16"))], ["y"],
          "node %y (relu): declared type f16[4], but its inputs give f32[4]")


def test_wrong_attributes():
    check([param("x"), Node("y", "softmax", ("x",), F4, {"axes": (0,)})], ["y"],
          "node %y (softmax): missing attribute(s) axis; unknown attribute(s) axes")


def test_outputs():
    check([param("x")], [], "graph 'bad' has no outputs")
    check([param("x")], {"y": "z"}, "node %z: output 'y' names no node of the graph")


def test_duplicate_names():
    with pytest.raises(GraphError, match=r"^node %x \(relu\): duplicate node name$"):
        Graph.from_nodes([param("x"), Node("x", "relu", ("x",), F4)], ["x"])


def test_fused_body_is_verified():
    body = Graph.from_nodes([param("p"), Node("q", "exp", ("p",), TensorType((5,)))], ["q"])
    check([param("x"), Node("y", "fused", ("x",), F4, {"kind": "elementwise", "body": body})], ["y"],
          "node %y (fused): in its body: node %q (exp): declared type f32[5], but its inputs give f32[4]")


def test_fused_inputs_must_match_the_body():
    body = Graph.from_nodes([param("p"), Node("q", "exp", ("p",), F4)], ["q"])
    check([param("x", TensorType((2, 2))), Node("y", "fused", ("x",), F4, {"kind": "elementwise", "body": body})],
          ["y"], "node %y (fused): inputs f32[2,2] do not match the body's parameters %p: f32[4]")
    check([param("x"), Node("y", "fused", ("x",), F4, {"kind": "sideways", "body": body})], ["y"],
          "node %y (fused): fusion kind is one of elementwise, epilogue, reduction, not 'sideways'")
