"""Acceptance 1: a chain of dependent FFMAs runs at one FP32 latency per instruction; independent
FFMAs issue at the FP32 unit's throughput. One warp (1 block of 32 threads) on one SM; the fixed
overhead (launch, the final store's drain) cancels in the difference between N and 2N FFMAs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.timing.helpers import config, time_kernel

N = 64


def _ffma_kernel(n: int, dependent: bool) -> str:
    if dependent:  # each FFMA reads the previous one's result
        body = ["    fma.rn.f32 %a0, %a0, 0.999, 0.001;"] * n
    else:  # all read %x; 16 rotating destinations, so no WAW stall either (reused every 16 issues)
        body = [f"    fma.rn.f32 %a{i % 16}, %x, 0.999, 0.001;" for i in range(n)]
    return "\n".join([
        ".kernel ffma_chain",
        ".param .u64 out",
        ".reg .f32 %a<16>, %x",
        ".reg .u64 %b",
        "    mov.f32 %x, 1.0;",
        "    mov.f32 %a0, 1.0;",
        *body,
        "    ld.param.u64 %b, [out];",
        "    st.global.f32 [%b], %a0;",
        "    exit;",
    ])


def _cycles(cfg: str, n: int, dependent: bool) -> int:
    out = np.zeros(32, dtype=np.float32)
    return time_kernel(_ffma_kernel(n, dependent), cfg, arrays={"out": out}).cycles


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_dependent_ffma_chain_runs_at_fp32_latency(cfg):
    # Each FFMA issues when its predecessor's result lands: N more FFMAs cost N x latency cycles
    # (a100: 4, gtx980: 6 from units.fp32.latency_cycles).
    lat = config(cfg).units["fp32"].latency_cycles
    delta = _cycles(cfg, 2 * N, True) - _cycles(cfg, N, True)
    assert delta == pytest.approx(N * lat, rel=0.05), (delta, N * lat)


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_independent_ffma_issue_at_unit_throughput(cfg):
    # A warp of 32 threads occupies an L-lane unit ceil(32/L) cycles: a100 16 lanes -> one FFMA per
    # 2 cycles; gtx980 32 lanes -> 1 per cycle (issue width 1 allows no more). N more FFMAs: N x that.
    c = config(cfg)
    interval = math.ceil(c.sm.warp_size / c.units["fp32"].lanes_per_subpartition)
    assert interval == {"a100": 2, "gtx980": 1}[cfg]
    delta = _cycles(cfg, 2 * N, False) - _cycles(cfg, N, False)
    assert delta == pytest.approx(N * interval, rel=0.05), (delta, N * interval)


def test_dependent_chain_slower_than_independent():
    # Latency-bound (4 cycles each) vs throughput-bound (2 cycles each) on a100.
    assert _cycles("a100", 2 * N, True) > _cycles("a100", 2 * N, False) + N
