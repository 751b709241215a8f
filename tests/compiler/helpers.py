"""Shared checks for the compiler tests: random inputs for a graph, and a pass run as a pair
(graph before, graph expected after) compared by canonical text and by value."""

from __future__ import annotations

import numpy as np

from gpusim.compiler import Graph, evaluate, format_graph, verify


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Values in [-1, 1) (integers in [-4, 4)) for every parameter."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in graph.parameters():
        if p.dtype == "i32":
            out[p.name] = rng.integers(-4, 4, p.shape).astype(np.int32)
        else:
            out[p.name] = rng.uniform(-1, 1, p.shape).astype(p.type.numpy_dtype)
    return out


def assert_same_values(before: Graph, after: Graph, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6):
    """Both graphs give the same outputs (allclose) on the same random inputs."""
    inputs = random_inputs(before, seed)
    want, got = evaluate(before, inputs), evaluate(after, inputs)
    assert want.keys() == got.keys()
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def assert_pass(run, before: Graph, expected: Graph) -> list:
    """`run(before)` gives a graph printing (canonically) as `expected`, equal in value to `before`,
    leaves `before` untouched, and verifies; returns the pass's changes."""
    text = str(before)
    after, changes = run(before)
    verify(after)
    got, want = format_graph(after, canonical=True), format_graph(expected, canonical=True)
    assert got == want, f"got:\n{got}\nexpected:\n{want}"
    assert str(before) == text
    assert_same_values(before, after)
    return changes
