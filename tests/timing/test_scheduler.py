"""Acceptance 5: the warp-scheduler policies (lrr, gto, two_level) change the timing of a
latency-bound workload, and the timing model is deterministic."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys

import pytest

from gpusim.stats.simulate import simulate
from tests.timing.helpers import sim

ONE_SM = {"chip.sm_count": 1}
POLICIES = ("lrr", "gto", "two_level")


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_policies_differ_on_latency_bound_workload(cfg):
    # vecadd on one SM: 16 blocks of 256 threads, 64 warps resident (16 per scheduler, more than the
    # two-level active set of 8), every warp waiting on two global loads: the order in which the
    # schedulers pick warps changes how loads overlap, hence the cycles.
    cyc = {p: sim("vecadd", cfg, scheduler=p, overrides=ONE_SM, n=16384).timing.cycles for p in POLICIES}
    assert len(set(cyc.values())) == 3, cyc
    # same work whatever the order
    wi = {p: sim("vecadd", cfg, scheduler=p, overrides=ONE_SM, n=16384).timing.warp_instructions for p in POLICIES}
    assert len(set(wi.values())) == 1


def test_policies_also_differ_on_shared_memory_loop():
    cyc = {p: sim("shared_bank_conflict", "a100", scheduler=p, overrides=ONE_SM, n=2048, block=1024, stride=1,
                  iters=16).timing.cycles for p in POLICIES}
    assert len(set(cyc.values())) == 3, cyc


def test_policy_irrelevant_with_a_single_warp():
    # one thread, one warp: there is never a choice to make
    cyc = {p: sim("pointer_chase", "a100", scheduler=p, overrides=ONE_SM, footprint=8192, stride=128,
                  steps=200).timing.cycles for p in POLICIES}
    assert len(set(cyc.values())) == 1, cyc


def _fresh(workload, cfg, **kw):
    return simulate(workload, cfg, **kw).timing  # bypass the helpers' cache on purpose


@pytest.mark.parametrize("workload,cfg,kw", [
    ("transpose_shared", "a100", {"overrides": {"chip.sm_count": 4}, "rows": 64, "cols": 96}),
    ("histogram", "gtx980", {"overrides": {"chip.sm_count": 2}, "n": 4096, "per_thread": 4}),
    ("vecadd", "a100", {"scheduler": "two_level", "overrides": ONE_SM, "n": 16384}),
    ("stream_copy", "gtx980", {"scheduler": "lrr", "n": 5001, "block": 128, "grid": 4}),
])
def test_deterministic(workload, cfg, kw):
    a, b = _fresh(workload, cfg, **kw), _fresh(workload, cfg, **kw)
    assert a.cycles == b.cycles
    # every counter, per SM, of the L2 and DRAM, and the block timeline
    assert dataclasses.asdict(a) == dataclasses.asdict(b)


_DIGEST = """
import dataclasses, hashlib, json
from gpusim.stats.simulate import simulate
t = simulate("histogram", "gtx980", overrides={"chip.sm_count": 2}, n=4096, per_thread=4).timing
print(hashlib.sha256(json.dumps(dataclasses.asdict(t), sort_keys=True, default=str).encode()).hexdigest())
"""


def test_deterministic_across_processes_and_hash_seeds():
    # set/dict iteration over str keys depends on PYTHONHASHSEED: the counters must not
    here = _fresh("histogram", "gtx980", overrides={"chip.sm_count": 2}, n=4096, per_thread=4)
    expect = hashlib.sha256(json.dumps(dataclasses.asdict(here), sort_keys=True, default=str).encode()).hexdigest()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _DIGEST], env=env, cwd=root, capture_output=True, text=True,
                             check=True)
        assert out.stdout.strip() == expect, seed


def _with_timeout(seconds: int, fn):
    def expire(signum, frame):
        raise TimeoutError(f"the simulation did not finish within {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("policy", [
    "gto", "lrr",
    "two_level",  # warps at a barrier leave the active set, so their block-mates can reach it
])
def test_policies_terminate_on_barrier_kernel_with_more_warps_than_active_set(policy):
    # matmul_tiled n=37 on one a100 SM: 8 blocks of 8 warps resident, 16 warps per scheduler, twice
    # the two-level active set (8); the warps of a block meet at bar.sync. (Takes well under a second.)
    t = _with_timeout(8, lambda: _fresh("matmul_tiled", "a100", scheduler=policy, overrides=ONE_SM, n=37))
    for s in t.sms:
        assert s.max_warps_resident > 4 * 8
        assert sum(s.warp_states.values()) == s.warp_cycles
        assert s.warp_states["barrier"] > 0
