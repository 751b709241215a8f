"""The whole kernel's statistics from a sample (docs/sampling.md, "Whole-kernel statistics").

Every counter of the timing model (issue, warp states, unit busy cycles, L1, L2 and DRAM sectors and
bytes, busy cycles) is estimated as a linear mix of the sampled runs' counters and of their snapshots
(the counters as they stood at three points of the run's steady state, `GPU.run(snapshots=...)`): each
run is extended to the whole grid at its own loop level at its steady rate per warp instruction,
(X_3 - X_1) / (I_3 - I_1), so the ramp, the cold first wave, the L2's fill and the drain count once, as
they do in the kernel; the runs at the two highest levels are fitted linearly in a block's warp instructions and
taken to the kernel's (as the per-wave time is); runs from a warm L2 weigh the share of the waves after
the L2's fill. Counters of time (active cycles, warp-cycles, warp states) are then scaled to the
estimated cycles. The metrics and the bottleneck verdict are computed from those counters as from a
full run's (`SimResult.build`).

Each numeric metric's bound adds, as the cycles' does, the moves of the metric under the alternatives:
"waves", the steady rate between the later two snapshots against the earlier two; "loops", the
fit on the two lowest levels; "L2 fill", the warm share with the fill a quarter earlier or later;
"extrapolation", the extended part of every counter as uncertain as the cycles' (their relative bound);
"ramp", every counter at its run's mean rate (the run's ramp and drain, and its first waves in step, as
often in the kernel as in the run); "write-backs", for a kernel whose data overflows the L2 and that
writes, the DRAM's written bytes if every sector the rest of the grid writes were written back once (the
steady state's conservation, against the rate the sample measured); and "cycles", the time-like
counters stretched to the cycles' bound; at least CONFIDENCE_FLOOR of the value, and PCT_FLOOR points
of a percentage."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from gpusim.analysis.sampling.estimate import DRAM_ADDITIVE, L2_ADDITIVE, TIME_LIKE, combine
from gpusim.analysis.sampling.model import CONFIDENCE_FLOOR, LOOP_DRIFT_FACTOR, Estimate, eviction_fraction
from gpusim.analysis.sampling.plan import LOOP_LEVELS, Plan
from gpusim.analysis.sampling.profile import KernelProfile
from gpusim.analysis.sampling.run import SampleRun, subset_config
from gpusim.stats.metrics import flatten
from gpusim.stats.report import SimResult

FILL_DOUBT = 0.25  # the "L2 fill" alternatives: the fill this fraction earlier and later
PCT_FLOOR = 0.25  # a percentage's bound is at least this many points wider (a small warp state is noise)

Mix = list[tuple[Any, float, float]]  # (KernelTiming, weight of work-like counters, of time-like ones)
# the percentages an SM subset does not measure for the kernel (`_on_subset`): their bound is 0 to 100 %
SUBSET_UNBOUNDED = ("l2_busy_pct", "memory_throughput_pct")
RATE_WAVES = 4  # work-like counters extend at a run's steady rate where its snapshots span this many waves


class WholeKernel:
    """What SimResult.build reads of a run, for the whole kernel estimated from a sample: the kernel's
    provenance, the functional stats of the profiled blocks scaled to the kernel (thread instructions,
    SIMT efficiency), no verification of the whole (the sample's `verification` says what was checked)."""

    ok = None
    bytes_moved = None

    def __init__(self, wl, params: dict[str, Any], seed: int, launch, stats, flops):
        self.workload, self.params, self.seed, self.launch = wl.name, dict(params), seed, launch
        self.result = type("R", (), {"stats": stats})()
        self.flops = flops

    def summary(self) -> dict[str, Any]:
        st = self.result.stats
        return {"verified": None, "stats": st.to_dict() if st is not None else None}


def extended(run: SampleRun, grid: int, blocks_per_wave: int, rate: str = "all", scale: float = 1.0) -> Mix:
    """`run` extended to the whole grid at its own level, as a linear mix of the run's timing and its
    snapshots: each part (timing, weight of its work-like counters, weight of its time-like ones).

    Time-like counters (warp-cycles, warp states, active cycles: what is resident at each cycle) extend
    at their steady rate between two snapshots taken (the engine takes one when it next stops for the
    feeder, which it stops doing once the run's last blocks are loaded): the first and the last
    ("all"), the first and the middle one ("early"), the middle and the last ("late"): the run's ramp
    and drain count once, as in the kernel. Work-like counters (instructions, sectors, bytes: what a
    block does) extend at the same steady rate where the snapshots span RATE_WAVES waves or more (a
    long run in its steady state: the L2's write-backs after its fill), else at the run's mean rate per
    block: between two snapshots of a short run, the blocks in flight (whose loads come first and
    stores last) are not in the same phase, and the rate is biased (reduce_sum: 20 % fewer DRAM bytes).
    `scale` multiplies the extension (the "extrapolation" alternatives); `rate` "mean": every counter at
    the run's mean rate (the "ramp" alternative: the ramp and drain as often as the run has them)."""
    t = run.timing
    snaps = [s for s in (t.snapshots or []) if s is not None]
    mean = 1 + (grid / run.blocks - 1) * scale  # the run's counters at its mean rate per block
    extra = run.warp_instructions * (grid / run.blocks - 1)  # warp instructions of the rest of the grid
    if len(snaps) < 2 or extra <= 0 or rate == "mean":
        return [(t, mean, mean)]
    if len(snaps) < 3:
        rate = "all"
    a, b = {"all": (snaps[0], snaps[-1]), "early": (snaps[0], snaps[1]), "late": (snaps[1], snaps[-1])}[rate]
    di = b.warp_instructions - a.warp_instructions
    if di <= 0:
        return [(t, mean, mean)]
    f = extra / di * scale
    if len(snaps[-1].timeline) - len(snaps[0].timeline) >= RATE_WAVES * blocks_per_wave:
        return [(t, 1.0, 1.0), (b, f, f), (a, -f, -f)]
    return [(t, mean, 1.0), (b, 0.0, f), (a, 0.0, -f)]


def _scaled(mix: Mix, w: float) -> Mix:
    return [(t, x * w, y * w) for t, x, y in mix]


def level_fit(runs: list[SampleRun], plan: Plan, prof: KernelProfile, rate: str = "all", lo: bool = False,
              scale: float = 1.0) -> Mix:
    """The runs (of one L2 start) extended to the grid and fitted linearly in a block's warp
    instructions over the two highest levels (`lo`: the two lowest), taken to the kernel's."""
    rs = sorted(runs, key=lambda r: -1 if r.loop_cap is None else r.loop_cap)
    if plan.kind == "loops":
        rs = rs[-LOOP_LEVELS:]
    G, B = prof.grid, prof.blocks_per_wave
    if len(rs) == 1 or rs[-1].loop_cap is None:
        return extended(rs[-1], G, B, rate, scale)
    a, b = (rs[0], rs[1]) if lo else (rs[-2], rs[-1])
    ya, yb = a.warp_instructions / a.blocks, b.warp_instructions / b.blocks
    t = (prof.per_block - ya) / (yb - ya) if yb != ya else 1.0
    return _scaled(extended(a, G, B, rate, scale), 1 - t) + _scaled(extended(b, G, B, rate, scale), t)


def warm_share(prof: KernelProfile, cfg, fill_scale: float = 1.0) -> float:
    """The share of the kernel's waves whose allocations evict (the mean eviction fraction)."""
    fill = prof.fill_waves(cfg.l2.size_bytes) * fill_scale
    if not math.isfinite(fill):
        return 0.0
    w = (np.arange(1024) + 0.5) * prof.waves / 1024
    return float(eviction_fraction(w, fill=fill, ways=cfg.l2.ways).mean())


def mixes(plan: Plan, cold: list[SampleRun], warm: list[SampleRun], prof: KernelProfile, cfg,
          confidence: float = 0.0) -> dict[str, list[Mix]]:
    """The whole kernel's counters as linear mixes of the runs' (and their snapshots'): "estimate", and
    the alternatives of each bound term (see the module docstring; "extrapolation": the extended part
    `confidence` larger and smaller, as uncertain as the cycles' extrapolation)."""
    def both(rate="all", lo=False, x=None, scale=1.0) -> Mix:
        c = level_fit(cold, plan, prof, rate, lo, scale)
        if not warm:
            return c
        x = warm_share(prof, cfg) if x is None else x
        return _scaled(c, 1 - x) + _scaled(level_fit(warm, plan, prof, rate, lo, scale), x)

    out = {"estimate": [both()], "extrapolation": [both(scale=1 + confidence), both(scale=1 - confidence)],
           "ramp": [both("mean")]}
    if any(len([s for s in (r.timing.snapshots or []) if s is not None]) >= 3 for r in cold):
        out["waves"] = [both("early"), both("late")]
    if len({r.loop_cap for r in cold}) >= 3:
        out["loops"] = [both(lo=True)]
    if warm:
        out["L2 fill"] = [both(x=warm_share(prof, cfg, s)) for s in (1 - FILL_DOUBT, 1 + FILL_DOUBT)]
    return out


def _timing(mix: Mix, cycles: int):
    """The KernelTiming of a mix, its time-like counters scaled to `cycles` (the mix's own cycles being
    the same mix of its parts' cycles)."""
    own = sum(wt * t.cycles for t, _, wt in mix)
    s = cycles / own if own > 0 else 1.0
    return combine([(t, w, wt * s) for t, w, wt in mix], cycles)


def _written_back(timing, plan: Plan, cold: list[SampleRun], warm: list[SampleRun]):
    """`timing` with the DRAM's written bytes as a steady state conserves them: the largest cold run's,
    plus one sector written back for every L2 sector written beyond that run's."""
    run = max(cold, key=lambda r: r.blocks).timing
    sector = timing.l2.get("sector_bytes", 32)
    written = run.dram["bytes_written"] + sector * max(0.0, timing.l2["write_sectors"] - run.l2["write_sectors"])
    return replace(timing, dram={**timing.dram, "bytes_written": written})


def _stretched(timing, factor: float):
    """`timing` with its cycles and its time-like counters `factor` times as large."""
    sms = [replace(s, **{k: round(getattr(s, k) * factor) for k in TIME_LIKE},
                   warp_states={k: round(v * factor) for k, v in s.warp_states.items()}) for s in timing.sms]
    return replace(timing, cycles=max(1, round(timing.cycles * factor)), sms=sms,
                   warp_states={k: round(v * factor) for k, v in timing.warp_states.items()})


def numeric(kernel: dict[str, Any]) -> dict[str, float]:
    """The kernel metrics that are numbers, by their flattened names."""
    return {k: float(v) for k, v in flatten(kernel) if isinstance(v, (int, float)) and not isinstance(v, bool)}


def whole_kernel(plan: Plan, cold: list[SampleRun], warm: list[SampleRun], prof: KernelProfile, est: Estimate,
                 cfg, part: WholeKernel, *, wall_seconds: float) -> SimResult:
    """The whole kernel's SimResult estimated from the plan's runs (see the module docstring), with
    `bounds` per numeric metric."""
    if plan.kind == "sms":
        return _on_subset(cold, prof, est, cfg, part, wall_seconds=wall_seconds)
    alts = mixes(plan, cold, warm, prof, cfg, est.confidence)
    [mix] = alts.pop("estimate")
    timing = _timing(mix, est.cycles)
    result = SimResult.build(cfg, part, timing, wall_seconds=wall_seconds)
    terms = [([_timing(m, est.cycles) for m in ms], 1.0) for ms in alts.values()]
    if prof.footprint > cfg.l2.size_bytes and prof.bytes_written > 0:
        terms.append(([_written_back(timing, plan, cold, warm)], 1.0))
    _bound(result, cfg, part, timing, terms, est.confidence)
    return result


def _bound(result: SimResult, cfg, part: WholeKernel, timing, terms: list[tuple[list, float]], confidence: float):
    """Set `result.bounds`: for each term (alternative timings, and a factor), the largest move of a metric
    under its alternatives times the factor; the terms add, with the time-like counters stretched to the
    cycles' bound, and at least CONFIDENCE_FLOOR of the value (PCT_FLOOR points of a percentage)."""
    base = numeric(result.kernel)
    terms = [*terms, ([_stretched(timing, f) for f in (1 + confidence, max(1e-9, 1 - confidence))], 1.0)]
    moves = dict.fromkeys(base, 0.0)
    for others, factor in terms:  # each term: the largest move of its alternatives; the terms add
        move = dict.fromkeys(base, 0.0)
        for other in others:
            m = numeric(SimResult.build(cfg, part, other).kernel)
            for k, v in base.items():
                if k in m:
                    move[k] = max(move[k], abs(m[k] - v))
        for k in base:
            moves[k] += factor * move[k]
    result.bounds = {k: (max(0.0, v - d), v + d) for k, v in base.items()
                     for d in (moves[k] + CONFIDENCE_FLOOR * abs(v) + (PCT_FLOOR if "_pct" in k else 0.0),)}


def subset_timing(run: SampleRun, prof: KernelProfile, cfg, cycles: int):
    """The whole kernel's counters from a run on k of the chip's SMs (an SM subset): each of the chip's SMs
    as the run's SM i mod k (each ran the kernel's blocks of one SM, its whole history), the kernel's warp
    states as the SMs'; the kernel's data fits the L2, so the L2 misses and the DRAM reads each line about
    once, in the kernel as in the run: the DRAM's counters and the L2's misses x the kernel's least DRAM
    bytes over the run's (at most the grid's share), the L2's other requests x the grid's blocks over the
    run's, its busy and queue cycles x its slices over the run's. Time-like counters scaled to `cycles`."""
    t = run.timing
    k, n, chip = len(t.sms), cfg.chip.sm_count, cfg.chip
    sms = [replace(t.sms[i % k], sm=i, gpc=min(i // max(chip.sms_per_gpc, 1), chip.gpcs - 1)) for i in range(n)]
    share = prof.grid / run.blocks
    least = max(0.0, min(prof.bytes_read, prof.footprint - prof.bytes_written))
    read = t.dram.get("bytes_read", 0)
    once = min(share, least / read) if read > 0 else share
    slices = cfg.l2.slices / subset_config(cfg, k).l2.slices
    l2 = {key: v * (slices if key in ("busy_cycles", "queue_cycles") else share) if key in L2_ADDITIVE else v
          for key, v in t.l2.items()}
    miss = t.l2.get("miss_sectors", 0)
    l2.update(miss_sectors=miss * once, hit_sectors=(t.l2.get("hit_sectors", 0) + miss) * share - miss * once)
    if "slices" in t.l2:
        l2["slices"] = cfg.l2.slices
    dram = {key: v * once if key in DRAM_ADDITIVE else v for key, v in t.dram.items()}
    states = {key: v * n / k for key, v in t.warp_states.items()}
    whole = replace(t, sms=sms, l2=l2, dram=dram, warp_states=states)
    return _timing([(whole, 1.0, 1.0)], cycles)


def _on_subset(runs: list[SampleRun], prof: KernelProfile, est: Estimate, cfg, part: WholeKernel, *,
               wall_seconds: float) -> SimResult:
    """The whole kernel's SimResult from an SM subset's runs (`subset_timing` of the run on the most SMs),
    each metric's bound LOOP_DRIFT_FACTOR times its move to the run on half as many ("SM subset", as the
    cycles'), plus the cycles' stretch and the floors."""
    rs = sorted(runs, key=lambda r: r.sms)
    timing = subset_timing(rs[-1], prof, cfg, est.cycles)
    result = SimResult.build(cfg, part, timing, wall_seconds=wall_seconds)
    _bound(result, cfg, part, timing, [([subset_timing(rs[-2], prof, cfg, est.cycles)], LOOP_DRIFT_FACTOR)],
           est.confidence)
    # the subset's SMs run consecutive blocks, which share data in their L1s; the kernel's run blocks a
    # wave apart: the L1's hit rate is not the kernel's (matmul_tiled at n = 1024 on h200: 36.8 % on 6 SMs,
    # 1.1 % on the chip); nor is its L2's busy share (fewer slices, hashed over fewer lines: 9.7 % against
    # 16.9 %): nothing here bounds them
    result.bounds.update({key: (0.0, 100.0) for key in result.bounds
                          if key in SUBSET_UNBOUNDED or (key.startswith("l1_") and "_pct" in key)})
    return result


__all__ = ["WholeKernel", "extended", "level_fit", "mixes", "numeric", "subset_timing", "warm_share", "whole_kernel"]
