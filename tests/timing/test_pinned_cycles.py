"""Pinned cycle counts and warp-state breakdowns of the timing model on small runs of every shipped
workload, across configs and scheduler policies. A speed-up of the simulator must not move any of
them; a deliberate change to the model updates the pins:

    python -m tests.timing.test_pinned_cycles --update

(and says why in its commit). The bench suite's full-size cycle counts are pinned in
`gpusim/cli/bench_cmd.py` and checked by `gpusim bench`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import gpusim

PINS = Path(__file__).with_name("pinned_cycles.json")

CASES = [
    ("saxpy", "a100", "gto", {"n": 1 << 14}),
    ("saxpy", "gtx980", "lrr", {"n": 1 << 14}),
    ("matmul_tiled", "a100", "gto", {"n": 64}),
    ("matmul_tiled", "gtx980", "two_level", {"n": 64}),
    ("matmul_naive", "a100", "lrr", {"n": 64}),
    ("reduce_sum", "a100", "gto", {"n": 1 << 16}),
    ("reduce_sum_shfl", "a100", "two_level", {"n": 1 << 16}),
    ("transpose_shared", "a100", "gto", {"rows": 256, "cols": 256}),
    ("transpose_naive", "gtx980", "gto", {"rows": 256, "cols": 256}),
    ("histogram", "a100", "gto", {"n": 1 << 16}),
    ("divergence", "a100", "lrr", {}),
    ("softmax", "a100", "gto", {"rows": 64}),
    ("pointer_chase", "a100", "gto", {"steps": 1024}),
    ("shared_bank_conflict", "a100", "gto", {"stride": 32}),
    ("sfu_peak", "gtx980", "gto", {"n": 16384}),
]


def _key(case) -> str:
    wl, cfg, sched, params = case
    return f"{wl}/{cfg}/{sched}/" + ",".join(f"{k}={v}" for k, v in sorted(params.items()))


def _measure(case) -> dict:
    wl, cfg, sched, params = case
    k = gpusim.simulate(wl, cfg, scheduler=sched, **params).kernel
    return {"cycles": k["cycles"], "warp_states": k["warp_states"], "dram_bytes_read": k["dram_bytes_read"],
            "l2_hit_rate_pct": k["l2_hit_rate_pct"]}


@pytest.mark.parametrize("case", CASES, ids=_key)
def test_cycles_are_pinned(case):
    expected = json.loads(PINS.read_text())[_key(case)]
    assert _measure(case) == expected


if __name__ == "__main__":
    if "--update" not in sys.argv:
        sys.exit("usage: python -m tests.timing.test_pinned_cycles --update")
    PINS.write_text(json.dumps({_key(c): _measure(c) for c in CASES}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINS}")
