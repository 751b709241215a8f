"""The rewrite rules of passes/rules.py, each as a pair (graph before, graph expected after simplify and
dead-code elimination) with near misses left alone, and the rewritten graph's kernels run on the
functional executor against the evaluator of the graph before."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpusim.compiler import Graph, eliminate_dead_code, evaluate, fuse, lower, simplify
from gpusim.compiler.lower import run_kernels
from gpusim.config import load_config

from .helpers import assert_pass, random_inputs


def simplified(graph):
    after, changes = simplify(graph)
    return eliminate_dead_code(after)[0], changes


def two(shape_a, shape_b, build):
    g = Graph("r")
    a, b = g.parameter("a", shape_a), g.parameter("b", shape_b)
    g.output(build(g, a, b), "y")
    return g


def matmul_t(g, a, b, ta, tb):
    return g.emit("matmul_t", (a, b), {"trans_a": ta, "trans_b": tb})


def test_a_transposed_right_operand_folds_into_the_matmul():
    before = two((8, 16), (12, 16), lambda g, a, b: g.relu(g.matmul(a, g.transpose(b))))
    expected = two((8, 16), (12, 16), lambda g, a, b: g.relu(matmul_t(g, a, b, False, True)))
    changes = assert_pass(simplified, before, expected)
    assert [c.kind for c in changes] == ["transpose-matmul"]


def test_both_operands_fold_and_a_batched_swap_of_the_last_axes_folds():
    before = two((3, 16, 8), (3, 12, 16), lambda g, a, b: g.matmul(g.transpose(a, (0, 2, 1)),
                                                                   g.transpose(b, (0, 2, 1))))
    expected = two((3, 16, 8), (3, 12, 16), lambda g, a, b: matmul_t(g, a, b, True, True))
    assert_pass(simplified, before, expected)


def test_a_transposed_operand_of_matmul_t_toggles_its_flag_back_to_a_plain_matmul():
    before = two((8, 16), (16, 12), lambda g, a, b: matmul_t(g, a, g.transpose(b), False, True))
    expected = two((8, 16), (16, 12), lambda g, a, b: g.matmul(a, b))
    assert_pass(simplified, before, expected)


@pytest.mark.parametrize("perm", [(1, 0, 2), (1, 2, 0), (2, 1, 0)])
def test_near_miss_a_transpose_moving_other_axes_stays(perm):
    shape = tuple(np.array((4, 8, 16))[list(np.argsort(perm))])  # transpose(x, perm) is (4, 8, 16)
    g = two(shape, (16, 5), lambda g, a, b: g.matmul(g.transpose(a, perm), b))
    after, changes = simplified(g)
    assert changes == [] and [n.op for n in after.topo_order() if n.op != "parameter"] == ["transpose", "matmul"]


def test_near_miss_a_transpose_read_elsewhere_stays_for_its_other_reader():
    g = Graph("r")
    a, b = g.parameter("a", (16, 8)), g.parameter("b", (16, 12))
    t = g.transpose(a)
    g.output(g.matmul(t, b), "y")
    g.output(g.relu(t), "z")
    after, changes = simplified(g)
    assert [c.kind for c in changes] == ["transpose-matmul"]
    assert sorted(n.op for n in after.topo_order() if n.op != "parameter") == ["matmul_t", "relu", "transpose"]
    assert after[after.outputs["y"]].inputs == ("a", "b")


@pytest.mark.parametrize("ta, tb, shared", list(itertools.product((False, True), (False, True), (True, False)))[2:])
def test_the_folded_matmul_runs_on_the_executor_to_the_unfolded_values(ta, tb, shared):
    """A^T / B^T through both K loops, with ragged M, N, K (guards) and a batch."""
    m, k, n = 20, 33, 17
    g = Graph("r")
    a = g.parameter("a", (2, k, m) if ta else (2, m, k))
    b = g.parameter("b", (2, n, k) if tb else (2, k, n))
    a2 = g.transpose(a, (0, 2, 1)) if ta else a
    b2 = g.transpose(b, (0, 2, 1)) if tb else b
    g.output(g.relu(g.matmul(a2, b2)), "y")
    folded, _ = fuse(simplified(g)[0])
    kernels = lower(folded, {n.name: {"BM": 16, "BN": 16, "BK": 8, "TM": 2, "TN": 1, "use_shared": shared}
                             for n in folded.topo_order() if n.op == "fused"})
    assert len(kernels) == 1  # no transpose kernel left
    inputs = random_inputs(g)
    got = run_kernels(folded, kernels, inputs, load_config("a100"))["y"]
    np.testing.assert_allclose(got, evaluate(g, inputs)["y"], rtol=1e-5, atol=1e-5)


# --- fuse-attention: matmul -> [scale] -> softmax -> matmul becomes fused_attention (in the fuse pass) ---

def attention_chain(scale_op="mul", mm="matmul", shapes=((4, 8, 16), (4, 16, 12), (4, 12, 16)), axis=-1):
    """y = softmax(scale(q @ b)) @ v over heads; mm matmul_t reads b (Sk x D) with trans_b."""
    g = Graph("att")
    q, b, v = (g.parameter(n, s) for n, s in zip("qbv", shapes, strict=True))
    s = g.matmul(q, b) if mm == "matmul" else matmul_t(g, q, b, False, True)
    s = {"mul": lambda: g.mul(s, 0.25), "div": lambda: g.div(s, 4.0), None: lambda: s}[scale_op]()
    g.output(g.matmul(g.softmax(s, axis), v), "y")
    return g


def fused_attention(shapes, scale, trans_b):
    g = Graph("att")
    q, b, v = (g.parameter(n, s) for n, s in zip("qbv", shapes, strict=True))
    g.output(g.emit("fused_attention", (q, b, v), {"scale": scale, "trans_b": trans_b}), "y")
    return g


TRANSPOSED = ((4, 8, 16), (4, 12, 16), (4, 12, 16))


@pytest.mark.parametrize("scale_op, mm, shapes, scale, trans_b", [
    ("mul", "matmul", ((4, 8, 16), (4, 16, 12), (4, 12, 16)), 0.25, False),
    ("div", "matmul", ((4, 8, 16), (4, 16, 12), (4, 12, 16)), 0.25, False),
    (None, "matmul", ((8, 16), (16, 12), (12, 5)), 1.0, False),
    ("mul", "matmul_t", TRANSPOSED, 0.25, True),
])
def test_an_attention_chain_becomes_one_fused_attention(scale_op, mm, shapes, scale, trans_b):
    before = attention_chain(scale_op, mm, shapes)
    changes = assert_pass(take_all, before, fused_attention(shapes, scale, trans_b))
    assert [c.kind for c in changes] == ["fuse-attention"]


def take_all(g):
    """The fuse pass taking every candidate, rewrites included (the default takes them only by cost)."""
    return fuse(g, lambda c: True)


def test_the_default_decision_takes_no_rewrite():
    after, changes = fuse(attention_chain())
    assert [c.kind for c in changes] == ["fuse-reduction"]
    after, changes = fuse(projections())
    assert changes == []


def leaves_alone(g):
    after, changes = take_all(g)
    assert "fused_attention" not in {n.op for n in after.nodes.values()}
    return after, changes


def test_near_miss_softmax_over_another_axis():
    leaves_alone(attention_chain(axis=1))


def test_near_miss_intermediates_read_elsewhere_or_outputs():
    for inner in ("scores", "scaled", "probs"):
        g = attention_chain()
        mm = next(n for n in g.topo_order() if n.op == "matmul")
        name = {"scores": mm.name, "scaled": g.users()[mm.name][0]}.get(inner)
        name = name or next(n.name for n in g.topo_order() if n.op == "softmax")
        g.output(name, "extra")
        leaves_alone(g)
    g = attention_chain()
    probs = next(n.name for n in g.topo_order() if n.op == "softmax")
    g.output(g.relu(probs), "r")
    leaves_alone(g)


def test_near_miss_a_scale_that_is_a_tensor_a_transposed_q_or_another_order():
    g = Graph("att")
    q, b, v = g.parameter("q", (8, 16)), g.parameter("b", (16, 12)), g.parameter("v", (12, 4))
    g.output(g.matmul(g.softmax(g.mul(g.matmul(q, b), g.parameter("c", (8, 12)))), v), "y")  # not a scalar
    leaves_alone(g)
    g = Graph("att")
    q, b, v = g.parameter("q", (16, 8)), g.parameter("b", (16, 12)), g.parameter("v", (12, 4))
    g.output(g.matmul(g.softmax(matmul_t(g, q, b, True, False)), v), "y")  # q read transposed
    leaves_alone(g)
    g = Graph("att")
    q, b, v = g.parameter("q", (8, 16)), g.parameter("b", (16, 12)), g.parameter("v", (4, 8))
    g.output(g.matmul(v, g.softmax(g.matmul(q, b))), "y")  # the probabilities on the right
    leaves_alone(g)


def test_should_fuse_decides_with_the_three_kernels_as_the_alternative():
    seen = []

    def decline(candidate):
        seen.append(candidate)
        return candidate.kind != "attention"

    after, changes = fuse(attention_chain(), decline)
    assert [c.kind for c in changes] == ["fuse-reduction"]  # the scale joins the softmax instead
    (c,) = [c for c in seen if c.kind == "attention"]
    assert [n.op for n in c.nodes] == ["matmul", "mul", "softmax", "matmul"]
    assert [n.op for n in c.replacement] == ["fused_attention"] and c.replacement[0].attrs["scale"] == 0.25
    assert [len(k) for k in c.unfused.kernels] == [1, 2, 1] and c.fused.kernels == ((c.root,),)
    scores = 4 * 8 * 12 * 4
    assert c.unfused.bytes_written == 2 * scores + 4 * 8 * 16 * 4  # the scores and the probabilities, the result
    assert c.fused.bytes_written == 4 * 8 * 16 * 4


def test_cost_based_fusion_takes_attention_when_the_fused_kernel_costs_less_with_launches():
    from gpusim.compiler import AnalyticalCost, cost_based_fusion
    from gpusim.compiler.cost.fusion import alternative_costs

    cfg, cost = load_config("a100"), AnalyticalCost()
    decide = cost_based_fusion(cost, cfg)
    costs = []

    def record(candidate):
        if candidate.kind == "attention":
            costs.append(alternative_costs(candidate, cost, cfg))
        return decide(candidate)

    after, _ = fuse(attention_chain(shapes=((4, 32, 16), (4, 16, 32), (4, 32, 16))), record)
    (fused, unfused), = costs
    assert fused < unfused and "fused_attention" in {n.op for n in after.nodes.values()}
    # a head of 512 cannot be lowered (8 x (512 + 512) FMAs a key tile): the chain stays three kernels
    costs.clear()
    big = ((1, 8, 512), (1, 512, 8), (1, 8, 512))
    after, _ = fuse(attention_chain(shapes=big), record)
    assert costs[0][0] == float("inf") and "fused_attention" not in {n.op for n in after.nodes.values()}


def test_the_fused_attention_kernel_runs_to_the_chain_s_values():
    g = attention_chain("div", "matmul_t", ((4, 40, 16), (4, 37, 16), (4, 37, 16)))
    after, _ = take_all(g)
    kernels = lower(after)
    assert [k.template for k in kernels] == ["attention"]
    inputs = random_inputs(g)
    np.testing.assert_allclose(run_kernels(after, kernels, inputs)["y"], evaluate(g, inputs)["y"], rtol=1e-4,
                               atol=1e-5)


# --- batch-matmul: projections of one operand batched, their head-split transposes become remaps ---

def projections(weights="parameter", heads=2, seq=8, d=16, other_left=False, reader="split"):
    """q, k, v = x @ wq, x @ wk, x @ wv (v = y @ wv with `other_left`), each split into heads (reshape +
    transpose; `reader` transpose: a transpose alone; epilogue: v read by a relu) and returned."""
    g = Graph("qkv")
    x = g.parameter("x", (seq, d))
    left = g.parameter("y", (seq, d)) if other_left else None
    rng = np.random.default_rng(1)
    outs = []
    for i, w in enumerate(("wq", "wk", "wv")):
        wn = (g.parameter(w, (d, d)) if weights == "parameter"
              else g.constant(rng.uniform(-1, 1, (d, d)).astype(np.float32), name=w))
        p = g.matmul(left if left is not None and i == 2 else x, wn)
        if reader == "split":
            outs.append(g.transpose(g.reshape(p, (seq, heads, d // heads)), (1, 0, 2)))
        elif reader == "epilogue" and i == 2:
            outs.append(g.relu(p))
        else:
            outs.append(g.transpose(p))
    for name, o in zip("qkv", outs, strict=True):
        g.output(o, name)
    return g


def head_remap(i, heads, seq, dh):
    return {"shape": (heads, seq, dh), "coef": ((0, 0, 0), (0, 1, 0), (dh, 0, 1)), "offset": (i, 0, 0),
            "wrap": (False, False, False), "fill": 0.0}


@pytest.mark.parametrize("weights", ["parameter", "constant"])
def test_projections_of_one_operand_become_one_batched_matmul_read_by_remaps(weights):
    before = projections(weights)
    expected = Graph("qkv")
    x = expected.parameter("x", (8, 16))
    if weights == "parameter":
        ws = [expected.parameter(w, (16, 16)) for w in ("wq", "wk", "wv")]
        stacked = expected.emit("concat", [expected.reshape(w, (1, 16, 16)) for w in ws], {"axis": 0})
    else:
        stacked = expected.constant(np.stack([before[w].attrs["value"] for w in ("wq", "wk", "wv")]))
    batch = expected.matmul(x, stacked)
    for i, name in enumerate("qkv"):
        expected.output(expected.emit("remap", (batch,), head_remap(i, 2, 8, 8)), name)
    changes = assert_pass(take_all, before, expected)
    assert [c.kind for c in changes] == ["batch-matmul"]


def test_a_transpose_without_a_reshape_composes_too():
    before = projections(reader="transpose")
    after, changes = take_all(before)
    assert [c.kind for c in changes] == ["batch-matmul"]
    assert [n.op for n in after.topo_order() if n.op not in ("parameter", "reshape")] == ["concat", "matmul"] + [
        "remap"] * 3
    inputs = random_inputs(before)
    for name, value in evaluate(before, inputs).items():
        np.testing.assert_array_equal(evaluate(after, inputs)[name], value)


@pytest.mark.parametrize("case", ["another left operand", "an epilogue reader", "one projection"])
def test_near_miss_projections_left_apart(case):
    if case == "another left operand":
        g = projections(other_left=True)  # v = y @ wv: q and k still batch, v stays
        after, changes = take_all(g)
        assert [n.op for n in after.topo_order()].count("matmul") == 2 and [c.kind for c in changes] == [
            "batch-matmul"]
        return
    if case == "an epilogue reader":  # v's matmul has relu in its epilogue: q and k batch
        after, changes = take_all(projections(reader="epilogue"))
        assert "batch-matmul" in [c.kind for c in changes]
        assert [n.attrs.get("kind") for n in after.topo_order() if n.op == "fused"] == ["epilogue"]
        return
    g = Graph("one")
    x, w = g.parameter("x", (8, 16)), g.parameter("w", (16, 16))
    g.output(g.transpose(g.matmul(x, w)), "y")
    assert take_all(g)[1] == []


def test_batched_projections_run_on_the_executor_and_pay_in_the_transformer_block():
    from gpusim.compiler import AnalyticalCost, models, run_pipeline
    from gpusim.compiler.cost.fusion import alternative_costs

    g = projections(heads=4, seq=32, d=64)
    after, _ = take_all(g)
    kernels = lower(after)
    assert [k.template for k in kernels] == ["gather", "matmul", "gather", "gather", "gather"]
    assert kernels[1].launch.grid == (4, 2, 3)  # one batch of the grid per projection
    inputs = random_inputs(g)
    got = run_kernels(after, kernels, inputs)
    for name, want in evaluate(g, inputs).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5)
    seen = []
    run_pipeline(models.build("transformer"), should_fuse=lambda c: seen.append(c) or False)
    (candidate,) = [c for c in seen if c.kind == "horizontal"]
    assert len(candidate.fused.kernels) == 5 and len(candidate.unfused.kernels) == 6
    fused, unfused = alternative_costs(candidate, AnalyticalCost(), load_config("a100"))
    assert fused < unfused
