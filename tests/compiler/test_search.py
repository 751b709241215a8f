"""The tuner's search and cost model beyond grid and local search: simulated annealing escaping a
deceptive local optimum that local search keeps, analytical ties broken by simulation, and the
calibrated model refitted from the simulations the tuner ran."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from gpusim.compiler import Graph, run_pipeline
from gpusim.compiler.cost import CalibratedCost, Calibration, CostModel, features
from gpusim.compiler.cost.calibrated import DEFAULT_PATH
from gpusim.compiler.lower import lower_node
from gpusim.compiler.tune import Tuner, _local_search, _Scores, anneal

SPACE = {"x": tuple(range(48)), "y": (0, 1)}


def deceptive(p) -> float:
    """Every start left of x = 10 slides down to a local optimum at x = 10 (20 cycles); the global one
    (5) lies behind a barrier at x = 11, 12 and a cliff at x = 14; the right side slopes to x = 47 (20)."""
    x, y = p["x"], p["y"]
    if x <= 10:
        return 30.0 - x + y
    if x <= 12:
        return 20.0 + 4 * (x - 10) + y
    if x == 13:
        return 5.0 + y
    if x == 14:
        return 60.0 + y
    return 20.0 + (47 - x) / 4 + y


def search(strategy, seed):
    scores = _Scores(lambda points: [deceptive(p) for p in points])
    strategy(scores, SPACE, {"x": 0, "y": 1}, 40, seed)
    return min(c for _, c in scores.valid()), scores.count, sorted(map(str, scores.valid()))


def test_annealing_escapes_the_local_optimum_that_local_search_keeps():
    local = [search(_local_search, seed)[0] for seed in range(8)]
    annealed = [search(anneal, seed)[0] for seed in range(8)]
    assert local == [20.0] * 8  # every climb and restart ends at x = 10 or x = 47
    assert annealed == [20.5, 5.0, 20.5, 5.0, 5.0, 5.0, 5.0, 20.0]  # 5 of 8 seeds cross the barrier
    assert all(count <= 41 for _, count, _ in map(lambda s: search(anneal, s), range(8)))  # the budget
    assert search(anneal, 3) == search(anneal, 3)  # seeded: the same points scored


def matmul_node(m=32, k=32, n=32):
    g = Graph("t")
    g.output(g.matmul(g.parameter("x", (m, k)), g.parameter("w", (k, n))), "y")
    fused, _ = run_pipeline(g)
    return fused, fused[fused.outputs["y"]]


class ByParams(CostModel):
    """A model scoring a kernel by a function of its parameters."""

    def __init__(self, name, f):
        self.name, self.f = name, f

    def kernel_cycles(self, kernel, cfg):
        return self.f(kernel.params), {}


def test_an_annealing_tuner_runs_and_beats_the_default(a100):
    graph, node = matmul_node()
    cost = CalibratedCost()
    r = Tuner(a100, cost, strategy="anneal", budget=20, cache=False).tune_node(graph, node)
    default = cost.cost(lower_node(graph, node), a100).cycles
    assert r.evaluated <= 21 and r.cycles <= default


def test_ties_within_one_percent_are_broken_by_the_tie_break_model(a100):
    graph, node = matmul_node()
    # BM/BN decide by the first model up to 0.5 %; the second prefers TM = 2 among them
    first = ByParams("first", lambda p: 1000.0 + 5 * (p["BM"] == 16) * (p["BN"] == 16) + 100 * (p["BK"] != 8)
                     + 100 * (p["TN"] != 1) + 100 * (not p["use_shared"]))
    second = ByParams("second", lambda p: 500.0 - 50 * (p["TM"] == 2))
    plain = Tuner(a100, first, strategy="grid", cache=False).tune_node(graph, node)
    tuned = Tuner(a100, first, strategy="grid", cache=False, tie_break=second).tune_node(graph, node)
    assert plain.params["TM"] != 2 or plain.params["BM"] != 16  # the first model alone: any of its ties
    assert tuned.params["TM"] == 2 and tuned.params["BK"] == 8 and tuned.params["use_shared"]
    assert len(tuned.tied) > 1 and all(c <= plain.cycles * 1.01 for c in
                                       [first.cost(lower_node(graph, node, p), a100).cycles for p, _ in tuned.tied])
    assert tuned.cycles == 500.0 - 50 + second.cost(lower_node(graph, node), a100).cycles - 500.0


def test_a_refit_moves_the_calibrated_predictions_toward_the_tuners_simulations(a100, sim, tmp_path):
    path = tmp_path / "calibration.json"
    shutil.copy(DEFAULT_PATH, path)
    graph, node = matmul_node(64, 64, 64)
    tuner = Tuner(a100, sim, budget=6, cache=False)
    tuner.tune_node(graph, node)
    assert len(tuner.simulations) >= 6
    before = Calibration.load(path)
    x = np.array([features(k, a100) for k, _ in tuner.simulations])
    y = np.array([c for _, c in tuner.simulations])
    error_before = np.abs([before.predict(r) for r in x] - y).mean()
    refitted = tuner.refit(path)
    error_after = np.abs([refitted.predict(r) for r in x] - y).mean()
    assert error_after < error_before
    saved = json.loads(path.read_text())
    assert tuple(saved["coefficients"]) == refitted.coefficients != before.coefficients
    assert saved["training"]["refits"] == 1 and saved["training"]["refit_kernels"] == len(y)


def test_refit_needs_simulations(a100, tmp_path):
    with pytest.raises(Exception, match="no simulations to refit the calibrated model from"):
        Tuner(a100, CalibratedCost(), cache=False).refit(tmp_path / "c.json")
