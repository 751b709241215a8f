"""The pattern-rewrite engine (matching: captures, commutativity, constants, predicates) and the rules
written with it beyond the original simplifications (GELU from erf, decomposed LayerNorm, its scale and
shift), each as a pair: the graph before, the graph expected after (dead nodes removed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpusim.compiler import Graph, eliminate_dead_code, simplify
from gpusim.compiler.passes.pattern import C, P, PatternMatcher, Rule, V, match

from .helpers import assert_pass


def simplified(graph):
    """simplify, then dead-code elimination; the changes are simplify's."""
    after, changes = simplify(graph)
    return eliminate_dead_code(after)[0], changes


def pair(before, expected, shape=(4, 8)):
    graphs = []
    for build in (before, expected):
        g = Graph("p")
        x = g.parameter("x", shape)
        g.output(build(g, x), "y")
        graphs.append(g)
    return graphs


def test_a_name_captured_twice_must_be_the_same_node():
    g = Graph("m")
    x, z = g.parameter("x", (2,)), g.parameter("z", (2,))
    same, other = g.mul(x, x), g.mul(x, z)
    pattern = P("mul", V("a"), V("a"))
    assert match(g, same.name, pattern) == {"a": "x"}
    assert match(g, other.name, pattern) is None


def test_commutative_operators_match_either_order_and_constants_within_tolerance():
    g = Graph("m")
    x = g.parameter("x", (2,))
    node = g.add(g.constant(1.0004), g.exp(x))
    assert match(g, node.name, P("add", P("exp", V("x")), C(1.0))) == {"x": "x"}
    assert match(g, node.name, P("add", P("exp", V("x")), C(1.01))) is None
    assert match(g, g.sub(g.constant(1.0), x).name, P("sub", V("x"), C(1.0))) is None  # sub is not commutative


def test_a_rule_may_decline_and_the_next_applies():
    g = Graph("m")
    x = g.parameter("x", (2,))
    g.output(g.relu(x), "y")
    calls = []
    rules = [Rule("never", P("relu", V("x")), lambda new, node, m: calls.append(1)),
             Rule("tanh", P("relu", V("x")), lambda new, node, m: new.tanh(m["x"], name=node.name).name)]
    after, changes = PatternMatcher(rules)(g)
    assert calls == [1] and [c.kind for c in changes] == ["tanh"]
    assert after[after.outputs["y"]].op == "tanh"


def _erf_gelu_pytorch(g, x):
    return g.mul(g.mul(x, g.add(g.emit("erf", (g.div(x, math.sqrt(2)),)), 1.0)), 0.5)


def _erf_gelu_half_first(g, x):
    return g.mul(g.mul(0.5, x), g.add(1.0, g.emit("erf", (g.mul(x, 1 / math.sqrt(2)),))))


@pytest.mark.parametrize("before", [_erf_gelu_pytorch, _erf_gelu_half_first], ids=["pytorch", "half-first"])
def test_erf_gelu_becomes_gelu(before):
    changes = assert_pass(simplified, *pair(before, lambda g, x: g.gelu(x)))
    assert [c.kind for c in changes] == ["gelu-erf"]


def test_gelu_with_another_constant_is_left():
    before, _ = pair(lambda g, x: g.mul(g.mul(x, g.add(g.emit("erf", (g.div(x, 1.5),)), 1.0)), 0.5),
                     lambda g, x: x)
    assert simplify(before)[1] == []


def _layernorm_decomposed(square, eps=1e-5, axes=(1,)):
    def build(g, x):
        d = g.sub(x, g.reduce_mean(x, axes, keepdims=True))
        sq = g.pow(d, 2.0) if square == "pow" else g.mul(d, d)
        return g.div(d, g.emit("sqrt", (g.add(g.reduce_mean(sq, axes, keepdims=True), eps),)))
    return build


@pytest.mark.parametrize("square", ["pow", "mul"])
def test_decomposed_layernorm_becomes_layernorm(square):
    changes = assert_pass(simplified, *pair(_layernorm_decomposed(square), lambda g, x: g.layernorm(x, eps=1e-5)))
    assert [c.kind for c in changes] == ["layernorm"]


def test_layernorm_over_two_trailing_axes_keeps_its_axis():
    before, expected = pair(_layernorm_decomposed("pow", 1e-3, (1, 2)), lambda g, x: g.layernorm(x, axis=1, eps=1e-3),
                            shape=(2, 3, 4))
    assert [c.kind for c in assert_pass(simplified, before, expected)] == ["layernorm"]


def test_layernorm_over_a_leading_axis_is_left():
    before, _ = pair(_layernorm_decomposed("pow", axes=(0,)), lambda g, x: x)
    assert [c.kind for c in simplify(before)[1]] == []


def test_scale_and_shift_join_the_layernorm():
    gamma, beta = np.linspace(0.5, 1.5, 8), np.linspace(-1, 1, 8)

    def before(g, x):
        return g.add(g.mul(g.layernorm(x), g.constant(gamma)), g.constant(beta))

    def expected(g, x):
        return g.layernorm(x, g.constant(gamma), g.constant(beta))

    changes = assert_pass(simplified, *pair(before, expected))
    assert [c.kind for c in changes] == ["layernorm-scale", "layernorm-shift"]


def test_a_scale_over_other_axes_stays_a_multiply():
    before, _ = pair(lambda g, x: g.mul(g.layernorm(x), g.constant(np.ones((4, 1)) * 2)), lambda g, x: x)
    assert simplify(before)[1] == []
