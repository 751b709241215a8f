"""The best point of a sweep: compared only within one problem size, and ties within the stated
threshold reported as ties (not a winner over a 0.3 % spread). Rows built by hand, so the expected
choices are exact."""

import json

from gpusim.sweep.result import TIE_PCT, SweepResult


def _row(point, n, block, cycles, status="ok"):
    return {"point": point, "workload": "saxpy", "config": "a100", "config_hash": "h", "label": "a100", "n": n,
            "block": block, "warp_scheduler": "gto", "seed": 0, "status": status, "error": None, "verified": True,
            "cached": False, "wall_seconds": 0.1, "cycles": cycles, "kernel_seconds": cycles / 1.41e9,
            "achieved_occupancy": 0.5, "theoretical_occupancy": 1.0, "warp_states_pct.selected": 10.0,
            "warp_states_pct.long_scoreboard": 60.0, "verdict": "dram-bound", "verdict_reason": "DRAM 80 % busy"}


# The sweep: saxpy at two sizes and three block sizes, 1,068-1,071 cycles at n=65536.
CYCLES = {(16384, 128): 677, (16384, 256): 681, (16384, 512): 900,
          (65536, 128): 1071, (65536, 256): 1068, (65536, 512): 1069}


def _sweep(cycles=CYCLES, problem=("n",), tie_pct=TIE_PCT):
    rows = [_row(i, n, b, c) for i, ((n, b), c) in enumerate(cycles.items())]
    return SweepResult.build("saxpy", {"n": 1048576, "block": 256}, [], rows, {"seed": 0}, problem=problem,
                             tie_pct=tie_pct)


def test_each_problem_size_has_its_own_best():
    s = _sweep()
    assert s.problem == ["n"] and s.sizes() == [{"n": 16384}, {"n": 65536}]
    assert s.best(size={"n": 16384})["block"] == 128 and s.best(size={"n": 65536})["block"] == 256
    text = s.explain()
    assert "2 problem sizes (n): each point is compared only with points of its own size" in text
    # the small problem is not called faster than the large one
    assert "best at n=16384  block=128: 677 cycles" in text and "best at n=65536  block=256: 1,068 cycles" in text
    assert "n=65536" not in text.split("best at n=65536")[0]


def test_differences_under_the_threshold_are_ties():
    s = _sweep()
    assert [r["block"] for r in s.ties(size={"n": 65536})] == [512, 128]  # 1,069 and 1,071: within 1 %
    assert [r["block"] for r in s.ties(size={"n": 16384})] == [256]  # 681 within 1 % of 677; 900 is not
    text = s.explain()
    assert "ties             block=512 (1,069), block=128 (1,071): within 1% of the best" in text
    assert "vs worst         ties with block=128 (1,071 cycles, 3 more: within 1%)" in text
    assert "vs worst         223 fewer cycles (24.8%, 1.33x faster) than block=512 (900 cycles)" in text
    # a tighter threshold names the winner
    strict = _sweep(tie_pct=0.05)
    assert strict.ties(size={"n": 65536}) == [] and "ties  " not in strict.explain()


def test_json_carries_the_best_of_each_size_and_its_ties():
    d = json.loads(_sweep().to_json())
    assert d["best"] is None and d["problem"] == ["n"] and d["tie_pct"] == TIE_PCT
    assert d["best_by_size"] == [{"size": {"n": 16384}, "best": 0, "ties": [1]},
                                 {"size": {"n": 65536}, "best": 4, "ties": [5, 3]}]
    one = json.loads(_sweep({(4096, 64): 900, (4096, 128): 800}).to_json())
    assert one["best"] == 1 and one["best_by_size"] == [{"size": {}, "best": 1, "ties": []}]


def test_without_problem_parameters_every_point_is_one_problem():
    s = _sweep(problem=())
    assert s.sizes() == [{}] and s.best()["cycles"] == 677
    assert "problem sizes" not in s.explain() and s.explain().startswith("best        n=16384 block=128: 677")
