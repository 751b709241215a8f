"""Every statistic of the timing model, frozen: the whole `KernelTiming` (cycles, launch overhead, each
SM's counters, the sorted block timeline, the L2 and DRAM dicts, the warp states) of small runs that
cover every shipped workload, the three scheduler policies on the A100 and the GTX 980, the CPU-like
design, L1 and L2 variants (2 MSHRs, L1-cached global loads on the GTX 980, write-allocate, a
write-through L2, a tiny L2 that evicts dirty lines), two-wide issue, a sampled run, a warm-L2 start
and a run stopped at its cycle limit. A rewrite of the timing model (a compiled engine) must
reproduce all of them exactly; a speed-up must not move any; a deliberate change to the model
updates the fixture:

    python -m tests.timing.test_full_stats --update

(and says why in its commit). A mismatch names the first differing statistics by path, e.g.
`saxpy/a100/gto/n=16384: sms[3].warp_states.long_scoreboard: got 1240 != pinned 1234`.

The fixture holds one run a line, its statistics as compact JSON (floats as Python writes them, which
read back exactly)."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gpusim
from gpusim.analysis.sampling import simulate_sampled
from gpusim.errors import SimulationLimitError
from gpusim.stats.simulate import configure
from gpusim.timing import GPU

FIXTURE = Path(__file__).with_name("full_stats.json")
SHOWN = 8  # differing statistics a failure lists


@dataclass(frozen=True)
class Run:
    """One simulation: `gpusim.simulate(workload, config, scheduler=, overrides=, **params)`; with
    `max_cycles`, one that must stop at that cycle (its SimulationLimitError is recorded); with
    `sampled`, `simulate_sampled(..., sample="on")`; with `warm_l2`, `GPU(cfg).run(..., warm_l2=)` fed
    the workload's recorded block streams."""

    workload: str
    config: str
    scheduler: str
    params: dict[str, int] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    max_cycles: int | None = None
    sampled: bool = False
    warm_l2: float | None = None

    @property
    def key(self) -> str:
        parts = [self.workload, self.config, self.scheduler, _kv(self.params)]
        if self.overrides:
            parts.append(_kv(self.overrides))
        if self.max_cycles is not None:
            parts.append(f"max_cycles={self.max_cycles}")
        if self.sampled:
            parts.append("sampled")
        if self.warm_l2 is not None:
            parts.append(f"warm_l2={self.warm_l2}")
        return "/".join(parts)


def _kv(d: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(d.items())) or "defaults"


TINY_L2 = {"chip.sm_count": 4, "l2.slices": 4, "l2.size_bytes": 32 * 1024}  # 64 sets: stream_copy evicts dirty lines

RUNS = [
    # the three policies on both GPUs
    Run("reduce_sum", "a100", "gto", {"n": 1 << 16}),
    Run("matmul_tiled", "a100", "lrr", {"n": 64}),
    Run("reduce_sum_shfl", "a100", "two_level", {"n": 1 << 16}),
    Run("transpose_naive", "gtx980", "gto", {"rows": 256, "cols": 256}),
    Run("saxpy", "gtx980", "lrr", {"n": 1 << 14}),
    Run("matmul_tiled", "gtx980", "two_level", {"n": 64}),
    # every other shipped workload
    Run("divergence", "a100", "lrr", {"n": 1 << 14, "paths": 4, "k": 3}),
    Run("ffma_peak", "a100", "gto", {"n": 1 << 14, "iters": 4}),
    Run("gemm_tiled", "a100", "two_level", {"m": 64, "k": 48, "n": 32}),
    Run("histogram", "a100", "gto", {"n": 1 << 16}),
    Run("pointer_chase", "a100", "gto", {"steps": 1024}),
    Run("shared_bank_conflict", "a100", "gto", {"stride": 32}),
    Run("sfu_peak", "gtx980", "gto", {"n": 1 << 14}),
    Run("softmax", "a100", "gto", {"rows": 64}),
    Run("stream_copy", "a100", "gto", {"n": 1 << 16, "grid": 64}),
    Run("transpose_shared", "gtx980", "lrr", {"rows": 256, "cols": 256}),
    Run("vecadd", "a100", "two_level", {"n": 1 << 14}),
    Run("matmul_naive", "cpu_like", "gto", {"n": 64}),  # write-back, write-allocate L1; 2 sub-partitions
    # memory-system and issue variants
    Run("matmul_naive", "a100", "gto", {"n": 64}, {"l1.mshr_entries": 2}),
    Run("matmul_naive", "gtx980", "lrr", {"n": 64}, {"l1.caches_global_loads": True}),
    Run("softmax", "a100", "lrr", {"rows": 64}, {"l1.write_allocate": True}),
    Run("transpose_shared", "a100", "gto", {"rows": 256, "cols": 256}, {"l2.write_policy": "write_through"}),
    Run("stream_copy", "a100", "gto", {"n": 1 << 16, "grid": 64}, TINY_L2),
    Run("reduce_sum_shfl", "a100", "gto", {"n": 1 << 16}, {"scheduler.issue_width": 2}),
    # sampled (loops cut at four levels), a warm L2 (half its prefilled lines dirty), a cycle limit
    Run("ffma_peak", "a100", "gto", {"n": 4096, "iters": 20}, {"chip.sm_count": 4}, sampled=True),
    Run("saxpy", "a100", "gto", {"n": 1 << 14}, {"chip.sm_count": 4, "l2.slices": 8, "l2.size_bytes": 256 * 1024},
        warm_l2=0.5),
    Run("reduce_sum", "gtx980", "gto", {"n": 1 << 14}, max_cycles=600),
]


def timing_stats(t) -> dict:
    """A KernelTiming as plain JSON data: every field, the SMs' counters included."""
    return json.loads(json.dumps(dataclasses.asdict(t), default=_plain))


def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON data")


def measure(run: Run) -> dict:
    if run.sampled:
        r = simulate_sampled(run.workload, run.config, sample="on", scheduler=run.scheduler,
                             overrides=run.overrides or None, **run.params)
        runs = [{k: v for k, v in x.to_dict().items() if k != "wall_seconds"} for x in r.runs]
        return {"mode": r.mode, "cycles": r.cycles, "runs": runs, "detail": timing_stats(r.detail.timing)}
    if run.warm_l2 is not None:
        cfg = configure(run.config, run.scheduler, run.overrides or None)
        pl = gpusim.load_workload(run.workload).prepare(run.params)
        streams = gpusim.block_streams(pl.program, pl.launch, pl.args, pl.memory, cfg=cfg)
        return timing_stats(GPU(cfg).run(pl.program, pl.launch, streams, warm_l2=run.warm_l2))
    try:
        r = gpusim.simulate(run.workload, run.config, scheduler=run.scheduler, overrides=run.overrides or None,
                            max_cycles=run.max_cycles, **run.params)
    except SimulationLimitError as e:
        return {"limit_error": {"message": str(e), "cycle": e.cycle, "stuck": e.stuck}}
    return timing_stats(r.timing)


def differences(pinned, got, path: str = "") -> Iterator[str]:
    """Each statistic where `got` differs from `pinned`, as `path: got X != pinned Y` (a type counts:
    1234.0 is not 1234)."""
    if isinstance(pinned, dict) and isinstance(got, dict):
        for k in sorted(pinned.keys() | got.keys()):
            p = f"{path}.{k}" if path else str(k)
            if k not in got:
                yield f"{p}: missing (pinned {_short(pinned[k])})"
            elif k not in pinned:
                yield f"{p}: not pinned (got {_short(got[k])})"
            else:
                yield from differences(pinned[k], got[k], p)
    elif isinstance(pinned, list) and isinstance(got, list):
        if len(pinned) != len(got):
            yield f"{path}: length {len(got)} != pinned {len(pinned)}"
        for i, (a, b) in enumerate(zip(pinned, got, strict=False)):
            yield from differences(a, b, f"{path}[{i}]")
    elif type(pinned) is not type(got):
        yield f"{path}: got {_short(got)} ({type(got).__name__}) != pinned {_short(pinned)} ({type(pinned).__name__})"
    elif pinned != got and not (isinstance(pinned, float) and math.isnan(pinned) and math.isnan(got)):
        yield f"{path}: got {_short(got)} != pinned {_short(pinned)}"


def _short(x) -> str:
    s = repr(x)
    return s if len(s) <= 80 else s[:77] + "..."


@cache
def _pinned() -> dict:
    return json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.key)
def test_full_statistics_are_pinned(run):
    pinned = _pinned().get(run.key)
    assert pinned is not None, f"{run.key} is not in {FIXTURE.name}: python -m tests.timing.test_full_stats --update"
    diffs = list(differences(pinned, measure(run)))
    if diffs:
        shown = "\n  ".join(f"{run.key}: {d}" for d in diffs[:SHOWN])
        pytest.fail(f"{len(diffs)} statistics differ from {FIXTURE.name}:\n  {shown}", pytrace=False)


def test_the_fixture_holds_exactly_these_runs():
    assert len({r.key for r in RUNS}) == len(RUNS)
    assert list(_pinned()) == [r.key for r in RUNS]


def test_a_changed_statistic_is_named_by_its_path():
    pinned = _pinned()[RUNS[0].key]
    got = json.loads(json.dumps(pinned))
    assert list(differences(pinned, got)) == []
    got["sms"][3]["warp_states"]["long_scoreboard"] += 6
    got["l2"]["busy_cycles"] = int(got["l2"]["busy_cycles"])  # a float pinned, an int given
    got["timeline"].pop()
    del got["dram"]["requests"]
    found = list(differences(pinned, got))
    ls = pinned["sms"][3]["warp_states"]["long_scoreboard"]
    assert f"sms[3].warp_states.long_scoreboard: got {ls + 6} != pinned {ls}" in found
    assert any(d.startswith("l2.busy_cycles: got ") and "(int) != pinned" in d and "(float)" in d for d in found)
    assert f"timeline: length {len(pinned['timeline']) - 1} != pinned {len(pinned['timeline'])}" in found
    assert any(d.startswith("dram.requests: missing (pinned ") for d in found)
    assert len(found) == 4


def write_fixture() -> None:
    lines = [f"{json.dumps(r.key)}: {json.dumps(measure(r), sort_keys=True, separators=(',', ':'))}" for r in RUNS]
    FIXTURE.write_text("{\n" + ",\n".join(lines) + "\n}\n")


if __name__ == "__main__":
    if "--update" not in sys.argv:
        sys.exit("usage: python -m tests.timing.test_full_stats --update")
    write_fixture()
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes, {len(RUNS)} runs)")
