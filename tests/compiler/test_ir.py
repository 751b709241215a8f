"""The IR: builder, printer (plain and canonical), operator kinds, the reference evaluator against numpy
by hand, and the Graphviz export."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from gpusim.compiler import OPS, CompilerError, Graph, GraphError, Kind, evaluate, format_graph, models, to_dot
from gpusim.compiler.errors import GpusimError

MLP_TEXT = """\
graph mlp2
  %x = parameter() : f32[4,8]
  %w1 = parameter() : f32[8,16]
  %b1 = parameter() : f32[16]
  %w2 = parameter() : f32[16,3]
  %b2 = parameter() : f32[3]
  %0 = matmul(%x, %w1) : f32[4,16]
  %1 = add(%0, %b1) : f32[4,16]
  %2 = relu(%1) : f32[4,16]
  %3 = matmul(%2, %w2) : f32[4,3]
  %4 = add(%3, %b2) : f32[4,3]
  output y = %4"""


def test_builder_and_printer():
    assert str(models.mlp2(4, 8, 16, 3)) == MLP_TEXT


def test_attributes_and_constants_print():
    g = Graph("t")
    x = g.parameter("x", (2, 3, 4), "f16")
    g.output(g.reduce_mean(g.softmax(g.transpose(x, (2, 0, 1)), axis=-1), axes=-2, keepdims=True), "m")
    g.output(g.add(g.reshape(x, (6, -1)), g.constant(np.arange(4), "f16")), "r")
    g.output(g.mul(g.constant(np.ones((3, 3))), 0.5), "c")
    assert str(g).splitlines()[2:] == [
        "  %0 = transpose(%x) {perm=[2,0,1]} : f16[4,2,3]",
        "  %1 = softmax(%0) {axis=2} : f16[4,2,3]",
        "  %2 = reduce_mean(%1) {axes=[1], keepdims=true} : f16[4,1,3]",
        "  %3 = reshape(%x) {shape=[6,4]} : f16[6,4]",
        "  %4 = constant([0.0, 1.0, 2.0, 3.0]) : f16[4]",
        "  %5 = add(%3, %4) : f16[6,4]",
        f"  %6 = constant(<9 values, crc32 {_crc(np.ones((3, 3), np.float32))}>) : f32[3,3]",
        "  %7 = constant(0.5) : f32[]",
        "  %8 = mul(%6, %7) : f32[3,3]",
        "  output m = %2",
        "  output r = %5",
        "  output c = %8",
    ]


def _crc(a: np.ndarray) -> str:
    import zlib

    return f"{zlib.crc32(a.tobytes()):08x}"


def test_canonical_text_ignores_names_and_insertion_order():
    a = Graph("g")
    x = a.parameter("x", (4,))
    a.output(a.add(a.exp(x, name="e"), a.tanh(x, name="t"), name="sum"), "y")
    b = Graph("g")
    x = b.parameter("x", (4,))
    t = b.tanh(x)
    b.output(b.add(b.exp(x), t), "y")
    assert str(a) != str(b)
    assert format_graph(a, canonical=True) == format_graph(b, canonical=True)
    c = Graph("g")
    x = c.parameter("x", (4,))
    c.output(c.add(c.tanh(x), c.exp(x)), "y")
    assert format_graph(a, canonical=True) != format_graph(c, canonical=True)


@pytest.mark.parametrize("build, message", [
    (lambda g, x, v: g.add(x, v), "node %0 (add): shapes f32[2,3] and f32[4] do not broadcast"),
    (lambda g, x, v: g.matmul(x, x), "node %0 (matmul): inner dimensions differ: f32[2,3] @ f32[2,3]"),
    (lambda g, x, v: g.add(x, g.constant(np.ones(3, np.int32))),
     "node %1 (add): operand dtypes differ: f32[2,3], i32[3]"),
    (lambda g, x, v: g.exp(g.constant(1)), "node %1 (exp): needs a float operand (f32, f16, bf16), got i32[]"),
    (lambda g, x, v: g.softmax(x, axis=2), "node %0 (softmax): axis 2 is out of range for rank 2"),
    (lambda g, x, v: g.transpose(x, (0, 0)), "node %0 (transpose): perm (0, 0) is not a permutation of the 2 axes "
                                             "of f32[2,3]"),
    (lambda g, x, v: g.reshape(x, (4, 2)), "node %0 (reshape): cannot reshape f32[2,3] (6 elements) to [4, 2]"),
    (lambda g, x, v: g.layernorm(x, v), "node %0 (layernorm): scale/bias f32[4] must broadcast to the normalised "
                                        "shape [3]"),
    (lambda g, x, v: g.layernorm(x, beta=v), "(layernorm): beta needs gamma"),
    (lambda g, x, v: g.gelu(x, "fast"), "node %0 (gelu): approximate is 'none' or 'tanh', not 'fast'"),
    (lambda g, x, v: g.emit("fft", (x,)), "node %0 (fft): unknown operator 'fft' (known: " + ", ".join(OPS) + ")"),
    (lambda g, x, v: g.emit("relu", (x, x)), "node %0 (relu): takes 1 input(s), got 2"),
    (lambda g, x, v: g.emit("softmax", (x,)), "node %0 (softmax): missing attribute(s) axis"),
    (lambda g, x, v: g.relu("nope"), "node %0 (relu): input 'nope' is not a node of graph 'g'"),
    (lambda g, x, v: g.relu(Graph("h").parameter("x", (2, 3))), "node %0 (relu): input %x belongs to another graph"),
    (lambda g, x, v: g.relu(x, name="x"), "node %x (relu): duplicate node name"),
    (lambda g, x, v: g.parameter("p", (2, -1)), "node %p (parameter): a shape is a tuple of non-negative ints, "
                                                "not (2, -1)"),
    (lambda g, x, v: g.parameter("p", (2,), "f64"),
     "node %p (parameter): unknown dtype 'f64' (known: f32, f16, bf16, i32, i8)"),
    (lambda g, x, v: g.constant([True]), "(constant): no IR dtype for numpy bool (known: f32, f16, bf16, i32, i8)"),
    (lambda g, x, v: g.output(x, "y") or g.output(v, "y"), "node %v: duplicate output name 'y'"),
])
def test_builder_errors_name_node_and_operator(build, message):
    g = Graph("g")
    x, v = g.parameter("x", (2, 3)), g.parameter("v", (4,))
    with pytest.raises(GraphError) as e:
        build(g, x, v)
    assert str(e.value) == message
    assert isinstance(e.value, GpusimError)


def test_every_operator_has_a_kind():
    kinds = {name: d.kind for name, d in OPS.items()}
    assert kinds["relu"] is Kind.ELEMENTWISE and kinds["add"] is Kind.BROADCAST
    assert kinds["transpose"] is Kind.INJECTIVE and kinds["softmax"] is Kind.REDUCTION
    assert kinds["matmul"] is Kind.OUT_FUSABLE and kinds["fused"] is Kind.OPAQUE
    assert set(OPS) == {"parameter", "constant", "matmul", "add", "sub", "mul", "div", "pow", "relu", "gelu", "exp",
                        "tanh", "softmax", "layernorm", "reduce_sum", "reduce_mean", "transpose", "reshape", "fused",
                        "sigmoid", "erf", "sqrt", "log", "neg", "abs", "sign", "clip", "leaky_relu", "elu", "selu",
                        "softplus", "cast", "maximum", "minimum", "where", "reduce_max", "log_softmax", "remap",
                        "concat", "if", "loop", "all_reduce", "all_gather", "embedding_bag", "matmul_t", "conv",
                        "fused_attention"}
    assert kinds["matmul_t"] is kinds["conv"] is Kind.OUT_FUSABLE and kinds["fused_attention"] is Kind.OPAQUE
    assert kinds["remap"] is kinds["concat"] is Kind.INJECTIVE and kinds["where"] is Kind.BROADCAST
    assert kinds["reduce_max"] is kinds["log_softmax"] is Kind.REDUCTION and kinds["erf"] is Kind.ELEMENTWISE


RNG = np.random.default_rng(1)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((4,)).astype(np.float32) + 3
M = RNG.standard_normal((2, 4, 5)).astype(np.float32)
G = RNG.standard_normal((4,)).astype(np.float32)
ERF = np.vectorize(math.erf)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layernorm(x):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)


@pytest.mark.parametrize("name, build, want", [
    ("matmul", lambda g, a, b, m: g.matmul(a, m), lambda: np.matmul(A, M)),
    ("matmul-vector", lambda g, a, b, m: g.matmul(a, b), lambda: A @ B),
    ("add", lambda g, a, b, m: g.add(a, b), lambda: A + B),
    ("sub", lambda g, a, b, m: g.sub(b, a), lambda: B - A),
    ("mul", lambda g, a, b, m: g.mul(a, b), lambda: A * B),
    ("div", lambda g, a, b, m: g.div(a, b), lambda: A / B),
    ("pow", lambda g, a, b, m: g.pow(b, 3), lambda: B**3),
    ("relu", lambda g, a, b, m: g.relu(a), lambda: np.maximum(A, 0)),
    ("gelu", lambda g, a, b, m: g.gelu(a), lambda: 0.5 * A * (1 + ERF(A / math.sqrt(2)))),
    ("gelu-tanh", lambda g, a, b, m: g.gelu(a, "tanh"),
     lambda: 0.5 * A * (1 + np.tanh(math.sqrt(2 / math.pi) * (A + 0.044715 * A**3)))),
    ("exp", lambda g, a, b, m: g.exp(a), lambda: np.exp(A)),
    ("tanh", lambda g, a, b, m: g.tanh(a), lambda: np.tanh(A)),
    ("softmax", lambda g, a, b, m: g.softmax(m, 1), lambda: _softmax(M, 1)),
    ("layernorm", lambda g, a, b, m: g.layernorm(a), lambda: _layernorm(A)),
    ("layernorm-affine", lambda g, a, b, m: g.layernorm(a, b, g.constant(G)), lambda: _layernorm(A) * B + G),
    ("reduce_sum", lambda g, a, b, m: g.reduce_sum(m, (0, 2)), lambda: M.sum(axis=(0, 2))),
    ("reduce_mean", lambda g, a, b, m: g.reduce_mean(m, -1, keepdims=True), lambda: M.mean(-1, keepdims=True)),
    ("transpose", lambda g, a, b, m: g.transpose(m, (1, 2, 0)), lambda: M.transpose(1, 2, 0)),
    ("reshape", lambda g, a, b, m: g.reshape(m, (-1, 10)), lambda: M.reshape(4, 10)),
])
def test_evaluator_matches_numpy(name, build, want):
    g = Graph(name)
    a, b, m = g.parameter("a", A.shape), g.parameter("b", B.shape), g.parameter("m", M.shape)
    g.output(build(g, a, b, m), "y")
    got = evaluate(g, {"a": A, "b": B, "m": M})["y"]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want(), rtol=1e-5, atol=1e-6)


def test_evaluator_rounds_to_the_node_dtype():
    g = Graph("t")
    h, i = g.parameter("h", (3,), "f16"), g.parameter("i", (3,), "i32")
    g.output(g.mul(h, 3), "h3")
    g.output(g.reduce_sum(g.sub(i, 1)), "s")
    out = evaluate(g, {"h": np.array([0.1, 0.2, 0.3]), "i": np.array([1, 2, 3])})
    assert out["h3"].dtype == np.float16
    np.testing.assert_array_equal(out["h3"], (np.float16([0.1, 0.2, 0.3]).astype(np.float64) * 3).astype(np.float16))
    assert out["s"].dtype == np.int32 and out["s"] == 3


@pytest.mark.parametrize("inputs, message", [
    ({}, "missing input 'x' (f32[2])"),
    ({"x": np.ones(2), "z": 1}, "unknown input(s) z; the parameters are x"),
    ({"x": np.ones(3)}, "input 'x' has shape [3]; the parameter is f32[2]"),
    ({"x": np.ones(2, np.int64)}, "input 'x' is int64; the parameter is f32[2]"),
])
def test_evaluator_input_errors(inputs, message):
    g = Graph("t")
    g.output(g.relu(g.parameter("x", (2,))), "y")
    with pytest.raises(CompilerError, match=re.escape(message) + "$"):
        evaluate(g, inputs)


def test_dot_export_structure():
    from gpusim.compiler import run_pipeline

    plain = to_dot(models.mlp2(4, 8, 16, 3))
    assert plain.startswith('digraph "mlp2" {') and plain.endswith("}")
    assert len(re.findall(r"^\s+\"[^\"]+\" \[label=", plain, re.M)) == 10 + 1  # nodes + the output
    assert len(re.findall(r" -> ", plain)) == 9 + 1  # inputs of the 5 operators + the output
    assert "subgraph" not in plain
    fused, _ = run_pipeline(models.mlp2(4, 8, 16, 3))
    dot = to_dot(fused)
    assert dot.count("subgraph \"cluster_") == 2
    assert 'label="%2 fused.epilogue: matmul, add, relu";' in dot
    assert len(re.findall(r"^\s+\"[^\"]+\" \[label=", dot, re.M)) == 10 + 1  # the bodies hold the same nodes
    assert len(re.findall(r" -> ", dot)) == 9 + 1
    assert '"2/2" -> "4/3";' in dot  # the first kernel's relu feeds the second kernel's matmul
