"""The compiled timing engine and the same functions run as plain Python (NUMBA_DISABLE_JIT=1, what a
debugger or a coverage run sees) give identical results: every field of the kernel's timing record.

One small run per unit and per policy — the four warp schedulers, the three replacement policies in
the L1 and in the L2 (caches small enough that each policy's victims change the hit counts), shared
memory and barriers, atomics, shuffles, issue width 2, the crossbar's ports, a warm (dirty) L2 whose
write-backs reach DRAM. All the plain-Python runs go in ONE subprocess (a few seconds in all), started
first so that it overlaps the in-process compiled runs. Marked slow; CI runs it with the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpusim

pytestmark = pytest.mark.slow

# The runner, executed in this process (compiled) and in the subprocess (plain Python): the same code.
RUNNER = r'''
import dataclasses, json
from functools import partial

import gpusim
from gpusim.stats.simulate import configure, timed_execute
from gpusim.workloads import load_workload


def _plain(o):
    return o.item() if hasattr(o, "item") else repr(o)


def run_case(case):
    """The timing record of one case, as JSON-normalised data (tuples as lists, numpy scalars as Python)."""
    cfg = configure(case["cfg"], None, case.get("overrides"))
    if case.get("warm_l2") is None:
        timing = gpusim.simulate(case["workload"], cfg, **case["params"]).timing
    else:  # simulate() has no warm_l2: run the workload with the timed executor's option
        run = load_workload(case["workload"]).run(case["params"], cfg,
                                                  executor=partial(timed_execute, warm_l2=case["warm_l2"]))
        run.check()
        timing = run.result.timing
    return json.loads(json.dumps(dataclasses.asdict(timing), default=_plain))
'''

MAIN = r'''
import sys
import numba
from numba.core.dispatcher import Dispatcher
from gpusim.timing import engine

cases = json.loads(sys.argv[1])
out = {"jit_disabled": bool(numba.config.DISABLE_JIT) and not isinstance(engine.run, Dispatcher),
       "runs": {name: run_case(case) for name, case in cases.items()}}
print(json.dumps(out))
'''

ONE_SM = {"chip.sm_count": 1}
TWO_SMS = {"chip.sm_count": 2}
# gtx980's L1 does not cache global loads; cached here, and small (8 sets of 4 ways), so that the
# policies choose different victims (L1 hit sectors differ: lru 2865, fifo 2818, srrip 3008)
SMALL_L1 = {**ONE_SM, "l1.caches_global_loads": True, "l1.size_bytes": 4096}
# one slice of 4 sets x 16 ways (L2 hit sectors differ: lru 320, fifo 512, srrip 244)
SMALL_L2 = {**ONE_SM, "l2.size_bytes": 8192, "l2.slices": 1}


def _cases(crossbar_yaml: str) -> dict[str, dict]:
    c = {}
    for s in ("gto", "lrr", "two_level", "oldest_first"):
        # 64 warps on one SM (16 a sub-partition, more than two_level's active set of 4)
        c[f"saxpy-{s}"] = dict(workload="saxpy", cfg="a100", params={"n": 2048},
                               overrides={**ONE_SM, "scheduler.policy": s, "scheduler.active_warps_two_level": 4})
    for r in ("lru", "fifo", "srrip"):
        c[f"l1-{r}"] = dict(workload="matmul_naive", cfg="gtx980", params={"n": 32, "tile": 8},
                            overrides={**SMALL_L1, "l1.replacement": r})
        c[f"l2-{r}"] = dict(workload="softmax", cfg="gtx980", params={"rows": 8, "cols": 256},
                            overrides={**SMALL_L2, "l2.replacement": r})
    c["shared-barriers"] = dict(workload="matmul_tiled", cfg="a100", params={"n": 32}, overrides=TWO_SMS)
    c["atomics"] = dict(workload="histogram", cfg="a100", params={"n": 4096, "block": 256, "per_thread": 4},
                        overrides=TWO_SMS)
    c["shuffles"] = dict(workload="reduce_sum_shfl", cfg="a100", params={"n": 2048}, overrides=TWO_SMS)
    c["issue-width-2"] = dict(workload="reduce_sum", cfg="gtx980", params={"n": 2048},
                              overrides={**TWO_SMS, "scheduler.issue_width": 2})
    c["crossbar-ports"] = dict(workload="saxpy", cfg=crossbar_yaml, params={"n": 2048}, overrides=TWO_SMS)
    c["warm-l2"] = dict(workload="saxpy", cfg="a100", params={"n": 4096}, warm_l2=0.5,
                        overrides={**TWO_SMS, "l2.size_bytes": 65536, "l2.slices": 2})
    return c


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    # the crossbar's latency and per-slice ports are 0 on the shipped configs (and an override cannot
    # add the section): a config that extends a100 with them
    p = tmp_path_factory.mktemp("cfg") / "a100_crossbar.yaml"
    p.write_text("extends: a100\ninterconnect: {latency_cycles: 7, port_bytes_per_cycle: 16}\n")
    return _cases(str(p))


@pytest.fixture(scope="module")
def plain(cases):
    """Start the plain-Python runs (one subprocess); the first test to need them waits."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    # the subprocess imports the same gpusim as this process
    root = str(Path(gpusim.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    proc = subprocess.Popen([sys.executable, "-c", RUNNER + MAIN, json.dumps(cases)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    result = {}

    def get():
        if not result:
            out, err = proc.communicate(timeout=300)
            result["error"] = f"plain-Python runs failed (exit {proc.returncode}):\n{err[-4000:]}"
            if proc.returncode == 0:
                result.update(json.loads(out.strip().splitlines()[-1]), error=None)
        assert result["error"] is None, result["error"]
        assert result["jit_disabled"], "the subprocess did not run the engine as plain Python"
        return result["runs"]

    yield get
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


@pytest.fixture(scope="module")
def compiled():
    from numba.core.dispatcher import Dispatcher

    from gpusim.timing import engine

    if not isinstance(engine.run, Dispatcher):
        pytest.skip("this process runs with NUMBA_DISABLE_JIT=1: nothing compiled to compare with")
    ns: dict = {}
    exec(RUNNER, ns)
    memo: dict[str, dict] = {}

    def run(case):
        key = json.dumps(case, sort_keys=True)
        if key not in memo:
            memo[key] = ns["run_case"](case)
        return memo[key]

    return run


NAMES = list(_cases("crossbar.yaml"))


@pytest.mark.parametrize("name", NAMES)
def test_plain_python_matches_compiled(name, cases, plain, compiled):
    want = compiled(cases[name])
    got = plain()[name]
    assert got["cycles"] == want["cycles"]
    diff = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
    assert not diff, f"fields differ: {diff}"
    assert got == want


def test_cases_exercise_what_they_name(cases, compiled):
    # each policy's case must show that policy at work: the runs of one family differ
    def l1_hits(t):
        return sum(s["l1_hit_sectors"] for s in t["sms"])

    runs = {name: compiled(case) for name, case in cases.items()
            if name.split("-")[0] in ("saxpy", "l1", "l2", "crossbar", "warm")}
    assert len({runs[f"saxpy-{s}"]["cycles"] for s in ("gto", "lrr", "two_level", "oldest_first")}) == 4
    assert len({l1_hits(runs[f"l1-{r}"]) for r in ("lru", "fifo", "srrip")}) == 3
    assert len({runs[f"l2-{r}"]["l2"]["hit_sectors"] for r in ("lru", "fifo", "srrip")}) == 3
    # the crossbar's latency and ports add cycles; the warm L2's dirty victims are written to DRAM
    plain_a100 = compiled({**cases["crossbar-ports"], "cfg": "a100"})
    assert runs["crossbar-ports"]["cycles"] > plain_a100["cycles"]
    assert runs["warm-l2"]["dram"]["bytes_written"] > 0
    assert runs["warm-l2"]["l2"]["prefilled_dirty_bytes"] > 0
