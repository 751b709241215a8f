"""Common sub-expression and dead-code elimination, as pairs: the graph before, the graph expected after."""

from __future__ import annotations

import numpy as np

from gpusim.compiler import Graph, eliminate_common_subexpressions, eliminate_dead_code

from .helpers import assert_pass


def test_cse_merges_equal_nodes_commutative_inputs_and_equal_constants():
    before = Graph("c")
    x, w = before.parameter("x", (2, 3)), before.parameter("w", (3,))
    a = before.add(before.exp(x), w)
    b = before.add(w, before.exp(x))  # the same, operands swapped
    s = before.sub(before.mul(a, 2.0), before.mul(b, 2.0))
    before.output(s, "y")
    before.output(before.softmax(b, 0), "z")

    expected = Graph("c")
    x, w = expected.parameter("x", (2, 3)), expected.parameter("w", (3,))
    a = expected.add(expected.exp(x), w)
    two = expected.constant(2.0)
    m = expected.mul(a, two)
    expected.output(expected.sub(m, m), "y")
    expected.output(expected.softmax(a, 0), "z")

    changes = assert_pass(eliminate_common_subexpressions, before, expected)
    assert [c.kind for c in changes] == ["cse"] * 4
    assert changes[0].description == "%2 = exp(%x) : f32[2,3] -> %0"


def test_cse_keeps_what_differs():
    g = Graph("c")
    x = g.parameter("x", (2, 3))
    y = g.parameter("y", (2, 3))
    for node in (g.sub(x, y), g.sub(y, x), g.softmax(x, 0), g.softmax(x, 1), g.constant(np.float16(1.0)),
                 g.constant(1.0), g.reduce_sum(x, 0), g.reduce_sum(x, 0, keepdims=True)):
        g.output(node)
    after, changes = eliminate_common_subexpressions(g)
    assert changes == [] and str(after) == str(g)


def test_dce_removes_unused_nodes_but_not_parameters():
    before = Graph("d")
    x, _ = before.parameter("x", (4,)), before.parameter("unused", (4,))
    before.exp(before.tanh(x))
    before.output(before.relu(x), "y")

    expected = Graph("d")
    x, _ = expected.parameter("x", (4,)), expected.parameter("unused", (4,))
    expected.output(expected.relu(x), "y")

    changes = assert_pass(eliminate_dead_code, before, expected)
    assert [c.description for c in changes] == ["%0 = tanh(%x) : f32[4] (unused)", "%1 = exp(%0) : f32[4] (unused)"]
