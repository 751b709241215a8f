"""The operators added for CNNs and transformers, at the IR level: each built with the Graph builder,
lowered (fused and not) and run on the functional executor against the numpy evaluator; reductions and
(log-)softmax over every axis; remap as slice, pad and tile; concat; batched matmul with batched and
shared epilogue operands; type inference errors naming what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import Graph, GraphError, evaluate, run_pipeline
from gpusim.compiler.lower import lower, run_kernels

from .helpers import random_inputs


def check(g: Graph, fuse: bool = True):
    optimised, _ = run_pipeline(g, ("fold", "simplify", "cse", "dce") + ("fuse",) * fuse)
    inputs = random_inputs(g)
    got, want = run_kernels(optimised, lower(optimised), inputs), evaluate(g, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
    return optimised


UNARY = [("sigmoid", {}), ("erf", {}), ("neg", {}), ("abs", {}), ("sign", {}), ("softplus", {}),
         ("clip", {"min": -0.3, "max": 0.5}), ("leaky_relu", {"alpha": 0.1}), ("elu", {"alpha": 1.0}),
         ("selu", {"alpha": 1.67, "gamma": 1.05}), ("cast", {"to": "f16"})]


@pytest.mark.parametrize("op, attrs", UNARY, ids=[u[0] for u in UNARY])
def test_elementwise_operator_fused_after_an_add(op, attrs):
    g = Graph(op)
    x, b = g.parameter("x", (5, 7)), g.parameter("b", (7,))
    g.output(g.emit(op, (g.add(x, b),), attrs), "y")
    optimised = check(g)
    assert [n.op for n in optimised.nodes.values() if n.op not in ("parameter",)] == ["fused"]


def test_sqrt_log_maximum_minimum_where():
    g = Graph("mixed")
    x, b = g.parameter("x", (5, 7)), g.parameter("b", (7,))
    positive = g.add(g.emit("abs", (x,)), 0.5)
    g.output(g.emit("log", (g.emit("sqrt", (positive,)),)), "log")
    g.output(g.emit("maximum", (x, b)), "max")
    g.output(g.emit("minimum", (x, b)), "min")
    g.output(g.emit("where", (x, b, g.emit("neg", (b,)))), "where")
    check(g)
    check(g, fuse=False)


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (1, 2), (0, 1, 2)])
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max"])
def test_reduction_over_any_axes_with_a_prologue(op, axes):
    g = Graph(op)
    g.output(g.emit(op, (g.emit("abs", (g.parameter("x", (3, 4, 5)),)),), {"axes": axes, "keepdims": True}), "y")
    check(g)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_along_any_axis(op, axis):
    g = Graph(op)
    g.output(g.emit(op, (g.parameter("x", (3, 4, 5)),), {"axis": axis}), "y")
    check(g)


REMAPS = {
    "slice-reversed": ((6, 8), {"shape": (3, 4), "coef": ((2, 0), (0, -1)), "offset": (1, 7), "wrap": (False, False),
                               "fill": 0.0}),
    "pad": ((6, 8), {"shape": (8, 11), "coef": ((1, 0), (0, 1)), "offset": (-1, -2), "wrap": (False, False),
                     "fill": -1.5}),
    "tile": ((3, 4), {"shape": (6, 12), "coef": ((1, 0), (0, 1)), "offset": (0, 0), "wrap": (True, True),
                      "fill": 0.0}),
    "im2col": ((1, 2, 5, 5), {"shape": (1, 3, 3, 2, 2, 2),
                              "coef": ((1, 0, 0, 0, 0, 0), (0, 0, 0, 1, 0, 0), (0, 2, 0, 0, 1, 0), (0, 0, 2, 0, 0, 1)),
                              "offset": (0, 0, -1, -1), "wrap": (False,) * 4, "fill": 0.0}),
}


@pytest.mark.parametrize("case", list(REMAPS))
def test_remap(case):
    shape, attrs = REMAPS[case]
    g = Graph(case)
    g.output(g.emit("remap", (g.parameter("x", shape),), attrs), "y")
    check(g)


def test_remap_values_by_hand():
    g = Graph("r")
    x = g.parameter("x", (2, 3))
    g.output(g.emit("remap", (x,), {"shape": (2, 5), "coef": ((1, 0), (0, 1)), "offset": (0, -1),
                                     "wrap": (False, False), "fill": 9.0}), "y")
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(evaluate(g, {"x": value})["y"], [[9, 0, 1, 2, 9], [9, 3, 4, 5, 9]])


def test_concat():
    g = Graph("c")
    x, z = g.parameter("x", (3, 4)), g.parameter("z", (3, 2))
    g.output(g.emit("concat", (x, z, x), {"axis": 1}), "y")
    check(g)


def test_batched_matmul_with_batched_and_shared_epilogue_operands():
    g = Graph("bmm")
    a, b = g.parameter("a", (2, 3, 17, 9)), g.parameter("b", (2, 3, 9, 13))
    bias, per_batch = g.parameter("bias", (13,)), g.parameter("pb", (2, 3, 1, 13))
    g.output(g.relu(g.add(g.add(g.matmul(a, b), bias), per_batch)), "y")
    kernels = lower(check(g))
    assert kernels[0].launch.grid == (1, 2, 6)
    g = Graph("shared-b")
    g.output(g.matmul(g.parameter("a", (4, 17, 9)), g.parameter("b", (9, 13))), "y")
    check(g, fuse=False)


@pytest.mark.parametrize("op, inputs, attrs, message", [
    ("concat", [(2, 3), (2, 3, 1)], {"axis": 1}, "operands f32[2,3] and f32[2,3,1] differ off axis 1"),
    ("where", [(2,), (3,), (2,)], {}, "do not broadcast"),
    ("remap", [(2, 3)], {"shape": (2,), "coef": ((1,),), "offset": (0, 0), "wrap": (False, False), "fill": 0.0},
     "coef has one row of 1 coefficients per input axis (2)"),
    ("clip", [(2,)], {"min": "a", "max": 1.0}, "min is a number, not 'a'"),
])
def test_type_inference_errors(op, inputs, attrs, message):
    g = Graph("bad")
    params = [g.parameter(f"p{i}", s) for i, s in enumerate(inputs)]
    with pytest.raises(GraphError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        g.emit(op, params, attrs)
