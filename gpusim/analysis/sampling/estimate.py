"""From a plan's runs to the whole kernel's cycles with a bound (steps 5-7 of docs/sampling.md:
`estimate_cycles`, through `model`), and the mix of runs' counters the whole kernel's statistics are
made of (`combine`, used by `whole`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpusim.analysis.sampling.model import (
    CONFIDENCE_FLOOR,
    Estimate,
    Observation,
    extrapolate,
    first_wave_end,
    floor_estimate,
    in_step_bound,
    on_subsets,
    two_phase,
    wave_deltas,
    writeback_bound,
)
from gpusim.analysis.sampling.plan import LOOP_LEVELS, Plan, sees_full_l2
from gpusim.analysis.sampling.profile import BBV_DIFFERENT, KernelProfile
from gpusim.analysis.sampling.run import SampleRun

WARM_MIN_WRITEBACKS = 0.02  # the L2's fill matters where its write-backs add this much to the DRAM's traffic


def writeback_share(prof: KernelProfile, l2_bytes: int) -> float:
    """The share of the kernel's DRAM traffic that the L2's write-backs add once its data overflows the
    L2: the dirty bytes evicted over the bytes read plus those (0 when the data fits)."""
    if prof.footprint <= l2_bytes or prof.bytes_written <= 0:
        return 0.0
    evicted = prof.bytes_written * (1 - l2_bytes / prof.footprint)
    return evicted / (evicted + max(prof.bytes_read, 1.0))


def needs_fill(prof: KernelProfile, cfg) -> bool:
    """Whether a sample must see the L2 full of the kernel's data: a write-back L2 that the kernel's data
    overflows, whose write-backs add at least WARM_MIN_WRITEBACKS to its DRAM traffic."""
    return cfg.l2.write_policy == "write_back" and writeback_share(prof, cfg.l2.size_bytes) >= WARM_MIN_WRITEBACKS


def later_ratio(run: SampleRun, blocks_per_wave: int) -> float:
    """A later wave's time over the first wave's in a run of more than one wave: the time after the first
    wave's last block retired, per wave of the blocks after it, over that first wave's time."""
    first = first_wave_end(run.timing.timeline, blocks_per_wave)
    waves = (run.blocks - blocks_per_wave) / blocks_per_wave
    return (run.cycles - first) / waves / first


def _observe(plan: Plan, runs: list[SampleRun], B: int, steady_from=None):
    """The runs as Observations, and for the per-wave model their retirement gaps, from the block where
    each run's steady state starts (`steady_from(blocks)`, past the L2's fill; the first wave else)."""
    obs = [Observation(r.blocks, r.loop_cap, r.cycles, r.warp_instructions) for r in runs]
    if plan.kind == "loops":  # the LOOP_LEVELS highest levels: the slope of the lower ones is the transient's
        keep = sorted(range(len(obs)), key=lambda i: obs[i].cap)[-LOOP_LEVELS:]
        return [obs[i] for i in keep], None, [runs[i] for i in keep]
    gaps = []
    for r in runs:
        d = wave_deltas(r.timing.timeline, B)
        skip = max(0, steady_from(r.blocks) - B) if steady_from is not None and r.warm_l2 is None else 0
        gaps.append(d[skip:] if skip < d.size else d)
    return obs, gaps, runs


def estimate_cycles(plan: Plan, cold: list[SampleRun], warm: list[SampleRun], prof: KernelProfile, cfg,
                    roofs: dict[str, float], steady_from=None, in_step: SampleRun | None = None) -> Estimate:
    """The kernel's cycles from the plan's runs: the per-wave or the loop model on the cold runs, joined
    with the warm runs' fit over the L2's fill (`model.two_phase`) when the plan has them, an "L2
    write-backs" term when the kernel's data overflows the L2 and the sample neither fills it nor ran
    warm, a "block mix" term where the profiled blocks' basic-block vectors differ (the sample's first
    blocks then stand for work they do not do: the distance, as a share of the cycles), and held to the
    hardware floor (`roofs`). `steady_from(blocks)`: where a run's steady state
    starts (its gaps before are not the per-wave time's). `in_step`: the loop plan's run of its first two
    waves at the lowest level (`Plan.in_step_blocks`), for how a later wave runs against the first."""
    G, B = prof.grid, prof.blocks_per_wave
    obs, deltas, used = _observe(plan, cold, B, steady_from)
    extra: dict[str, float] = {}
    if deltas is not None:
        ends = [first_wave_end(r.timing.timeline, B) for r in used]
        step = in_step_bound(grid=G, blocks_per_wave=B, runs=obs, first_wave_ends=ends, wave_deltas=deltas,
                             full_warp_instructions=prof.warp_instructions)
        if step:
            extra["first wave in step"] = step
    fit = dict(grid=G, blocks_per_wave=B, full_warp_instructions=prof.warp_instructions,
               warp_instructions_spread=prof.spread, remainder_matched=plan.remainder_matched)
    l2 = cfg.l2.size_bytes
    if warm:
        cold_est = extrapolate(runs=obs, wave_deltas=deltas, **fit)
        wobs, wdeltas, _ = _observe(plan, warm, B)
        warm_est = extrapolate(runs=wobs, wave_deltas=wdeltas, **fit)
        # the share of the warm runs' DRAM traffic that is write-backs (of the prefilled dirty lines,
        # standing for the kernel's own once the L2 is full)
        written = sum(r.timing.dram["bytes_written"] for r in warm)
        traffic = written + sum(r.timing.dram["bytes_read"] for r in warm)
        est = two_phase(cold_est, warm_est, grid=G, blocks_per_wave=B, extra_bounds=extra, ways=cfg.l2.ways,
                        write_back_share=written / traffic if traffic else 0.0, fill=prof.fill_waves(l2))
    else:
        if needs_fill(prof, cfg) and not sees_full_l2(plan.blocks, prof.fill_waves(l2), B):
            # the L2 fills later than the sample shows: bounded by the write-backs it misses
            sample_footprint = min(max(r.global_bytes for r in cold), prof.footprint * plan.blocks / G)
            wb = writeback_bound(written_bytes=prof.bytes_written, footprint_bytes=prof.footprint,
                                 sampled_footprint_bytes=sample_footprint, l2_bytes=l2,
                                 dram_bytes_per_cycle=cfg.dram_bytes_per_cycle())
            if wb:
                extra["L2 write-backs"] = wb
        est = extrapolate(runs=obs, wave_deltas=deltas, extra_bounds=extra,
                          later_ratio=None if in_step is None else later_ratio(in_step, B), **fit)
    return floor_estimate(_block_mix(est, prof), roofs)


def _block_mix(est: Estimate, prof: KernelProfile) -> Estimate:
    """`est` with a "block mix" term where the profiled blocks' basic-block vectors differ (the sample's
    first blocks then stand for work they do not do: the distance, as a share of the cycles)."""
    if prof.bbv_distance <= BBV_DIFFERENT:
        return est
    bounds = {**est.bounds, "block mix": prof.bbv_distance * est.cycles}
    return replace(est, bounds=bounds, confidence=max(CONFIDENCE_FLOOR, sum(bounds.values()) / est.cycles))


def estimate_subset(runs: list[SampleRun], prof: KernelProfile, roofs: dict[str, float]) -> Estimate:
    """The kernel's cycles from an SM subset's runs (`model.on_subsets`), with a "shared DRAM" term: the
    subset has the whole DRAM to itself, so the kernel's least DRAM traffic at the DRAM's peak (its DRAM
    roof) is what sharing it could add unseen; "block mix" as `estimate_cycles`; held to the hardware
    floor."""
    extra = {"shared DRAM": roofs["DRAM"]} if roofs.get("DRAM") else {}
    est = on_subsets({r.sms: r.cycles for r in runs}, spread=prof.spread, extra_bounds=extra)
    return floor_estimate(_block_mix(est, prof), roofs)


# ---- whole-kernel statistics --------------------------------------------------------------------------

SM_ADDITIVE = ("issued", "active_cycles", "scheduler_active_cycles", "eligible_sum", "warp_cycles", "blocks", "warps",
               "l1_requests", "l1_hit_sectors", "l1_miss_sectors", "l1_mshr_full_cycles", "shared_requests",
               "shared_wavefronts", "shared_ideal_wavefronts")
L2_ADDITIVE = ("hit_sectors", "miss_sectors", "write_sectors", "atomic_operations", "busy_cycles", "queue_cycles",
               "requests", "far_sectors")
DRAM_ADDITIVE = ("bytes_read", "bytes_written", "busy_cycles", "queue_cycles", "requests", "row_hits", "row_misses",
                 "row_conflicts")


TIME_LIKE = ("active_cycles", "scheduler_active_cycles", "eligible_sum", "warp_cycles", "l1_mshr_full_cycles")


def combine(parts: list[tuple[Any, float, float]], cycles: int):
    """A KernelTiming for the whole kernel as a weighted mix of sampled runs' `parts` (timing, work weight,
    time weight): each counter of work (instructions, sectors, bytes, busy cycles) is sum(work weight x
    the part's), each counter of time (active cycles, resident and eligible warp-cycles, warp states) sum(
    time weight x the part's), SM by SM (negative results clamped at 0); its cycles are `cycles`. The
    timeline is empty (no block of the whole kernel was timed)."""
    first = parts[0][0]

    def mix(get, time_like: bool) -> int:
        return max(0, round(sum((wt if time_like else w) * get(t) for t, w, wt in parts)))

    sms = []
    for i, sm in enumerate(first.sms):
        row = {k: mix(lambda t, k=k, i=i: getattr(t.sms[i], k), k in TIME_LIKE) for k in SM_ADDITIVE}
        states = {k: mix(lambda t, k=k, i=i: t.sms[i].warp_states.get(k, 0), True) for k in sm.warp_states}
        busy = {k: mix(lambda t, k=k, i=i: t.sms[i].unit_busy.get(k, 0), False) for k in sm.unit_busy}
        sms.append(replace(sm, **row, warp_states=states, unit_busy=busy,
                           max_warps_resident=max(t.sms[i].max_warps_resident for t, _, _ in parts)))
    l2 = dict(first.l2)
    l2.update({k: mix(lambda t, k=k: t.l2.get(k, 0), False) for k in L2_ADDITIVE})
    l2.pop("prefilled_dirty_bytes", None)
    dram = dict(first.dram)
    dram.update({k: mix(lambda t, k=k: t.dram.get(k, 0), False) for k in DRAM_ADDITIVE})
    states = {k: mix(lambda t, k=k: t.warp_states.get(k, 0), True) for k in first.warp_states}
    return replace(first, cycles=int(cycles), sms=sms, timeline=[], l2=l2, dram=dram, warp_states=states)


__all__ = ["WARM_MIN_WRITEBACKS", "combine", "estimate_cycles", "estimate_subset", "later_ratio", "needs_fill",
           "writeback_share", "TIME_LIKE"]

