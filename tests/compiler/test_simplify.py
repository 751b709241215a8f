"""Algebraic simplification, rule by rule, as pairs: the graph before, the graph expected after."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import Graph, simplify

from .helpers import assert_pass


def pair(build_before, build_expected, shape=(2, 3)):
    """Graphs over a parameter x of `shape`, each with one output y built by the function given."""
    graphs = []
    for build in (build_before, build_expected):
        g = Graph("s")
        x = g.parameter("x", shape)
        g.output(build(g, x), "y")
        graphs.append(g)
    return graphs


def keep_unused(*builds):
    """The expected graph keeps nodes the rule left unused (DCE removes them), built by `builds`."""
    def build(g, x):
        for b in builds:
            b(g, x)
        return x
    return build


@pytest.mark.parametrize("kind, before, expected", [
    ("mul-one", lambda g, x: g.mul(x, 1), keep_unused(lambda g, x: g.constant(1.0))),
    ("mul-one", lambda g, x: g.mul(g.constant(np.ones(3)), x), keep_unused(lambda g, x: g.constant(np.ones(3)))),
    ("add-zero", lambda g, x: g.add(0, x), keep_unused(lambda g, x: g.constant(0.0))),
    ("sub-zero", lambda g, x: g.sub(x, 0), keep_unused(lambda g, x: g.constant(0.0))),
    ("div-one", lambda g, x: g.div(x, 1), keep_unused(lambda g, x: g.constant(1.0))),
    ("mul-zero", lambda g, x: g.mul(g.exp(x), 0),
     lambda g, x: g.exp(x) and g.constant(0.0) and g.constant(np.zeros((2, 3)))),
    ("pow", lambda g, x: g.mul(g.mul(x, x), x), lambda g, x: g.mul(x, x) and g.pow(x, 3)),
    ("pow", lambda g, x: g.mul(x, g.mul(x, x)), lambda g, x: g.mul(x, x) and g.pow(x, 3)),
    ("pow", lambda g, x: g.mul(g.pow(x, 2.5), x), lambda g, x: g.pow(x, 2.5) and g.pow(x, 3.5)),
    ("transpose-transpose", lambda g, x: g.transpose(g.transpose(x)), keep_unused(lambda g, x: g.transpose(x))),
    ("transpose-identity", lambda g, x: g.transpose(x, (0, 1)), keep_unused()),
    ("reshape-reshape", lambda g, x: g.reshape(g.reshape(x, (6,)), (3, 2)),
     lambda g, x: g.reshape(x, (6,)) and g.reshape(x, (3, 2))),
    ("reshape-reshape", lambda g, x: g.reshape(g.reshape(x, (6,)), (2, 3)),
     keep_unused(lambda g, x: g.reshape(x, (6,)))),
    ("reshape-identity", lambda g, x: g.reshape(x, (2, 3)), keep_unused()),
])
def test_rule(kind, before, expected):
    changes = assert_pass(simplify, *pair(before, expected))
    assert [c.kind for c in changes] == [kind]


def test_transposes_compose_to_one():
    before, expected = pair(lambda g, x: g.transpose(g.transpose(x, (1, 2, 0)), (1, 0, 2)),
                            lambda g, x: g.transpose(x, (1, 2, 0)) and g.transpose(x, (2, 1, 0)), shape=(2, 3, 4))
    changes = assert_pass(simplify, before, expected)
    assert changes[0].description == ("%1 = transpose(%0) {perm=[1,0,2]} : f32[4,3,2] -> "
                                      "%1 = transpose(%x) {perm=[2,1,0]} : f32[4,3,2]")


@pytest.mark.parametrize("build", [
    lambda g, x: g.mul(x, x),  # x*x stays: a multiply is cheaper than pow
    lambda g, x: g.mul(x, g.constant(np.ones((4, 2, 3)))),  # the 1s broadcast x to a larger shape
    lambda g, x: g.mul(x, g.constant([1.0, 2.0, 1.0])),  # not all ones
    lambda g, x: g.sub(0, x),
    lambda g, x: g.div(1, x),
    lambda g, x: g.transpose(x),
])
def test_no_rule_applies(build):
    before, _ = pair(build, build)
    after, changes = simplify(before)
    assert changes == [] and str(after) == str(before)


def test_rules_cascade_in_one_pass():
    before, expected = pair(lambda g, x: g.add(g.mul(g.mul(x, 1), 1), 0),
                            keep_unused(lambda g, x: g.constant(1.0), lambda g, x: g.constant(1.0),
                                        lambda g, x: g.constant(0.0)))
    changes = assert_pass(simplify, before, expected)
    assert [c.kind for c in changes] == ["mul-one", "mul-one", "add-zero"]
    assert changes[0].description == "%1 = mul(%x, %0) : f32[2,3] -> %x"
