"""Constant folding, as pairs: the graph before, the graph expected after."""

from __future__ import annotations

import numpy as np

from gpusim.compiler import Graph, fold_constants

from .helpers import assert_pass


def test_folds_a_constant_subgraph_and_keeps_the_rest():
    before = Graph("f")
    x = before.parameter("x", (2, 3))
    w = before.transpose(before.constant(np.arange(6.0).reshape(3, 2)))  # f32[2,3], constant only
    s = before.exp(before.mul(w, 0.5))
    before.output(before.add(x, s), "y")

    expected = Graph("f")  # every folded node is a constant; those no longer read are left for DCE
    x = expected.parameter("x", (2, 3))
    w = np.arange(6.0).reshape(3, 2)
    for value in (w, w.T, 0.5, w.T * 0.5):
        expected.constant(value)
    expected.output(expected.add(x, expected.constant(np.exp(w.T * 0.5))), "y")

    changes = assert_pass(fold_constants, before, expected)
    assert [c.kind for c in changes] == ["fold"] * 3
    assert changes[0].description == "%1 = transpose(%0) {perm=[1,0]} : f32[2,3] -> constant"


def test_folded_node_keeps_its_name_and_output():
    before = Graph("f")
    before.parameter("x", (1,))
    before.output(before.add(before.constant(1.0), before.constant(2.0), name="three"), "y")
    after, _ = fold_constants(before)
    assert after.outputs == {"y": "three"}
    assert after["three"].op == "constant" and after["three"].attrs["value"] == 3.0


def test_nothing_to_fold():
    g = Graph("f")
    g.output(g.relu(g.parameter("x", (2,))), "y")
    after, changes = fold_constants(g)
    assert changes == [] and str(after) == str(g)
