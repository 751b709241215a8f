"""Example models as graph builders, for the passes here and for lowering and tuning later. Weights are
parameters, so the graphs stay small and nothing folds them away."""

from __future__ import annotations

import math
from collections.abc import Callable

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph


def mlp2(batch: int, d_in: int, d_hidden: int, d_out: int, *, dtype: str = "f32") -> Graph:
    """A two-layer perceptron: y = relu(x @ w1 + b1) @ w2 + b2."""
    g = Graph("mlp2")
    x = g.parameter("x", (batch, d_in), dtype)
    w1, b1 = g.parameter("w1", (d_in, d_hidden), dtype), g.parameter("b1", (d_hidden,), dtype)
    w2, b2 = g.parameter("w2", (d_hidden, d_out), dtype), g.parameter("b2", (d_out,), dtype)
    h = g.relu(g.add(g.matmul(x, w1), b1))
    g.output(g.add(g.matmul(h, w2), b2), "y")
    return g


def attention(seq: int, d_model: int, *, dtype: str = "f32") -> Graph:
    """Single-head self-attention: q, k, v = x @ wq, x @ wk, x @ wv;
    y = softmax(q @ k^T / sqrt(d_model)) @ v @ wo."""
    g = Graph("attention")
    x = g.parameter("x", (seq, d_model), dtype)
    wq, wk, wv, wo = (g.parameter(w, (d_model, d_model), dtype) for w in ("wq", "wk", "wv", "wo"))
    q, k, v = g.matmul(x, wq), g.matmul(x, wk), g.matmul(x, wv)
    scores = g.div(g.matmul(q, g.transpose(k)), math.sqrt(d_model))
    g.output(g.matmul(g.matmul(g.softmax(scores, -1), v), wo), "y")
    return g


def transformer(seq: int, d_model: int, heads: int, d_ff: int, *, dtype: str = "f32") -> Graph:
    """A pre-LayerNorm transformer encoder block with `heads` attention heads:
    h = x + attention(layernorm(x)) (heads split by reshape and transpose, one batched matmul per step);
    y = h + gelu(layernorm(h) @ w1 + b1) @ w2 + b2."""
    if d_model % heads:
        raise CompilerError(f"model transformer: d_model {d_model} is not a multiple of heads {heads}")
    g = Graph("transformer")
    x = g.parameter("x", (seq, d_model), dtype)
    wq, wk, wv, wo = (g.parameter(w, (d_model, d_model), dtype) for w in ("wq", "wk", "wv", "wo"))
    w1, b1 = g.parameter("w1", (d_model, d_ff), dtype), g.parameter("b1", (d_ff,), dtype)
    w2, b2 = g.parameter("w2", (d_ff, d_model), dtype), g.parameter("b2", (d_model,), dtype)
    dh = d_model // heads
    a = g.layernorm(x)

    def split(t):  # (seq, d_model) -> (heads, seq, dh)
        return g.transpose(g.reshape(t, (seq, heads, dh)), (1, 0, 2))

    q, k, v = (split(g.matmul(a, w)) for w in (wq, wk, wv))
    scores = g.mul(g.matmul(q, g.transpose(k, (0, 2, 1))), 1 / math.sqrt(dh))
    ctx = g.matmul(g.softmax(scores, -1), v)  # (heads, seq, dh)
    merged = g.reshape(g.transpose(ctx, (1, 0, 2)), (seq, d_model))
    h = g.add(x, g.matmul(merged, wo))
    ff = g.add(g.matmul(g.gelu(g.add(g.matmul(g.layernorm(h), w1), b1)), w2), b2)
    g.output(g.add(h, ff), "y")
    return g


def recommender(batch: int, rows: int, dim: int, bag: int, d_dense: int, d_hidden: int, *,
                dtype: str = "f32") -> Graph:
    """A recommender (DLRM-like): each sample sums `bag` rows of a large embedding table (a sparse
    lookup), joins them with its dense features, and an MLP scores it:
    e = embedding_bag(table, ids); h = relu(relu([e, dense] @ w1 + b1) @ w2 + b2); y = sigmoid(h @ w3 + b3)."""
    g = Graph("recommender")
    table, ids = g.parameter("table", (rows, dim), dtype), g.parameter("ids", (batch, bag), "i32")
    dense = g.parameter("dense", (batch, d_dense), dtype)
    w1, b1 = g.parameter("w1", (dim + d_dense, d_hidden), dtype), g.parameter("b1", (d_hidden,), dtype)
    w2, b2 = g.parameter("w2", (d_hidden, d_hidden), dtype), g.parameter("b2", (d_hidden,), dtype)
    w3, b3 = g.parameter("w3", (d_hidden, 1), dtype), g.parameter("b3", (1,), dtype)
    joined = g.emit("concat", (g.emit("embedding_bag", (table, ids)), dense), {"axis": 1})
    h = g.relu(g.add(g.matmul(g.relu(g.add(g.matmul(joined, w1), b1)), w2), b2))
    g.output(g.emit("sigmoid", (g.add(g.matmul(h, w3), b3),)), "y")
    return g


BUILTIN: dict[str, Callable[..., Graph]] = {"mlp2": mlp2, "attention": attention, "transformer": transformer,
                                            "recommender": recommender}
DEFAULTS: dict[str, dict[str, int]] = {"mlp2": {"batch": 32, "d_in": 64, "d_hidden": 128, "d_out": 10},
                                       "attention": {"seq": 32, "d_model": 32},
                                       "transformer": {"seq": 32, "d_model": 64, "heads": 4, "d_ff": 128},
                                       "recommender": {"batch": 4096, "rows": 1_000_000, "dim": 32, "bag": 8,
                                                       "d_dense": 256, "d_hidden": 1024}}


def build(name: str, *, dtype: str = "f32", **sizes: int) -> Graph:
    """A built-in model by name, its sizes defaulting to DEFAULTS (small enough to simulate quickly)."""
    if name not in BUILTIN:
        raise CompilerError(f"unknown model '{name}'; the built-in models are {', '.join(BUILTIN)}")
    unknown = sorted(set(sizes) - set(DEFAULTS[name]))
    if unknown:
        params = ", ".join(f"{k}={v}" for k, v in DEFAULTS[name].items())
        raise CompilerError(f"model {name}: unknown size(s) {', '.join(unknown)}; its sizes are {params}")
    chosen = DEFAULTS[name] | sizes
    bad = [k for k, v in chosen.items() if isinstance(v, bool) or not isinstance(v, int) or v < 1]
    if bad:
        given = ", ".join(f"{k}={chosen[k]!r}" for k in bad)
        raise CompilerError(f"model {name}: sizes are positive integers: {given}")
    return BUILTIN[name](**chosen, dtype=dtype)
