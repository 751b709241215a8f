"""Fusion, as pairs (the graph before, the graph expected after), and the should_fuse hook."""

from __future__ import annotations

import numpy as np

from gpusim.compiler import FusionCandidate, Graph, fuse, models

from .helpers import assert_pass


def fused(g: Graph, kind: str, inputs, build):
    """A fused node over `inputs` whose body (parameters named as the inputs) is `build(body, *params)`."""
    body = Graph("body")
    params = [body.parameter(i.name, i.shape, i.dtype) for i in inputs]
    body.output(build(body, *params))
    return g.fused(inputs, body, kind)


def test_elementwise_chain_and_diamond():
    before = Graph("f")
    x, b = before.parameter("x", (4, 8)), before.parameter("b", (8,))
    t = before.exp(before.add(x, b))
    before.output(before.mul(t, before.tanh(t)), "y")

    expected = Graph("f")
    x, b = expected.parameter("x", (4, 8)), expected.parameter("b", (8,))
    expected.output(fused(expected, "elementwise", [x, b],
                          lambda g, x, b: g.mul(t := g.exp(g.add(x, b)), g.tanh(t))), "y")

    changes = assert_pass(fuse, before, expected)
    assert [(c.kind, c.description) for c in changes] == [("fuse-elementwise", "%3 = fused.elementwise: add, exp, "
                                                                                "tanh, mul")]


def test_matmul_epilogue():
    before = models.mlp2(4, 8, 16, 3)
    expected = Graph("mlp2")
    x, w1, b1, w2, b2 = (expected.parameter(p.name, p.shape) for p in before.parameters())
    h = fused(expected, "epilogue", [x, w1, b1], lambda g, x, w, b: g.relu(g.add(g.matmul(x, w), b)))
    expected.output(fused(expected, "epilogue", [h, w2, b2], lambda g, h, w, b: g.add(g.matmul(h, w), b)), "y")
    changes = assert_pass(fuse, before, expected)
    assert [c.kind for c in changes] == ["fuse-epilogue"] * 2


def test_epilogue_must_keep_the_matmul_shape():
    before = Graph("f")
    x, w, z = before.parameter("x", (4, 8)), before.parameter("w", (8, 1)), before.parameter("z", (4, 8))
    before.output(before.relu(before.add(before.matmul(x, w), z)), "y")  # [4,1] broadcast to [4,8]

    expected = Graph("f")
    x, w, z = expected.parameter("x", (4, 8)), expected.parameter("w", (8, 1)), expected.parameter("z", (4, 8))
    m = expected.matmul(x, w)
    expected.output(fused(expected, "elementwise", [m, z], lambda g, m, z: g.relu(g.add(m, z))), "y")
    assert_pass(fuse, before, expected)


def test_reduction_takes_its_elementwise_producers_and_ends_the_group():
    before = Graph("f")
    x = before.parameter("x", (4, 8))
    s = before.reduce_sum(before.mul(x, x), -1)
    before.output(before.tanh(before.mul(s, 0.5)), "y")

    expected = Graph("f")
    x = expected.parameter("x", (4, 8))
    s = fused(expected, "reduction", [x], lambda g, x: g.reduce_sum(g.mul(x, x), -1))
    half = expected.constant(0.5)
    expected.output(fused(expected, "elementwise", [s, half], lambda g, s, h: g.tanh(g.mul(s, h))), "y")
    assert_pass(fuse, before, expected)


def test_attention_scale_joins_the_softmax():
    before = models.attention(8, 16)
    after, changes = fuse(before)
    assert [(c.kind, c.description) for c in changes] == [("fuse-reduction", "%7 = fused.reduction: div, softmax")]
    assert [n.op for n in after.topo_order()].count("matmul") == 6


def test_no_fusion_across_outputs_shared_values_and_injective_ops():
    g = Graph("f")
    x = g.parameter("x", (4, 8))
    t = g.exp(x)
    g.output(t, "t")  # a graph output
    g.output(g.relu(t), "r")
    shared = g.tanh(x)  # read by two groups
    g.output(g.add(shared, 1.0), "a")
    g.output(g.mul(shared, 2.0), "m")
    g.output(g.relu(g.transpose(g.exp(x))), "tr")  # injective in the middle
    after, changes = fuse(g)
    assert changes == [] and str(after) == str(g)


def test_fusing_again_changes_nothing():
    once, _ = fuse(models.mlp2(4, 8, 16, 3))
    twice, changes = fuse(once)
    assert changes == [] and str(twice) == str(once)


def test_should_fuse_sees_each_merge_with_its_costs():
    seen: list[FusionCandidate] = []

    def record(candidate: FusionCandidate) -> bool:
        seen.append(candidate)
        return True

    fuse(models.mlp2(4, 8, 16, 3), should_fuse=record)
    assert [c.kind for c in seen] == ["epilogue", "elementwise", "epilogue"]  # from the output up
    first = seen[1]  # the add joins the relu
    assert (first.kind, first.root, first.producer, first.ops) == ("elementwise", "2", "1", ("add", "relu"))
    assert [str(t) for t in first.inputs] == ["f32[4,16]", "f32[16]"]
    assert str(first.output) == "f32[4,16]"
    hidden, bias = 4 * 16 * 4, 16 * 4
    assert (first.fused.kernels, first.fused.bytes_read, first.fused.bytes_written) == ((("1", "2"),), hidden + bias,
                                                                                          hidden)
    assert first.unfused.kernels == (("2",), ("1",))
    assert (first.unfused.bytes_read, first.unfused.bytes_written) == (hidden + hidden + bias, 2 * hidden)
    second = seen[2]  # the matmul joins: an epilogue
    assert (second.kind, second.producer, second.ops) == ("epilogue", "0", ("matmul", "add", "relu"))
    assert second.fused.bytes_read == (4 * 8 + 8 * 16 + 16) * 4


def test_should_fuse_can_refuse():
    before = models.mlp2(4, 8, 16, 3)
    after, changes = fuse(before, should_fuse=lambda c: c.kind != "epilogue")
    assert [c.description for c in changes] == ["%2 = fused.elementwise: add, relu"]
    assert [n.op for n in after.topo_order() if n.op != "parameter"] == ["matmul", "fused", "matmul", "add"]
    x = np.ones((4, 8), np.float32)
    from gpusim.compiler import evaluate

    inputs = {p.name: np.full(p.shape, 0.5, np.float32) for p in before.parameters()} | {"x": x}
    np.testing.assert_array_equal(evaluate(after, inputs)["y"], evaluate(before, inputs)["y"])
