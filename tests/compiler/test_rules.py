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
