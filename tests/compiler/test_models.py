"""The example models: their values against numpy written out by hand, and after the default pipeline."""

from __future__ import annotations

import numpy as np

from gpusim.compiler import evaluate, models, run_pipeline

from .helpers import assert_same_values, random_inputs


def test_mlp2():
    g = models.mlp2(8, 16, 32, 4)
    i = random_inputs(g)
    want = np.maximum(i["x"] @ i["w1"] + i["b1"], 0) @ i["w2"] + i["b2"]
    np.testing.assert_allclose(evaluate(g, i)["y"], want, rtol=1e-5, atol=1e-6)
    after, report = run_pipeline(g)
    assert report.nodes_after == 7
    assert_same_values(g, after)


def test_attention():
    g = models.attention(12, 16)
    i = random_inputs(g)
    q, k, v = i["x"] @ i["wq"], i["x"] @ i["wk"], i["x"] @ i["wv"]
    s = q @ k.T / np.sqrt(16)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v @ i["wo"]
    np.testing.assert_allclose(evaluate(g, i)["y"], want, rtol=1e-5, atol=1e-6)
    after, _ = run_pipeline(g)
    assert_same_values(g, after)


def test_half_precision_models():
    g = models.attention(4, 8, dtype="f16")
    assert {n.dtype for n in g.nodes.values()} == {"f16"}
    assert evaluate(g, random_inputs(g))["y"].dtype == np.float16
