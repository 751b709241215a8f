"""Acceptance 7: warp-state accounting. Every resident warp-cycle is attributed to exactly one Nsight
Compute state, so per SM the states sum to warp_cycles; the dominant states match the workloads."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.timing import WARP_STATES
from tests.timing.helpers import config, sim, time_kernel

TWO_SMS = {"chip.sm_count": 2}

CASES = [
    ("vecadd", {"n": 8192}),
    ("reduce_sum", {"n": 8192}),
    ("reduce_sum_shfl", {"n": 8192}),
    ("transpose_shared", {"rows": 64, "cols": 96}),
    ("transpose_naive", {"rows": 64, "cols": 96}),
    ("pointer_chase", {"footprint": 4096, "stride": 128, "steps": 100}),
    ("shared_bank_conflict", {"n": 1000, "block": 128, "stride": 32, "iters": 4}),
    ("histogram", {"n": 4096, "per_thread": 4}),
    ("divergence", {"n": 2000, "block": 128, "paths": 8, "k": 5}),
    ("matmul_tiled", {"n": 37}),
    ("softmax", {"rows": 8, "cols": 256, "block": 128}),
    ("stream_copy", {"n": 5001, "block": 128, "grid": 4}),
    ("sfu_peak", {"n": 512, "iters": 4}),
]


@pytest.mark.parametrize("scheduler", ["gto", "lrr", "two_level"])
@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
@pytest.mark.parametrize("workload,params", CASES, ids=[c[0] for c in CASES])
def test_states_sum_to_warp_cycles(workload, params, cfg, scheduler):
    r = sim(workload, cfg, scheduler=scheduler, overrides=TWO_SMS, **params)
    t = r.timing
    totals = dict.fromkeys(WARP_STATES, 0)
    for s in t.sms:
        assert set(s.warp_states) == set(WARP_STATES)
        assert all(v >= 0 for v in s.warp_states.values()), s.warp_states
        assert sum(s.warp_states.values()) == s.warp_cycles, (s.sm, s.warp_states, s.warp_cycles)
        assert s.warp_states["selected"] == s.issued  # one 'selected' cycle per issued instruction
        assert s.warp_cycles <= s.max_warps_resident * t.cycles
        for k, v in s.warp_states.items():
            totals[k] += v
    assert totals == t.warp_states
    # every instruction the functional run executed was issued by the timing model, once
    assert t.warp_instructions == r.run.result.stats.warp_instructions
    # every block ran once, within the kernel's cycles, and the last one to retire ends it
    stats = r.run.result.stats
    assert sorted(b for b, _, _, _ in t.timeline) == list(range(stats.blocks))
    assert all(0 <= start <= end <= t.cycles for _, _, start, end in t.timeline)
    assert max(end for _, _, _, end in t.timeline) == t.cycles
    assert sum(s.blocks for s in t.sms) == stats.blocks and sum(s.warps for s in t.sms) == stats.warps


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
@pytest.mark.parametrize("workload,params", [("reduce_sum", {"n": 8192}),
                                             ("transpose_shared", {"rows": 64, "cols": 96})])
def test_barrier_state_on_barrier_kernels(workload, params, cfg):
    ws = sim(workload, cfg, overrides=TWO_SMS, **params).timing.warp_states
    assert ws["barrier"] > 0
    # and none on a kernel without bar.sync
    assert sim("vecadd", cfg, overrides=TWO_SMS, n=8192).timing.warp_states["barrier"] == 0


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_pointer_chase_is_long_scoreboard_bound(cfg):
    # One thread waits out each dependent global load (L2/DRAM latency 200-350 cycles) against about
    # 22-31 cycles of loop instructions: long_scoreboard is the majority state.
    ws = sim("pointer_chase", cfg, overrides=TWO_SMS, footprint=4096, stride=128, steps=100).timing.warp_states
    total = sum(ws.values())
    assert max(ws, key=ws.get) == "long_scoreboard"
    assert ws["long_scoreboard"] > 0.8 * total, ws


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_bank_conflicts_show_as_mio_throttle_or_short_scoreboard(cfg):
    # 32-way conflicts keep the shared pipe (MIO) busy 32 cycles per access: warps wait for it to take
    # their load (mio_throttle) or for their load's data (short_scoreboard).
    ws = sim("shared_bank_conflict", cfg, overrides=TWO_SMS, n=1000, block=128, stride=32, iters=4).timing.warp_states
    total = sum(ws.values())
    assert ws["mio_throttle"] + ws["short_scoreboard"] > 0.5 * total, ws
    ws1 = sim("shared_bank_conflict", cfg, overrides=TWO_SMS, n=1000, block=128, stride=1, iters=4).timing.warp_states
    assert ws1["mio_throttle"] + ws1["short_scoreboard"] < ws["mio_throttle"] + ws["short_scoreboard"]


STORE_THEN_EXIT = """
.kernel store_exit
.param .u64 out
.reg .u64 %b
.reg .f32 %x
    mov.f32 %x, 1.0;
    ld.param.u64 %b, [out];
    st.global.f32 [%b], %x;
    exit;
"""

NO_STORE = """
.kernel no_store
.param .u64 out
.reg .f32 %x
    mov.f32 %x, 1.0;
    add.f32 %x, %x, 1.0;
    exit;
"""


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_drain_after_store(cfg):
    # The store issues at t and is acknowledged by the L2 slice l2.hit_latency_cycles later; exit issues
    # at t + 1 and the warp stays resident (drain) until the ack at t + latency: latency - 2 drain cycles.
    lat = config(cfg).l2.hit_latency_cycles
    t = time_kernel(STORE_THEN_EXIT, cfg, arrays={"out": np.zeros(1, dtype=np.float32)})
    assert t.warp_states["drain"] == lat - 2, t.warp_states
    assert sum(t.sms[0].warp_states.values()) == t.sms[0].warp_cycles
    t0 = time_kernel(NO_STORE, cfg, arrays={"out": np.zeros(1, dtype=np.float32)})
    assert t0.warp_states["drain"] == 0
    assert t.cycles > t0.cycles + lat // 2


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_drain_appears_in_store_workloads(cfg):
    assert sim("vecadd", cfg, overrides=TWO_SMS, n=8192).timing.warp_states["drain"] > 0
