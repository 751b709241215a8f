"""Reverse-mode autodiff: every gradient rule against central finite differences in float64, whole
models' gradients likewise, and the operators without a rule as the docs list them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gpusim.compiler import CompilerError, Graph, evaluate, models, verify
from gpusim.compiler.autodiff import RULES, grad, mse_loss, ops_without_rule, softmax_cross_entropy
from gpusim.compiler.evaluate import evaluate_exact

DOCS = Path(__file__).resolve().parents[2] / "docs" / "compiler.md"


def _weighted(g: Graph, y) -> None:
    """loss = sum(y * r) for a fixed random r, so that every output element has its own weight."""
    r = np.random.default_rng(7).uniform(0.5, 1.5, g[y.name].shape)
    g.output(g.reduce_sum(g.mul(y, g.constant(r))), "loss")


def check_gradients(g: Graph, inputs: dict[str, np.ndarray], eps: float = 1e-6, rtol: float = 1e-5,
                    atol: float = 1e-7) -> None:
    """grad(g, 'loss', every float parameter) equals central differences of the exact (float64) loss."""
    wrt = [p.name for p in g.parameters() if p.dtype != "i32"]
    backward = grad(g, "loss", wrt)
    verify(backward)
    got = evaluate_exact(backward, inputs)
    for w in wrt:
        numeric = np.zeros(inputs[w].shape)
        for idx in np.ndindex(inputs[w].shape):
            values = []
            for step in (eps, -eps):
                shifted = {k: v.copy() for k, v in inputs.items()}
                shifted[w][idx] += step
                values.append(float(evaluate_exact(g, shifted)["loss"]))
            numeric[idx] = (values[0] - values[1]) / (2 * eps)
        np.testing.assert_allclose(got[f"grad_{w}"], numeric, rtol=rtol, atol=atol, err_msg=w)


def _rand(shape, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def _distinct(shape, seed=0):
    """Values at least 0.05 apart (no ties for max, no kinks of relu/abs/clip near a sample)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.1 - 0.05 * n + 0.025).reshape(shape) / max(1, n / 20)


def _unary(op, attrs=None, lo=-1.0, hi=1.0, distinct=False):
    def build():
        g = Graph(op)
        x = g.parameter("x", (3, 4))
        _weighted(g, g.emit(op, (x,), attrs or {}))
        return g, {"x": _distinct((3, 4)) if distinct else _rand((3, 4), lo, hi)}
    return build


def _binary(op, sa, sb, lo_b=-1.0, hi_b=1.0, lo_a=-1.0):
    def build():
        g = Graph(op)
        a, b = g.parameter("a", sa), g.parameter("b", sb)
        _weighted(g, g.emit(op, (a, b)))
        return g, {"a": _rand(sa, lo_a, 1.0, 1), "b": _rand(sb, lo_b, hi_b, 2)}
    return build


def _single(name, shapes, make, inputs=None):
    def build():
        g = Graph(name)
        params = [g.parameter(f"p{i}", s) for i, s in enumerate(shapes)]
        _weighted(g, make(g, *params))
        vals = inputs() if inputs else {f"p{i}": _rand(s, seed=i) for i, s in enumerate(shapes)}
        return g, vals
    return build


def _remap_pad(g, x):  # (3, 4) -> (4, 6): one row and column of zeros before, one column after
    return g.emit("remap", (x,), {"shape": (4, 6), "coef": ((1, 0), (0, 1)), "offset": (-1, -1),
                                  "wrap": (False, False), "fill": 0.0})


def _remap_tile(g, x):  # (3, 4) -> (6, 4): rows read twice (wrap), so the gradient adds both reads
    return g.emit("remap", (x,), {"shape": (6, 4), "coef": ((1, 0), (0, 1)), "offset": (0, 0),
                                  "wrap": (True, False), "fill": 0.0})


def _where(g, a, b):
    cond = g.constant(np.array([[1.0, 0.0, 1.0, 0.0]] * 3))
    return g.emit("where", (cond, a, b))


def _mse(g, p, t):
    return mse_loss(g, p, t)


def _xent(g, logits):
    labels = g.constant(np.eye(4)[[0, 3, 1]])
    return softmax_cross_entropy(g, logits, labels)


def conv_attrs(rank: int, **attrs) -> dict:
    """A conv node's attributes: stride 1, dilation 1, no padding, one group, unless given."""
    return {"strides": (1,) * rank, "dilations": (1,) * rank, "pads": (0,) * 2 * rank, "group": 1,
            "input_dilation": (1,) * rank, **attrs}


def unread(x, w, attrs) -> list[int]:
    """Per spatial axis, the padded input left after the last window (the dx rule's output padding)."""
    r = len(x) - 2
    return [(attrs["input_dilation"][a] * (x[2 + a] - 1) + attrs["pads"][a] + attrs["pads"][r + a]
             - attrs["dilations"][a] * (w[2 + a] - 1)) % attrs["strides"][a] for a in range(r)]


# x shape, w shape, attributes: strides 1 and 2 (3 along an axis), padding (negative: cropped), dilation 2,
# 1, 2 and depthwise groups, 1-D and 2-D, input dilation (a transposed convolution), sizes that leave part of
# the padded input unread (test_conv_grid_leaves_remainders)
CONV_GRID = {
    "plain": ((2, 3, 5, 4), (4, 3, 3, 2), {}),
    "stride2-pad": ((2, 3, 7, 6), (4, 3, 3, 2), {"strides": (2, 2), "pads": (1, 0, 0, 1)}),
    "dilation2": ((1, 2, 7, 8), (3, 2, 2, 3), {"dilations": (2, 2), "pads": (1, 1, 0, 2)}),
    "dilation2-stride2": ((1, 2, 9, 8), (2, 2, 3, 2), {"dilations": (2, 2), "strides": (2, 2), "pads": (1, 0, 0, 0)}),
    "groups2": ((2, 4, 6, 6), (6, 2, 3, 3), {"group": 2, "strides": (2, 1), "pads": (1, 1, 1, 1)}),
    "depthwise": ((1, 3, 6, 7), (3, 1, 3, 3), {"group": 3, "strides": (2, 2), "pads": (1, 1, 1, 1)}),
    "depthwise-multiplier": ((1, 2, 5, 5), (4, 1, 2, 2), {"group": 2, "dilations": (2, 1)}),
    "crop": ((1, 2, 6, 6), (3, 2, 3, 3), {"pads": (-1, 1, 1, -1)}),
    "pointwise": ((2, 4, 3, 3), (5, 4, 1, 1), {}),
    "1d": ((2, 3, 9), (2, 3, 3), {"strides": (2,), "pads": (1, 1)}),
    "1d-stride3-dilation2": ((1, 2, 11), (3, 2, 2), {"strides": (3,), "dilations": (2,)}),
    "1d-transposed": ((2, 3, 4), (2, 3, 3), {"input_dilation": (2,), "strides": (2,), "pads": (1, 2)}),
    "transposed-groups": ((1, 4, 3, 3), (4, 2, 2, 2), {"input_dilation": (2, 2), "pads": (1, 0, 1, 1), "group": 2}),
}


def _conv_case(x, w, attrs):
    return _single("conv", [x, w], lambda g, xs, ws: g.emit("conv", (xs, ws), conv_attrs(len(x) - 2, **attrs)))


CASES = {
    **{f"conv-{name}": _conv_case(*case) for name, case in CONV_GRID.items()},
    "matmul": _binary("matmul", (3, 4), (4, 5)),
    "matmul-batched-broadcast": _binary("matmul", (2, 3, 4), (4, 5)),
    "matmul-batched": _binary("matmul", (2, 3, 4), (2, 4, 5)),
    "matmul-vector-matrix": _binary("matmul", (4,), (4, 5)),
    "matmul-matrix-vector": _binary("matmul", (3, 4), (4,)),
    "matmul-vector-batched": _binary("matmul", (4,), (2, 4, 5)),
    "matmul-batched-vector": _binary("matmul", (2, 3, 4), (4,)),
    "add-broadcast": _binary("add", (3, 4), (4,)),
    "add-outer": _binary("add", (3, 1), (1, 4)),
    "sub-broadcast": _binary("sub", (3, 4), (3, 1)),
    "mul-broadcast": _binary("mul", (2, 3, 4), (3, 4)),
    "div": _binary("div", (3, 4), (4,), lo_b=0.5, hi_b=2.0),
    "pow": _binary("pow", (3, 4), (3, 4), lo_b=0.5, hi_b=2.5, lo_a=0.3),
    "maximum": _binary("maximum", (3, 4), (3, 4)),
    "minimum": _binary("minimum", (3, 4), (4,)),
    "where": _single("where", [(3, 4), (3, 4)], _where),
    "relu": _unary("relu", distinct=True),
    "gelu": _unary("gelu", {"approximate": "none"}),
    "gelu-tanh": _unary("gelu", {"approximate": "tanh"}),
    "exp": _unary("exp"),
    "tanh": _unary("tanh"),
    "sigmoid": _unary("sigmoid"),
    "erf": _unary("erf"),
    "sqrt": _unary("sqrt", lo=0.2, hi=2.0),
    "log": _unary("log", lo=0.2, hi=2.0),
    "neg": _unary("neg"),
    "abs": _unary("abs", distinct=True),
    "sign": _unary("sign", distinct=True),
    "clip": _unary("clip", {"min": -0.31, "max": 0.42}, distinct=True),
    "leaky_relu": _unary("leaky_relu", {"alpha": 0.1}, distinct=True),
    "elu": _unary("elu", {"alpha": 0.7}, distinct=True),
    "selu": _unary("selu", {"alpha": 1.67, "gamma": 1.05}, distinct=True),
    "softplus": _unary("softplus"),
    "cast": _unary("cast", {"to": "f32"}),
    "softmax": _single("softmax", [(3, 4)], lambda g, x: g.softmax(x, -1)),
    "softmax-axis0": _single("softmax", [(3, 4)], lambda g, x: g.softmax(x, 0)),
    "log_softmax": _single("log_softmax", [(3, 4)], lambda g, x: g.emit("log_softmax", (x,), {"axis": 1})),
    "layernorm": _single("layernorm", [(3, 4)], lambda g, x: g.layernorm(x)),
    "layernorm-affine": _single("layernorm", [(3, 4), (4,), (4,)], lambda g, x, s, b: g.layernorm(x, s, b)),
    "layernorm-2axes": _single("layernorm", [(2, 3, 4), (3, 4)], lambda g, x, s: g.layernorm(x, s, axis=1)),
    "reduce_sum": _single("reduce_sum", [(2, 3, 4)], lambda g, x: g.reduce_sum(x, (0, 2))),
    "reduce_sum-keepdims": _single("reduce_sum", [(3, 4)], lambda g, x: g.reduce_sum(x, 1, keepdims=True)),
    "reduce_mean": _single("reduce_mean", [(2, 3, 4)], lambda g, x: g.reduce_mean(x, 1)),
    "reduce_max": _single("reduce_max", [(3, 4)], lambda g, x: g.reduce_max(x, 1),
                          lambda: {"p0": _distinct((3, 4))}),
    "transpose": _single("transpose", [(2, 3, 4)], lambda g, x: g.transpose(x, (2, 0, 1))),
    "reshape": _single("reshape", [(2, 3, 4)], lambda g, x: g.reshape(x, (4, 6))),
    "concat": _single("concat", [(3, 2), (3, 4)], lambda g, a, b: g.emit("concat", (a, b), {"axis": 1})),
    "remap-pad": _single("remap", [(3, 4)], _remap_pad),
    "remap-tile": _single("remap", [(3, 4)], _remap_tile),
    "mse_loss": _single("mse", [(3, 4), (3, 4)], _mse),
    "softmax_cross_entropy": _single("xent", [(3, 4)], _xent),
}


@pytest.mark.parametrize("case", CASES)
def test_gradient_matches_finite_differences(case):
    g, inputs = CASES[case]()
    check_gradients(g, inputs)


def test_conv_grid_leaves_remainders():
    """Some cases leave padded input after the last window (the dx rule pads its output for them)."""
    remainders = {name: unread(x, w, conv_attrs(len(x) - 2, **a)) for name, (x, w, a) in CONV_GRID.items()}
    # u (n - 1) + pads - d (k - 1), mod the stride: stride2-pad 6 + 1 - 2 = 5 and 5 + 1 - 1 = 5 (mod 2);
    # dilation2-stride2 8 + 1 - 4 = 5 and 7 - 2 = 5 (mod 2); groups2 5 + 2 - 2 = 5 (mod 2), stride 1 along
    # the other axis; depthwise 5 + 2 - 2 = 5 and 6 + 2 - 2 = 6 (mod 2); 1d 8 + 2 - 2 = 8 (mod 2);
    # 1d-stride3-dilation2 10 - 2 = 8 (mod 3); 1d-transposed 2 (4 - 1) + 3 - 2 = 7 (mod 2)
    assert remainders["stride2-pad"] == [1, 1] and remainders["dilation2-stride2"] == [1, 1]
    assert remainders["groups2"] == [1, 0] and remainders["depthwise"] == [1, 0] and remainders["1d"] == [0]
    assert remainders["1d-stride3-dilation2"] == [2] and remainders["1d-transposed"] == [1]


def test_conv_gradients_are_two_convolutions_with_the_derived_attributes():
    """x 1 x 1 x 7 (k 3, stride 2, pads 1 and 0): 3 windows read padded positions 0..6 of 8, leaving e = 1.
    dx = conv(dy, flipped w) stuffed by 2, pads 3 - 1 - 1 = 1 before and 2 - 0 + 1 = 3 after (2 (3 - 1) + 1
    + 4 - 2 - 1 = 6 = 7 - 1 positions: 7 outputs); dw = conv(x, dy) stride 1, dilation 2, pads 1 and 0 - 1
    (the unread position cropped): 7 + 1 - 1 - 2 (3 - 1) - 1 = 2: 3 outputs."""
    g = Graph("c")
    y = g.emit("conv", (g.parameter("x", (1, 1, 7)), g.parameter("w", (1, 1, 3))),
               conv_attrs(1, strides=(2,), pads=(1, 0)))
    _weighted(g, y)
    backward = grad(g, "loss", ["x", "w"])
    convs = [n for n in backward.topo_order() if n.op == "conv" and n.name != y.name]
    dx, dw = sorted(convs, key=lambda n: n.shape[-1], reverse=True)
    assert dx.shape == (1, 1, 7) and dx.attrs == conv_attrs(1, input_dilation=(2,), pads=(1, 3))
    assert dw.shape == (1, 1, 3) and dw.attrs == conv_attrs(1, dilations=(2,), pads=(1, -1))


def test_every_rule_is_checked():
    """Each operator with a rule appears in some finite-difference case above."""
    checked = {n.op for build in CASES.values() for n in build()[0].nodes.values()}
    assert set(RULES) - checked == set()


def test_ops_without_rule_are_the_documented_ones():
    section = DOCS.read_text().split("### Operators without a gradient rule")[1].split("\n#")[0]
    documented = sorted(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert ops_without_rule() == documented == ["all_gather", "all_reduce", "constant", "embedding_bag",
                                                "fused", "fused_attention", "if", "loop", "matmul_t", "parameter"]


@pytest.mark.parametrize("name", ["mlp2", "transformer"])
def test_model_gradients_match_finite_differences(name):
    sizes = {"mlp2": {"batch": 3, "d_in": 4, "d_hidden": 5, "d_out": 2},
             "transformer": {"seq": 3, "d_model": 4, "heads": 2, "d_ff": 6}}[name]
    g = models.build(name, **sizes)
    (y,) = g.outputs.values()
    g.outputs.clear()
    _weighted(g, g[y])
    inputs = {p.name: _rand(p.shape, seed=i) for i, p in enumerate(g.parameters())}
    check_gradients(g, inputs, rtol=1e-4, atol=1e-6)


def test_grad_graph_keeps_the_forward_outputs_and_evaluates_in_f32():
    g = models.mlp2(4, 3, 5, 2)
    y = g[g.outputs["y"]]
    g.output(mse_loss(g, y, g.parameter("t", (4, 2))), "loss")
    backward = grad(g, "loss", ["w1", "b2"])
    assert list(backward.outputs) == ["y", "loss", "grad_w1", "grad_b2"]
    inputs = {p.name: _rand(p.shape, seed=i).astype(np.float32) for i, p in enumerate(backward.parameters())}
    got, exact = evaluate(backward, inputs), evaluate_exact(backward, inputs)
    assert got["grad_w1"].dtype == np.float32
    np.testing.assert_allclose(got["grad_w1"], exact["grad_w1"], rtol=1e-4, atol=1e-6)


def test_gradient_of_an_unused_parameter_is_zero():
    g = Graph("unused")
    x, w = g.parameter("x", (2,)), g.parameter("w", (3,))
    g.output(g.reduce_sum(g.mul(x, x)), "loss")
    g.output(w, "w_out")
    got = evaluate(grad(g, "loss", ["x", "w"]), {"x": [1.0, -2.0], "w": [1.0, 2.0, 3.0]})
    assert got["grad_x"].tolist() == [2.0, -4.0] and got["grad_w"].tolist() == [0.0, 0.0, 0.0]


def test_errors_name_the_problem():
    g = models.mlp2(2, 3, 4, 2)
    with pytest.raises(CompilerError, match="loss 'nope' is neither an output nor a node"):
        grad(g, "nope", ["w1"])
    with pytest.raises(CompilerError, match=r"the loss %\d+ is f32\[2,2\]; it must be a float scalar"):
        grad(g, "y", ["w1"])
    g.output(g.reduce_sum(g[g.outputs["y"]]), "loss")
    with pytest.raises(CompilerError, match="'w9' is not a node"):
        grad(g, "loss", ["w9"])
