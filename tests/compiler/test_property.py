"""Property: on random element-wise DAGs (with constants, x*1, x*0, x*x*x and repeats for the passes to
find), the whole pipeline preserves every output's value."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpusim.compiler import Graph, evaluate, run_pipeline, verify

from .helpers import random_inputs

SHAPES = [(3, 4), (4,), (1, 4), (3, 1)]
UNARY = ["relu", "exp", "tanh", "gelu"]
BINARY = ["add", "sub", "mul", "div"]
CONSTANTS = [0.0, 1.0, 0.5, 2.0]


@st.composite
def dags(draw) -> Graph:
    g = Graph("random")
    values = [g.parameter(f"p{i}", draw(st.sampled_from(SHAPES))) for i in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 12))):
        pick = st.sampled_from(values)
        choice = draw(st.sampled_from(["unary", "binary", "constant", "cube", "chain"]))
        if choice == "unary":
            op = draw(st.sampled_from(UNARY))
            values.append(g.gelu(draw(pick)) if op == "gelu" else g.emit(op, (draw(pick),)))
        elif choice == "binary":
            op = draw(st.sampled_from(BINARY))
            a, b = draw(pick), draw(pick)
            if op == "div":  # divide only by a constant, keeping values finite
                b = g.constant(draw(st.sampled_from([0.5, 2.0, 1.0])))
            values.append(g.emit(op, (a, b)))
        elif choice == "constant":
            values.append(g.emit(draw(st.sampled_from(["mul", "add"])),
                                 (draw(pick), g.constant(draw(st.sampled_from(CONSTANTS))))))
        elif choice == "cube":
            x = draw(pick)
            values.append(g.mul(g.mul(x, x), x))
        else:  # constant-only arithmetic, for folding
            c = g.constant(draw(st.sampled_from(CONSTANTS)))
            values.append(g.add(draw(pick), g.mul(c, g.constant(3.0))))
    outputs = draw(st.lists(st.sampled_from(values[1:] or values), min_size=1, max_size=3, unique_by=lambda n: n.name))
    for node in outputs:
        g.output(node)
    return g


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(), st.integers(0, 3))
def test_pipeline_preserves_values(graph, seed):
    verify(graph)
    inputs = random_inputs(graph, seed)
    want = evaluate(graph, inputs)
    assume(all(np.all(np.isfinite(v)) and np.all(np.abs(v) < 1e4) for v in want.values()))
    after, report = run_pipeline(graph)
    assert report.nodes_after <= report.nodes_before
    got = evaluate(after, inputs)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)
