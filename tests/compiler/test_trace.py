"""The tracing front end: Python functions on symbolic tensors become graphs; Python control flow is
resolved at trace time; a branch on a tensor's value is refused with the line that asked."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpusim.compiler import AnalyticalCost, compile_graph, evaluate, format_graph, models
from gpusim.compiler.autodiff import grad
from gpusim.compiler.trace import TracingError, trace, where


def mlp2(x, w1, b1, w2, b2):
    return (x @ w1 + b1).relu() @ w2 + b2


def test_traced_mlp_is_the_builders_mlp():
    traced = trace(mlp2, x=(32, 64), w1=(64, 128), b1=(128,), w2=(128, 10), b2=(10,))
    assert format_graph(traced, canonical=True) == format_graph(models.mlp2(32, 64, 128, 10), canonical=True)


def attention_block(x, wq, wk, wv, wo, gamma, *, heads=2, layers=2):
    """Pre-norm multi-head attention, `layers` times with shared weights: Python loops unrolled at trace
    time (heads split by reshape/permute, as PyTorch model code writes it)."""
    seq, d = x.shape
    dh = d // heads
    for _ in range(layers):
        a = x.layer_norm(gamma)
        q, k, v = ((a @ w).reshape(seq, heads, dh).permute(1, 0, 2) for w in (wq, wk, wv))
        scores = (q @ k.transpose(1, 2)) * (1 / math.sqrt(dh))
        ctx = (scores.softmax(-1) @ v).permute(1, 0, 2).reshape(seq, d)
        x = x + ctx @ wo
    return x


def _numpy_attention(x, wq, wk, wv, wo, gamma, heads=2, layers=2):
    seq, d = x.shape
    dh = d // heads
    for _ in range(layers):
        a = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gamma
        q, k, v = ((a @ w).reshape(seq, heads, dh).transpose(1, 0, 2) for w in (wq, wk, wv))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        x = x + (p @ v).transpose(1, 0, 2).reshape(seq, d) @ wo
    return x


def test_python_loops_unroll_and_values_match_numpy():
    shapes = {"x": (8, 16), "wq": (16, 16), "wk": (16, 16), "wv": (16, 16), "wo": (16, 16), "gamma": (16,)}
    g = trace(attention_block, **shapes)
    assert sum(n.op == "softmax" for n in g.nodes.values()) == 2  # one per unrolled layer
    assert sum(n.op == "matmul" for n in g.nodes.values()) == 2 * 6
    rng = np.random.default_rng(1)
    inputs = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in shapes.items()}
    want = _numpy_attention(*(inputs[k].astype(np.float64) for k in shapes))
    np.testing.assert_allclose(evaluate(g, inputs)["y"], want, rtol=1e-4, atol=1e-5)


def test_a_python_if_keeps_one_path():
    def act(x, *, kind):
        return x.gelu() if kind == "gelu" else x.tanh()

    assert [n.op for n in trace(lambda x: act(x, kind="gelu"), x=(4,)).nodes.values()] == ["parameter", "gelu"]
    assert [n.op for n in trace(lambda x: act(x, kind="tanh"), x=(4,)).nodes.values()] == ["parameter", "tanh"]


def test_a_branch_on_a_tensor_value_is_refused_naming_the_line():
    def data_dependent(x):
        if x.sum() > 0:  # the line the error names
            return x.relu()
        return -x

    line = data_dependent.__code__.co_firstlineno + 1
    with pytest.raises(TracingError) as info:
        trace(data_dependent, x=(4,))
    message = str(info.value)
    assert message.startswith(f"{__file__}:{line}: bool() of Tensor(%")
    assert "the traced function branches on a tensor's value (if/while/and/or/not)" in message
    assert "has a shape and no value" in message and "where(cond, a, b)" in message
    with pytest.raises(TracingError, match=r"float\(\) of Tensor\(%0: f32\[\]\): the traced function reads"):
        trace(lambda x: x * float(x.sum()), x=(4,))


def test_where_keeps_a_data_dependent_choice_per_element():
    g = trace(lambda x, y: where(x > y, x * 2, y - 1), x=(5,), y=(5,))
    x, y = np.array([1.0, -2, 3, 0.5, -1]), np.array([0.0, 1, 4, 0.25, -3])
    np.testing.assert_allclose(evaluate(g, {"x": x, "y": y})["y"], np.where(x > y, x * 2, y - 1))


def test_traced_graph_compiles_and_differentiates(a100):
    g = trace(lambda x, w: {"loss": ((x @ w).tanh() ** 2).mean()}, x=(4, 8), w=(8, 3))
    report = compile_graph(g, a100, cost=AnalyticalCost())
    assert report.optimised.kernels
    back = grad(g, "loss", ["w"])
    rng = np.random.default_rng(0)
    x, w = rng.uniform(-1, 1, (4, 8)), rng.uniform(-1, 1, (8, 3))
    t = np.tanh(x @ w)
    want = x.T @ (2 * t * (1 - t * t) / t.size)
    np.testing.assert_allclose(evaluate(back, {"x": x, "w": w})["grad_w"], want, rtol=1e-4, atol=1e-6)


def test_trace_errors():
    with pytest.raises(TracingError, match="shapes are given by its argument names \\(x, w\\); missing w, unknown v"):
        trace(lambda x, w: x @ w, x=(2, 2), v=(2, 2))
    with pytest.raises(TracingError, match="output 'y' is 3, not a Tensor of this trace"):
        trace(lambda x: 3, x=(2,))


def test_numpy_operands_become_constants_on_either_side():
    m = np.arange(6.0).reshape(2, 3)
    g = trace(lambda x: m @ x + np.float64(2.0) * x.sum() - 1, x=(3, 4))
    assert [n.op for n in g.nodes.values()].count("constant") == 3
    x = np.random.default_rng(0).uniform(-1, 1, (3, 4))
    np.testing.assert_allclose(evaluate(g, {"x": x})["y"], m @ x + 2 * x.sum() - 1, rtol=1e-5, atol=1e-5)
