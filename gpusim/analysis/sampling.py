"""Sampled simulation of large kernels (docs/sampling.md): simulate a kernel's first waves of blocks in
detail with its long loops cut short at a few levels, and extrapolate to the whole grid and the whole
loops (`sampling_model`), with a bound on the error.

    >>> r = simulate_sampled("matmul_tiled", "a100", sample="auto", n=4096)   # doctest: +SKIP
    >>> r.cycles, r.confidence, r.mode                                         # doctest: +SKIP

Steps: (1) a static check: a kernel whose global addresses come from loaded data (pointer chasing) is
simulated in full under "auto"; (2) a few whole blocks (first, quartiles, last) run on the functional
executor alone, counting their warp instructions and their loops' iterations: the kernel's warp
instructions and its long loops; (3) a plan (`make_plan`): the first g1 blocks (one wave, plus the grid's
remainder) at three levels of loop caps when loops are long, and a run of a few more waves when
blocks are many, within a budget of simulated warp instructions; (4) the runs, each from the same
inputs; (5) the extrapolation and its bound. "auto" simulates the kernel in full instead when it is
small, when no plan gains at least MIN_GAIN, when a run faults (a loop cut short can compute an
address the whole kernel never does), or when the bound is wider than AUTO_MAX_CONFIDENCE and the
kernel is affordable in full. No estimate falls below the hardware floor (`hardware_roofs`: the
kernel's work at its units' peaks). A sampled run's values are not the kernel's: what is verified is
the outputs of the few blocks of step (2), which run whole (`_check_blocks`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.analysis.sampling_model import (
    CONFIDENCE_FLOOR,
    Estimate,
    Observation,
    data_dependent_addresses,
    extrapolate,
    fill_waves,
    first_wave_end,
    floor_estimate,
    in_step_bound,
    l2_dirty_fraction,
    two_phase,
    wave_deltas,
    writeback_bound,
)
from gpusim.config import Config
from gpusim.config.occupancy import occupancy
from gpusim.errors import GpusimError, KernelFault, LaunchError, VerificationError
from gpusim.functional.executor import Executor
from gpusim.isa.opcodes import MMA_DIMS, Unit
from gpusim.stats.report import LABEL, SimResult
from gpusim.stats.simulate import configure, simulate, timed_execute
from gpusim.workloads import load_workload
from gpusim.workloads.verify import compare

SAMPLE_MODES = ("auto", "on", "off")
AUTO_MIN_WARP_INSTRUCTIONS = 2_000_000  # "auto" simulates smaller kernels in full (~10 s or less)
TARGET_GAIN = 20  # a plan aims at this many times fewer simulated warp instructions than the kernel's
MIN_GAIN = 4  # "auto" samples only when the plan simulates at least this many times fewer
MAX_SAMPLE_WARP_INSTRUCTIONS = 6_000_000  # and at most this many (about half a minute)
MIN_LOOP_TRIPS = 16  # loops shorter than this run whole
MANY_WAVES = 8  # from this many waves on, the sample may leave the last wave's remainder to the model
WAVE_SPAN = 2  # waves simulated after the first one to measure the per-wave time
CAP_STEPS = (2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)  # s of the cap levels (s/2, s, 2s)
MIN_CAP_STEP = 4  # "auto" takes the slope from 4 iterations on: the first few run apart from the steady state
AUTO_MAX_CONFIDENCE = 0.10  # "auto" simulates in full when the bound is wider than this ...
FULL_AFFORDABLE_WARP_INSTRUCTIONS = 20_000_000  # ... and the kernel has no more warp instructions (~2 min)
LOOP_STEADY = 0.02  # the loop model runs a further level while its last two slopes differ by more than this
WARM_MIN_WRITEBACKS = 0.02  # two phases (warm runs) only when the write-backs could move the estimate this much
COUNT_ONLY = 1 << 62  # a loop cap that counts iterations without cutting any loop short


@dataclass(frozen=True)
class SampleRun:
    """One detailed run of the sample: its first `blocks` blocks, loops capped at `loop_cap`."""

    purpose: str  # the plan's kind: "waves" (several waves) or "loops" (the grid of a few waves or less)
    blocks: int
    loop_cap: int | None  # iterations the longest loop may take (None: every loop runs whole)
    loop_caps: dict[int, int] | None  # per loop header pc: the cap of each long loop
    cycles: int
    warp_instructions: int
    global_bytes: int
    wall_seconds: float
    warm_l2: float | None = None  # the run started from a warm L2, this fraction of its lines dirty

    def to_dict(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "blocks": self.blocks, "loop_cap": self.loop_cap,
                "loop_caps": {str(k): v for k, v in (self.loop_caps or {}).items()}, "cycles": self.cycles,
                "warp_instructions": self.warp_instructions, "global_bytes": self.global_bytes,
                "wall_seconds": self.wall_seconds, "warm_l2": self.warm_l2}


@dataclass(frozen=True)
class Plan:
    """The detailed runs of a sample: the first `blocks` blocks at each loop-cap level of `levels` (None:
    loops whole). `kind` "waves": the runs span several waves (the per-wave model); "loops": they are
    the whole grid of a few waves or less, or the first wave of a grid of fewer than MANY_WAVES (the
    loop model)."""

    kind: str
    blocks: int
    levels: tuple[int | None, ...]
    remainder_matched: bool  # the sampled blocks end with the grid's partial last wave
    cost: float  # estimated warp instructions simulated

    def runs(self) -> list[tuple[int, int | None]]:
        return [(self.blocks, c) for c in self.levels]


@dataclass
class SampledResult:
    """What `simulate_sampled` returns. `mode` is "sampled" (an estimate: `cycles` +- `confidence`,
    `detail` the SimResult of the largest sampled run, its values not verified) or "full" (a full
    simulation, `full` its SimResult, `cycles` exact); `reason` says why."""

    workload: str
    cfg: Config
    params: dict[str, Any]
    launch: Any
    seed: int
    requested: str
    mode: str
    reason: str
    cycles: int
    confidence: float
    wall_seconds: float
    grid_blocks: int
    blocks_per_wave: int
    estimate: Estimate | None = None
    runs: list[SampleRun] = field(default_factory=list)
    representative: list[dict[str, int]] = field(default_factory=list)
    loop_trips: dict[int, int] = field(default_factory=dict)
    warp_instructions_estimated: int = 0
    verification: dict[str, Any] = field(default_factory=dict)  # `_check_blocks`: the whole blocks' outputs
    roofs: dict[str, float] = field(default_factory=dict)  # least cycles of the kernel's work per unit at its peak
    detail: SimResult | None = None
    full: SimResult | None = None

    @property
    def sampled(self) -> bool:
        return self.mode == "sampled"

    @property
    def waves(self) -> float:
        return self.grid_blocks / self.blocks_per_wave if self.blocks_per_wave else 0.0

    @property
    def warp_instructions_simulated(self) -> int:
        """Warp instructions simulated in detail: the sampled runs, and the whole kernel if it ran."""
        whole = int(self.full.kernel["warp_instructions"]) if self.full is not None else 0
        return whole + sum(r.warp_instructions for r in self.runs)

    @property
    def kernel_seconds(self) -> float:
        return self.cycles / (self.cfg.chip.clock_mhz * 1e6)

    def sampling_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {
            "requested": self.requested, "decision": self.mode, "reason": self.reason,
            "cycles": self.cycles, "confidence": self.confidence,
            "cycles_low": self.cycles if self.full is not None or not e else e.low,
            "cycles_high": self.cycles if self.full is not None or not e else e.high,
            "sampled_estimate": ({"cycles": e.cycles, "confidence": e.confidence} if e and self.full is not None
                                 else None),
            "grid_blocks": self.grid_blocks, "blocks_per_wave": self.blocks_per_wave, "waves": self.waves,
            "runs": [r.to_dict() for r in self.runs],
            "representative_blocks": self.representative,
            "loop_trips": {str(k): v for k, v in self.loop_trips.items()},
            "warp_instructions_simulated": self.warp_instructions_simulated,
            "warp_instructions_estimated": self.warp_instructions_estimated,
            "model": ({"kind": e.model, "per_wave_cycles": e.per_wave, "offset_cycles": e.offset,
                       "cycles_per_warp_instruction": e.beta, "waves_extrapolated": e.waves_extrapolated,
                       "cold_per_wave_cycles": e.cold_per_wave, "l2_fill_waves": e.fill_waves}
                      if e else None),
            "bounds_cycles": dict(e.bounds) if e else {},
            "roofs_cycles": dict(self.roofs),
            "floor_cycles": e.floor if e else None, "floor_roof": e.floor_roof if e else None,
            "floored_from": e.floored_from if e else None,
            "wall_seconds": self.wall_seconds,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready. A full run: its SimResult's dict plus `sampling`. A sampled one: provenance,
        `cycles` (the estimate), `confidence`, `cycles_low` / `cycles_high`, `kernel_seconds`,
        `sampling` (what was simulated, the model, each term of the bound) and `detail` (the largest
        sampled run's metrics; `verified` is null, its values are not the kernel's)."""
        if self.full is not None:
            d = self.full.to_dict()
            d["confidence"] = 0.0
            d["sampling"] = self.sampling_dict()
            return d
        from gpusim import __version__

        cfg = self.cfg
        d = {
            "mode": "sampled", "workload": self.workload, "params": dict(self.params),
            "launch": {"grid": list(self.launch.grid), "block": list(self.launch.block)},
            "seed": self.seed, "verified": self.verification.get("verified"),
            "verification": dict(self.verification), "gpusim_version": __version__, "config": cfg.name,
            "config_hash": cfg.hash(), "scheduler": cfg.scheduler.policy,
            "cycles": self.cycles, "confidence": self.confidence,
            "cycles_low": self.estimate.low, "cycles_high": self.estimate.high,
            "kernel_seconds": self.kernel_seconds, "wall_seconds": self.wall_seconds,
            "sampling": self.sampling_dict(),
            "detail": self.detail.to_dict() if self.detail is not None else None,
        }
        return d

    def summary_lines(self) -> list[str]:
        """What was sampled and the estimate, as `label  text` lines for the terminal."""
        rows: list[tuple[str, str]] = []
        if not self.sampled:
            rows.append(("sampling", f"full simulation ({self.reason})"))
            rows.append(("wall time", f"{self.wall_seconds:.3f} s"))
            return [f"{a:<{LABEL}}  {b}" for a, b in rows]
        e = self.estimate
        us = self.kernel_seconds * 1e6
        rows.append(("workload", f"{self.workload} ({', '.join(f'{k}={v}' for k, v in self.params.items())})"))
        rows.append(("config", f"{self.cfg.name} (hash {self.cfg.hash()}), {self.cfg.scheduler.policy} scheduler"))
        rows.append(("estimate", f"{self.cycles:,} cycles +- {self.confidence:.1%} ({e.low:,} - {e.high:,}) "
                                 f"= {us:,.3f} us at {self.cfg.chip.clock_mhz:g} MHz"))
        longest = max(self.loop_trips.values(), default=0)
        parts = []
        for r in self.runs:
            cut = "loops whole" if r.loop_cap is None else f"loops cut at {r.loop_cap}"
            warm = "" if r.warm_l2 is None else f", warm L2 ({r.warm_l2:.0%} dirty)"
            parts.append(f"{r.blocks:,} blocks, {cut}{warm}")
        loop = f"; longest loop {longest + 1:,} iterations" if longest else ""
        what = (f"{len(self.runs)} run{'s' if len(self.runs) > 1 else ''} of the first blocks ({'; '.join(parts)}) of "
                f"{self.grid_blocks:,} ({self.blocks_per_wave:,} a wave: {self.waves:,.1f} waves{loop})")
        rows.append(("sampled", what))
        sim, est = self.warp_instructions_simulated, self.warp_instructions_estimated
        if self.verification:
            v = self.verification
            rows.append(("verified", ("yes: " if v["verified"] else "not: ") + v["message"]))
        rows.append(("warp instructions", f"{sim:,} simulated of about {est:,} ({sim / max(est, 1):.2%})"))
        if e.model == "waves" and e.fill_waves is not None:
            rows.append(("model", f"per wave: {e.cold_per_wave:,.0f} cycles from a cold L2, {e.per_wave:,.0f} from "
                                  f"a full one (the kernel's data fills the L2 around wave {e.fill_waves:,.1f}), "
                                  f"{e.offset:,.0f} of ramp and drain; {e.waves_extrapolated:,.2f} waves extrapolated"))
        elif e.model == "waves":
            rows.append(("model", f"per wave: {e.per_wave:,.0f} cycles a wave of whole blocks, {e.offset:,.0f} of ramp "
                                  f"and drain; {e.waves_extrapolated:,.2f} waves extrapolated"))
        else:
            rows.append(("model", f"loops: {e.beta:.4g} cycles per further warp instruction"))
        if e.floor:
            said = f"; the extrapolation said {e.floored_from:,}: raised to it" if e.floored_from is not None else ""
            rows.append(("hardware floor", f"{e.floor:,.0f} cycles ({e.floor_roof}; "
                                           + ", ".join(f"{k} {v:,.0f}" for k, v in self.roofs.items()) + f"){said}"))
        if e.bounds:
            rows.append(("error bound", ", ".join(f"{k} {v / self.cycles:.2%}" for k, v in e.bounds.items())
                         + f" (at least {CONFIDENCE_FLOOR:.0%} in all)"))
        rows.append(("reason", self.reason))
        rows.append(("wall time", f"{self.wall_seconds:.3f} s"))
        return [f"{a:<{LABEL}}  {b}" for a, b in rows]

    def summary_table(self) -> str:
        if self.full is not None:
            return self.full.summary_table() + "\n\n" + "\n".join(self.summary_lines())
        return "\n".join(self.summary_lines())


class _SampledPart:
    """What SimResult.build reads of a run, for a sampled part: its functional stats, no workload
    provenance and no verification (its values are not the kernel's)."""

    ok = None
    flops = None
    bytes_moved = None
    workload = None
    params: dict = {}
    seed = None

    def __init__(self, result, launch):
        self.result, self.launch = result, launch

    def summary(self) -> dict[str, Any]:
        return {"verified": None, "stats": self.result.stats.to_dict()}


def simulate_sampled(workload, cfg: Config | str = "a100", *, sample: str = "auto", seed: int = 0,
                     scheduler: str | None = None, overrides: dict[str, Any] | None = None,
                     max_steps_per_warp: int | None = None, max_cycles: int | None = None,
                     max_sample_warp_instructions: int | None = None, cap_step: int | None = None,
                     **params) -> SampledResult:
    """Simulate `workload` on `cfg` with `params`, sampled (see the module docstring). `sample`: "auto"
    (sample a large kernel when that gains at least MIN_GAIN, else simulate in full), "on" (sample
    whenever the kernel has waves or loops to extrapolate, however small; for tests and studies) or
    "off" (full simulation, as `gpusim.simulate`). A full run here is not checked against the
    reference (`result.full.verified` says whether it matched). The sample aims at a twentieth of the
    kernel's warp instructions, at most MAX_SAMPLE_WARP_INSTRUCTIONS; `max_sample_warp_instructions`
    sets the budget instead (more: loops cut later, more accurate). `cap_step` s forces the loop
    levels (s/2, s, 2s) where loops are cut (for studies of the method)."""
    if sample not in SAMPLE_MODES:
        raise GpusimError(f"sample mode {sample!r}: expected one of {', '.join(SAMPLE_MODES)}")
    t0 = time.perf_counter()
    wl = workload if hasattr(workload, "program") else load_workload(workload)
    cfg = configure(cfg, scheduler, overrides)
    wl = wl.for_config(cfg)  # the kernel as ptxas compiles it (gpusim.isa.ptxas)
    p = wl.params(params)
    launch = wl.launch(p)
    G = launch.num_blocks
    occ = occupancy(cfg, launch.threads_per_block, wl.program.regs_per_thread, wl.program.shared_bytes)
    if occ.active_blocks_per_sm == 0:
        raise LaunchError(f"the kernel cannot run on {cfg.name}: {occ.reason}", field="block")
    B = occ.active_blocks_per_sm * cfg.chip.sm_count
    base = dict(workload=wl.name, cfg=cfg, params=p, launch=launch, seed=seed, requested=sample,
                grid_blocks=G, blocks_per_wave=B)
    more: dict[str, Any] = {}
    pl = None

    def full(reason: str, **extra) -> SampledResult:
        if pl is not None:
            pl.release()  # the sample's memory and its snapshot, before the whole kernel's
        r = simulate(wl, cfg, seed=seed, max_steps_per_warp=max_steps_per_warp, max_cycles=max_cycles,
                     verify=False, **p)
        kw = {**more, **extra, "warp_instructions_estimated": int(r.kernel["warp_instructions"])}
        return SampledResult(**base, mode="full", reason=reason, cycles=r.cycles, confidence=0.0,
                             wall_seconds=time.perf_counter() - t0, detail=r, full=r, **kw)

    def cannot(reason: str) -> SampledResult:
        if sample == "on":
            raise GpusimError(f"{wl.name}: cannot sample: {reason}; use --sample auto or off")
        return full(reason)

    if sample == "off":
        return full("--sample off")
    bad = data_dependent_addresses(wl.program)
    dependent = ""
    if bad:
        lines = ", ".join(str(wl.program.instructions[pc].line) for pc in bad)
        dependent = (f"global addresses depend on loaded data (line {lines}): the lines a sample touches "
                     "do not predict those of the whole kernel")
        if sample == "auto":
            return full(dependent)

    pl = wl.prepare(p, seed=seed, cfg=cfg)
    pl.snapshot()
    # a workload with a numpy reference is checked where it runs whole (a compiler's generated kernel,
    # which has none, is not)
    verifiable = hasattr(wl, "inputs") and hasattr(wl, "reference")
    inputs = wl.inputs(p, seed) if verifiable else {}
    outputs = {k: v for k, v in inputs.items() if isinstance(v, np.ndarray)}  # the buffers, as prepared
    written: dict[str, Any] = {}
    kernel = _representative(pl, cfg, max_steps_per_warp, keep=lambda pl_, ids: written.update(
        blocks=ids, outputs={k: pl_.memory.read(pl_.args[k], v.dtype, v.size).copy() for k, v in outputs.items()}))
    if verifiable:
        more["verification"] = check = _check_blocks(wl, p, inputs, written)
        if check["verified"] is False:
            raise VerificationError(f"{wl.name} ({', '.join(f'{k}={v}' for k, v in p.items())}): "
                                    f"{check['message']}")
    more.update(representative=kernel.rows, loop_trips=kernel.trips,
                warp_instructions_estimated=round(kernel.warp_instructions))
    full_y = kernel.warp_instructions
    if sample == "auto" and full_y < AUTO_MIN_WARP_INSTRUCTIONS:
        return full(f"a small kernel: about {full_y:,.0f} warp instructions, under {AUTO_MIN_WARP_INSTRUCTIONS:,}")
    longest = max(kernel.trips.values(), default=0)
    try:
        w0 = w1 = full_y / G
        if longest >= MIN_LOOP_TRIPS:  # one block with its long loops cut at levels 0 and 1
            mid = kernel.rows[len(kernel.rows) // 2]["block"]
            w0 = _block_instructions(pl, cfg, mid, level_caps(kernel.trips, 0), max_steps_per_warp)
            w1 = _block_instructions(pl, cfg, mid, level_caps(kernel.trips, 1), max_steps_per_warp)
        if max_sample_warp_instructions is None:
            max_cost = MAX_SAMPLE_WARP_INSTRUCTIONS
            budget = min(full_y / TARGET_GAIN, max_cost)
        else:
            budget = max_cost = max_sample_warp_instructions
        plan, why = make_plan(G, B, full_y / G, w0, w1, longest, budget, max_cost=max_cost,
                              min_step=MIN_CAP_STEP if sample == "auto" else 1, only_step=cap_step)
        if plan is None:
            return cannot(why)
        if sample == "auto" and full_y / plan.cost < MIN_GAIN:
            return cannot(f"too few waves or loop iterations to gain: the best plan simulates about "
                          f"{plan.cost:,.0f} of {full_y:,.0f} warp instructions")
        runs, timings = _run_plan(pl, cfg, plan, kernel.trips, max_steps_per_warp, max_cycles)
        if plan.kind == "loops":
            limit = min(max_cost, full_y / MIN_GAIN)  # a sample worth taking: at most a quarter of the kernel
            _settle_loops(pl, cfg, plan, runs, timings, kernel.trips, longest, limit,
                          lambda c: plan.blocks * min(full_y / G, w0 + c * max(w1 - w0, 0.0)), max_steps_per_warp,
                          max_cycles)
        # The L2: a kernel whose data overflows it and that writes runs in two phases, the second with
        # every allocation evicting a line (written back when dirty). A sample within the L2 sees only
        # the first; where the write-backs it misses could matter (the "L2 write-backs" term, at least
        # WARM_MIN_WRITEBACKS of the cold estimate), its runs are repeated from a warm
        # L2 (`sampling_model.two_phase`), when the gain allows twice the runs.
        footprint, dirty = l2_dirty_fraction(bytes_read=kernel.bytes_read, bytes_written=kernel.bytes_written,
                                             allocated_bytes=sum(size for _, size, _ in pl.memory.allocations))
        l2_bytes = cfg.l2.size_bytes
        # the lines the L2 must hold are the distinct ones (data read three times, as softmax does,
        # occupies the L2 once): nothing is evicted while they fit. The sample's: at most the bytes it
        # moved, and at most its blocks' share of the kernel's
        sample_footprint = min(max(r.global_bytes for r in runs), footprint * plan.blocks / G)
        wb = writeback_bound(written_bytes=kernel.bytes_written, footprint_bytes=footprint,
                             sampled_footprint_bytes=sample_footprint, l2_bytes=l2_bytes,
                             dram_bytes_per_cycle=cfg.derived()["peak_dram_bandwidth_gbps"] * 1e3 / cfg.chip.clock_mhz)
    except KernelFault as e:  # a loop cut short can compute an address the kernel never does
        return cannot(f"a sampled run faults, so the kernel is simulated whole ({e})")

    def observe(rs, ts):
        obs = [Observation(r.blocks, r.loop_cap, r.cycles, r.warp_instructions) for r in rs]
        return obs, ([wave_deltas(te.timing.timeline, B) for te, _ in ts] if plan.kind == "waves" else None)

    obs, deltas = observe(runs, timings)
    if plan.kind == "loops":  # the three highest levels: the slope of the lower ones is the transient's
        obs = sorted(obs, key=lambda o: o.cap)[-3:]
    extra = {}
    if deltas is not None:
        ends = [first_wave_end(te.timing.timeline, B) for te, _ in timings]
        step = in_step_bound(grid=G, blocks_per_wave=B, runs=obs, first_wave_ends=ends, wave_deltas=deltas,
                             full_warp_instructions=full_y)
        if step:
            extra["first wave in step"] = step
    fit = dict(grid=G, blocks_per_wave=B, full_warp_instructions=full_y, warp_instructions_spread=kernel.spread,
               remainder_matched=plan.remainder_matched)
    cold_est = extrapolate(runs=obs, wave_deltas=deltas, **fit)
    warm = (plan.kind == "waves" and cfg.l2.write_policy == "write_back" and footprint > l2_bytes
            and dirty > 0 and sample_footprint < l2_bytes and wb > WARM_MIN_WRITEBACKS * cold_est.cycles
            and 2 * plan.cost <= max_cost and (sample != "auto" or full_y / (2 * plan.cost) >= MIN_GAIN))
    if warm:
        try:
            warm_runs, warm_timings = _run_plan(pl, cfg, plan, kernel.trips, max_steps_per_warp, max_cycles,
                                                warm_l2=dirty)
        except KernelFault as e:
            return cannot(f"a sampled run faults, so the kernel is simulated whole ({e})")
        wb = 0.0
        wobs, wdeltas = observe(warm_runs, warm_timings)
        warm_est = extrapolate(runs=wobs, wave_deltas=wdeltas, **fit)
        # the share of the warm runs' DRAM traffic that is write-backs (of the prefilled dirty lines,
        # standing for the kernel's own once the L2 is full)
        written = sum(te.timing.dram["bytes_written"] for te, _ in warm_timings)
        traffic = written + sum(te.timing.dram["bytes_read"] for te, _ in warm_timings)
        est = two_phase(cold_est, warm_est, grid=G, blocks_per_wave=B, extra_bounds=extra, ways=cfg.l2.ways,
                        write_back_share=written / traffic if traffic else 0.0,
                        fill=fill_waves(grid=G, blocks_per_wave=B, footprint_bytes=footprint, l2_bytes=l2_bytes))
        runs = runs + warm_runs
        warm_timings.clear()
    else:
        if wb:  # the L2 fills later than the sample shows: bounded by the write-backs it misses
            extra["L2 write-backs"] = wb
        est = extrapolate(runs=obs, wave_deltas=deltas, extra_bounds=extra, **fit)
    # no estimate below what the units' peaks allow: the DRAM's share, the bytes the kernel must read
    # at least once (its distinct data less what it writes)
    roofs = hardware_roofs(cfg, wl.program, grid=G, warp_instructions=full_y,
                           tensor_warp_instructions=kernel.tensor_warp_instructions,
                           dram_bytes=max(0.0, min(kernel.bytes_read, footprint - kernel.bytes_written)))
    more["roofs"] = roofs
    est = floor_estimate(est, roofs)
    if sample == "auto" and est.confidence > AUTO_MAX_CONFIDENCE and full_y <= FULL_AFFORDABLE_WARP_INSTRUCTIONS:
        worst = max(est.bounds, key=est.bounds.get)
        timings.clear()
        return full(f"the sampled estimate, {est.cycles:,} cycles +- {est.confidence:.0%} (mostly {worst}), is too "
                    f"uncertain, and about {full_y:,.0f} warp instructions are affordable in full",
                    estimate=est, runs=runs)
    cold_runs = runs[:len(timings)]
    biggest = max(cold_runs, key=lambda r: r.warp_instructions)
    te_b, wall_b = timings[cold_runs.index(biggest)]
    detail = SimResult.build(cfg, _SampledPart(te_b, launch), te_b.timing, wall_seconds=wall_b)
    notes = []
    if warm:
        notes.append(f"the kernel's data ({footprint / 2**20:,.0f} MiB, {dirty:.0%} of it written) overflows the L2 "
                     f"({l2_bytes / 2**20:,.0f} MiB): the sets fill around wave {est.fill_waves:,.1f}, from a cold "
                     "L2 to a warm one (the sample run again from a full L2)")
    if wb > 0.01 * est.cycles:
        notes.append(f"the kernel's data ({footprint / 2**20:,.0f} MiB) is more than the L2 holds "
                     f"({cfg.l2.size_bytes / 2**20:,.0f} MiB), and the sample less: the write-backs of its dirty "
                     "lines once the L2 is full are outside the sample (bounded in the confidence)")
    if est.floored_from is not None:
        notes.append(f"the extrapolation, {est.floored_from:,} cycles, fell below the {est.floor_roof} roof "
                     f"({est.floor:,.0f} cycles: the kernel's work at the units' peak): raised to it, the "
                     "shortfall added to the bound ('roof floor')")
    if dependent:
        notes.append(dependent)
    worst = max(est.bounds, key=est.bounds.get, default=None)
    if worst is not None and est.bounds[worst] > 0.05 * est.cycles:
        notes.append(f"the bound is mostly '{worst}' ({est.bounds[worst] / est.cycles:.1%}; docs/sampling.md)")
    return SampledResult(**base, mode="sampled", reason="; ".join(notes) or "steady state extrapolated",
                         cycles=est.cycles, confidence=est.confidence, wall_seconds=time.perf_counter() - t0,
                         estimate=est, runs=runs, detail=detail, **more)


def _run_plan(pl, cfg, plan: Plan, trips: dict[int, int], max_steps: int | None, max_cycles: int | None,
              warm_l2: float | None = None):
    """Simulate the plan's runs, each from the prepared inputs (and, with `warm_l2`, from an L2 full of
    foreign lines, that fraction dirty): the SampleRuns, and each one's timed execution and wall
    seconds, in the same order."""
    runs: list[SampleRun] = []
    timings: list[tuple[Any, float]] = []
    for g, cap in plan.runs():
        caps = None if cap is None else level_caps(trips, cap)
        pl.restore()
        t1 = time.perf_counter()
        te = timed_execute(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=cfg, max_steps_per_warp=max_steps,
                           max_cycles=max_cycles, block_limit=g, loop_cap=caps, warm_l2=warm_l2)
        st = te.stats
        run = SampleRun(plan.kind, g, cap, caps, int(te.timing.cycles), int(st.warp_instructions),
                        int(st.global_bytes), time.perf_counter() - t1, warm_l2)
        runs.append(run)
        timings.append((te, run.wall_seconds))
    return runs, timings


def _settle_loops(pl, cfg, plan: Plan, runs: list[SampleRun], timings: list, trips: dict[int, int], longest: int,
                  limit: float, cost, max_steps: int | None, max_cycles: int | None) -> None:
    """The loop model's levels (s/2, s, 2s), carried on to 4s, 8s, ... while the slope between the two
    highest differs from the slope below by more than LOOP_STEADY, the next level stays under the longest
    loop and the runs under `limit` warp instructions (`cost(level)`: a run's estimate). The blocks of a
    first wave start together and run their first iterations in step, all asking for the same lines at
    once, before they drift apart (matmul_naive at n = 320 on a100: 282 cycles an iteration at 4-8, 241 at
    8-16, 255 at 16-32, 251 at 32-64, 253 over the whole loop): a slope taken inside that transient
    misses the steady state by more than the two-slope bound says. Appends to `runs` and `timings`."""
    def slopes():
        o = sorted(runs, key=lambda r: r.loop_cap)[-3:]
        return [(b.cycles - a.cycles) / max(1, b.warp_instructions - a.warp_instructions)
                for a, b in zip(o, o[1:], strict=False)]

    spent = sum(r.warp_instructions for r in runs)
    while len(runs) >= 3:
        lo, hi = slopes()
        nxt = 2 * max(r.loop_cap for r in runs)
        if abs(lo - hi) <= LOOP_STEADY * abs(hi) or nxt >= longest or spent + cost(nxt) > limit:
            return
        more, t = _run_plan(pl, cfg, Plan("loops", plan.blocks, (nxt,), True, cost(nxt)), trips, max_steps, max_cycles)
        runs += more
        timings += t
        spent += more[0].warp_instructions


def make_plan(grid: int, blocks_per_wave: int, w_full: float, w0: float, w1: float, longest_loop: int,
              budget: float, *, min_step: int = MIN_CAP_STEP, max_cost: float = MAX_SAMPLE_WARP_INSTRUCTIONS,
              only_step: int | None = None) -> tuple[Plan | None, str]:
    """The runs to simulate. Per block: `w_full` warp instructions whole, `w0` with the long loops cut at
    level 0 and `w1` at level 1 (so one more level costs w1 - w0); loops are long when the longest has
    at least MIN_LOOP_TRIPS iterations. Levels are (s/2, s, 2s) with 2s below the longest loop's
    iterations (`only_step`: that s alone), and for the per-wave model also (0, 1, 2) and (0, 1).

    Per-wave model, when the grid has room for a first g1 blocks and WAVE_SPAN waves more (g1: one
    wave plus the grid's remainder, so the sample ends with a partial wave as the kernel does; or, from
    MANY_WAVES waves on, one wave, leaving the remainder to the model): runs of those blocks, at each
    level (one run with loops whole when no loop is long). Choice: the highest levels within `budget`
    warp instructions (the remainder simulated if it fits), else the cheapest plan (the later waves run
    out of step, so the lowest levels serve: docs/sampling.md).

    One wave deep: where that per-wave plan's levels stay under MIN_CAP_STEP (s) and the grid has fewer
    than MANY_WAVES waves, the loop model on the first wave (B blocks, the remainder not matched) at
    levels with s >= MIN_CAP_STEP, chosen as the loop model's first two choices below; the per-wave plan
    when none is within `max_cost` (the loop's first iterations cost what the prologue leaves, not
    the steady loop: docs/sampling.md, "gemm_mma at n = 4096").

    Loop model, for a grid of fewer waves with long loops: runs of the whole grid at each level.
    Choice: the highest levels with s >= `min_step` within `budget`; the cheapest with s >= `min_step`
    within `max_cost` (the first iterations of a first wave run apart from the steady state); the
    highest within `max_cost`; the cheapest. (None, why) when there is nothing to extrapolate."""
    B = blocks_per_wave
    k, r = divmod(grid, B)
    step = max(w1 - w0, 0.0)
    long = longest_loop >= MIN_LOOP_TRIPS and step > 0

    def wc(c: int | None) -> float:
        return w_full if c is None else min(w_full, w0 + c * step)

    steps = CAP_STEPS if only_step is None else (only_step,)
    triples = [(s // 2, s, 2 * s) for s in steps if 2 * s < longest_loop][::-1] if long else []
    firsts = [(B + r if r else B, True)] + ([(B, False)] if r and k >= MANY_WAVES else [])
    spans = [(g1 + WAVE_SPAN * B, matched) for g1, matched in firsts if g1 + WAVE_SPAN * B < grid]
    if spans:
        level_sets = (triples + ([(0, 1, 2), (0, 1)] if only_step is None else [])) if long else [(None,)]
        plans = [Plan("waves", g, levels, matched, g * sum(wc(c) for c in levels))
                 for levels in level_sets for g, matched in spans]
        if not plans:
            return None, f"no levels (s/2, s, 2s) with s = {only_step} fit loops of {longest_loop} iterations"
        within = [pl for pl in plans if pl.cost <= budget]
        chosen = within[0] if within else min(plans, key=lambda pl: pl.cost)
        if long and chosen.levels[1] < MIN_CAP_STEP and grid < MANY_WAVES * B:
            # Spanning three waves, the runs can afford only the loop's first iterations, whose cost per
            # iteration is its prologue's (the first copies' latency, a pipeline filling), not the
            # steady loop's; taken tens of times further it mispredicts (gemm_mma at n = 4096: a ramp and
            # drain of -79,186 cycles, an estimate below the tensor roof). With few waves, the first
            # wave's loops run to the steady state instead (the loop model, levels settled), the later
            # waves extrapolated from it (a whole wave: the slope is a full wave's; the grid's partial
            # last wave is then a fraction of one, with up to a whole wave in the bound).
            deep = [Plan("loops", B, levels, r == 0, B * sum(wc(c) for c in levels))
                    for levels in triples if levels[1] >= MIN_CAP_STEP]
            steady = ([pl for pl in deep if pl.cost <= budget][:1]
                      or sorted((pl for pl in deep if pl.cost <= max_cost), key=lambda pl: pl.cost)[:1])
            if steady:
                return steady[0], ""
        return chosen, ""
    if not triples:
        return None, (f"nothing to extrapolate: {grid:,} blocks fill {grid / B:.2f} waves of {B:,} (too few to "
                      f"sample {WAVE_SPAN + 1} and extrapolate), and no loop has {MIN_LOOP_TRIPS} iterations or more")
    plans = [Plan("loops", grid, levels, True, grid * sum(wc(c) for c in levels)) for levels in triples]
    late = [pl for pl in plans if pl.levels[1] >= min_step]
    for choice in ([pl for pl in late if pl.cost <= budget][:1],
                   sorted((pl for pl in late if pl.cost <= max_cost), key=lambda pl: pl.cost)[:1],
                   [pl for pl in plans if pl.cost <= max_cost][:1]):
        if choice:
            return choice[0], ""
    return min(plans, key=lambda pl: pl.cost), ""


def level_caps(trips: dict[int, int], level: int) -> dict[int, int]:
    """Caps of the long loops (at least MIN_LOOP_TRIPS iterations; the others run whole) for one level:
    the longest loop may take `level` backward branches, each other long loop the same fraction of its
    own (at least one when `level` is), so that every long loop is cut at the same point of its run."""
    longest = max(trips.values(), default=0)
    return {h: (0 if level == 0 else max(1, round(level * t / longest)))
            for h, t in trips.items() if t >= MIN_LOOP_TRIPS}


def hardware_roofs(cfg: Config, program, *, grid: int, warp_instructions: float, tensor_warp_instructions: float,
                   dram_bytes: float) -> dict[str, float]:
    """The least cycles the kernel's work takes at each unit's peak, on the SMs its grid can occupy (at
    most one a block): "issue", its warp instructions at `scheduler.issue_width` a cycle per sub-partition;
    "tensor", its mma holding each sub-partition's tensor core ceil(M N K / FMA a cycle of the inputs'
    precision) cycles (the shortest of the kernel's mma, for all of them); "DRAM", `dram_bytes` at
    `Config.dram_bytes_per_cycle()`. `sampling_model.floor_estimate` holds an estimate to the largest."""
    parts = min(cfg.chip.sm_count, grid) * cfg.sm.subpartitions
    roofs = {"issue": warp_instructions / (parts * cfg.scheduler.issue_width)}
    if tensor_warp_instructions > 0:
        tensor = cfg.units["tensor"]
        held = min(math.ceil(math.prod(MMA_DIMS[next(q for q in i.quals if q in MMA_DIMS)])
                             / tensor.fma_per_cycle(i.types[1]))
                   for i in program.instructions if i.opcode == "mma")
        roofs["tensor"] = tensor_warp_instructions * held / parts
    if dram_bytes > 0:
        roofs["DRAM"] = dram_bytes / cfg.dram_bytes_per_cycle()
    return roofs


def _check_blocks(wl, p: dict[str, Any], inputs: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    """Verify a sampled kernel where it was run whole: the blocks `_representative` ran with their loops
    uncut (first, quartiles, last) wrote their share of the outputs; every element of an output buffer
    they changed is compared with the numpy reference, within the workload's tolerance. The rest of
    the outputs was never computed (a sample's runs stop loops early): `elements` of `of` checked. A
    kernel with global atomics (a histogram's bins, a reduction's total) adds every block's share into
    the same elements, which hold the reference's values only once all blocks have run: not checked."""
    blocks = ", ".join(str(b) for b in written["blocks"])
    shared = [i.line for i in wl.program.instructions if i.opcode in ("atom", "red") and i.space == "global"]
    if shared:
        return {"verified": None, "elements": 0, "of": 0, "blocks": list(written["blocks"]),
                "message": f"not checked: the blocks add into shared outputs (global atomics, line {shared[0]}), "
                           f"complete only once every block has run (blocks {blocks} ran whole)"}
    expected = wl.reference(p, inputs)  # (it gets copies)
    checked = total = 0
    bad: list[str] = []
    for name, exp in expected.items():
        init = np.asarray(inputs[name]).reshape(-1)
        got = written["outputs"][name].reshape(-1)
        exp = np.asarray(exp).reshape(-1)
        changed = ~((got == init) | (np.isnan(got) & np.isnan(init)) if got.dtype.kind in "fc" else got == init)
        total += got.size
        checked += int(changed.sum())
        miss = compare({name: got[changed]}, {name: exp[changed]}, **wl.tolerance)
        if miss:
            m = miss[name]
            idx = int(np.flatnonzero(changed)[m["first_indices"][0]])
            bad.append(f"output '{name}' differs from the reference at {m['count']} of the {int(changed.sum()):,} "
                       f"elements the whole blocks wrote; first at flat index {idx}: got {m['got'][0]!r}, "
                       f"expected {m['expected'][0]!r}")
    if bad:
        verified, message = False, "; ".join(bad) + f" (blocks {blocks}, run whole)"
    elif checked == 0:
        verified, message = None, f"blocks {blocks}, run whole, changed no output element: nothing to verify"
    else:
        verified, message = True, (f"{checked:,} of {total:,} output elements (those of blocks {blocks}, run whole) "
                                   "match the reference")
    return {"verified": verified, "elements": checked, "of": total, "blocks": list(written["blocks"]),
            "message": message}


def _block_instructions(pl, cfg, block: int, cap: dict[int, int], max_steps: int | None) -> float:
    pl.restore()
    ex = Executor(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=cfg, block_ids=[block], loop_cap=cap,
                  max_steps_per_warp=max_steps)
    return float(ex.run().warp_instructions)


@dataclass
class _Kernel:
    """The whole kernel as a few whole blocks show it (`_representative`)."""

    rows: list[dict[str, int]]  # per block run whole: its id and its warp instructions
    trips: dict[int, int]  # per loop header pc: the most backward branches of one instance
    warp_instructions: float
    spread: float  # relative uncertainty of warp_instructions
    bytes_read: float
    bytes_written: float
    tensor_warp_instructions: float  # the kernel's mma warp instructions


def _representative(pl, cfg, max_steps: int | None, keep=None) -> _Kernel:
    """Run whole blocks functionally (the first, the quartiles and the last, in one batch, which costs
    about what one block does), counting each one's warp instructions and the loops' iterations. The
    kernel's warp instructions and global bytes: the first and last blocks as themselves, the others
    as the quartiles' mean (bytes: the mean of all); the spread: half the range of the first block and
    the quartiles, relative to their mean (the last block is often a partial one)."""
    G = pl.launch.num_blocks
    ids = sorted({0, G // 4, G // 2, (3 * G) // 4, G - 1})
    pl.restore()
    ex = Executor(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=cfg, block_ids=ids, loop_cap=COUNT_ONLY,
                  max_steps_per_warp=max_steps)
    st = ex.run()
    if keep is not None:
        keep(pl, ids)  # (the whole blocks' outputs, before the inputs are brought back)
    pl.restore()
    counts = [int(c) for c in ex.block_warp_instructions]
    rows = [{"block": i, "warp_instructions": c} for i, c in zip(ids, counts, strict=True)]
    if len(ids) == G:
        total, spread = float(sum(counts)), 0.0
    else:
        inner = counts[1:-1] or counts[:1]
        total = counts[0] + counts[-1] + (G - 2) * sum(inner) / len(inner)
        typical = counts[:-1]
        mean = sum(typical) / len(typical)
        spread = (max(typical) - min(typical)) / mean / 2 if mean else 0.0
    per_block = G / len(ids)
    return _Kernel(rows, dict(sorted(ex.loop_trips.items())), total, spread,
                   st.global_bytes_read * per_block, st.global_bytes_written * per_block,
                   st.by_unit[Unit.TENSOR] * total / max(1, st.warp_instructions))


__all__ = ["SAMPLE_MODES", "Plan", "SampleRun", "SampledResult", "level_caps", "make_plan", "simulate_sampled"]
