"""`simulate_sampled`: a workload simulated in full or sampled to a bound (docs/sampling.md), and
`sample_kernel`, the same for callers that want the estimate, its bound and the whole kernel's
statistics in one call (`gpusim validate --kernels`).

Steps: (1) the static check (`profile.data_dependent_addresses`): "auto" simulates a kernel whose
addresses come from loaded data in full; (2) the profile (`profile.profile_kernel`): a few whole blocks
on the functional executor alone, their outputs checked against the reference; (3) the first plan
(`plan.make_plan`); (4) its runs (`run.Runner`); (5) the estimate and its bound (`estimate`); while the
bound is wider than asked (default DEFAULT_BOUND), a larger plan (`plan.refine`: more waves, deeper
loop levels) and again (4)-(5), within a ceiling of warp instructions; (6) the decision: the estimate,
or, under "auto", the full simulation where the kernel is small, where no plan gains MIN_GAIN, where a
sampled run faults, or where the bound was not met and the kernel is affordable in full; (7) the whole
kernel's statistics from the same runs (`whole`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.analysis.sampling.estimate import estimate_cycles, estimate_subset, needs_fill
from gpusim.analysis.sampling.model import Estimate
from gpusim.analysis.sampling.plan import (
    MANY_WAVES,
    MAX_COST,
    MIN_CAP_STEP,
    Plan,
    Shape,
    fill_end,
    level_caps,
    make_plan,
    refine,
    sees_full_l2,
    subset_plan,
)
from gpusim.analysis.sampling.profile import (
    KernelProfile,
    ZeroRng,
    block_instructions,
    check_blocks,
    data_dependent_addresses,
    kernel_roofs,
    profile_kernel,
    value_dependent,
)
from gpusim.analysis.sampling.result import SampledResult
from gpusim.analysis.sampling.run import Runner, SampleRun, subset_config
from gpusim.analysis.sampling.whole import WholeKernel, whole_kernel
from gpusim.config import Config
from gpusim.config.occupancy import occupancy
from gpusim.errors import GpusimError, KernelFault, LaunchError, VerificationError
from gpusim.stats.report import SimResult
from gpusim.stats.simulate import configure, simulate
from gpusim.workloads import load_workload

SAMPLE_MODES = ("auto", "on", "off")
DEFAULT_BOUND = 0.05  # the bound a sample aims at (--sample-bound)
AUTO_MIN_WARP_INSTRUCTIONS = 2_000_000  # "auto" simulates smaller kernels in full (a second or two)
TARGET_GAIN = 20  # the first plan aims at this many times fewer simulated warp instructions than the kernel's
MIN_GAIN = 4  # "auto" samples only when the first plan simulates at least this many times fewer
MAX_SHARE = 0.1  # a sample grows towards its bound up to this share of a long kernel's warp instructions ...
MAX_SAMPLE_WARP_INSTRUCTIONS = 20_000_000  # ... and the first plan to at most this many (about ten seconds)
MAX_CEILING_WARP_INSTRUCTIONS = 200_000_000  # ... and all of them to at most this many
# about a minute of full simulation here (1 to 1.8 million warp instructions a CPU second, the inputs
# and the reference included): a shorter kernel's sample may take a quarter of it (1 / MIN_GAIN), a
# longer one's a tenth (MAX_SHARE: ten times faster than the full run)
FULL_MINUTE_WARP_INSTRUCTIONS = 70_000_000
# a few minutes: "auto" runs a kernel up to this size in full rather than return an estimate whose bound
# is wider than asked (softmax at 8192 x 8192 on h200, 7.8 waves of blocks whose loops are a third of
# their work: no sample within a tenth of it has a bound under 100 %)
FULL_AFFORDABLE_WARP_INSTRUCTIONS = 400_000_000
VERIFY_MAX_BYTES = 64 << 20  # the whole blocks' outputs are checked against the reference up to these inputs


@dataclass
class _Job:
    """One call's fixed parts."""

    wl: Any
    cfg: Config
    params: dict[str, Any]
    launch: Any
    blocks_per_wave: int
    sample: str
    bound: float
    seed: int
    max_steps: int | None
    max_cycles: int | None
    t0: float
    more: dict[str, Any] = field(default_factory=dict)  # SampledResult fields gathered on the way
    pl: Any = None
    check: Any = None  # the deferred check of the profiled blocks' outputs (`_verify`)
    subset: bool | None = None  # the SM subset: True forces it, False never, None where "auto" takes it (`_subset`)

    def base(self) -> dict[str, Any]:
        return dict(workload=self.wl.name, cfg=self.cfg, params=self.params, launch=self.launch, seed=self.seed,
                    requested=self.sample, grid_blocks=self.launch.num_blocks, blocks_per_wave=self.blocks_per_wave,
                    bound=self.bound)

    def full(self, reason: str, **extra) -> SampledResult:
        """The full simulation (the sample's memory released first), not checked against the reference
        (`result.full.verified` says whether it matched)."""
        if self.pl is not None:
            self.pl.release()
            self.pl = None
        r = simulate(self.wl, self.cfg, seed=self.seed, max_steps_per_warp=self.max_steps, max_cycles=self.max_cycles,
                     verify=False, **self.params)
        kw = {**self.more, **extra, "warp_instructions_estimated": int(r.kernel["warp_instructions"])}
        return SampledResult(**self.base(), mode="full", reason=reason, cycles=r.cycles, confidence=0.0,
                             wall_seconds=time.perf_counter() - self.t0, detail=r, full=r, result=r, **kw)

    def cannot(self, reason: str) -> SampledResult:
        if self.sample == "on":
            raise GpusimError(f"{self.wl.name}: cannot sample: {reason}; use --sample auto or off")
        return self.full(reason)


def simulate_sampled(workload, cfg: Config | str = "a100", *, sample: str = "auto", bound: float | None = None,
                     seed: int = 0, scheduler: str | None = None, overrides: dict[str, Any] | None = None,
                     max_steps_per_warp: int | None = None, max_cycles: int | None = None,
                     max_sample_warp_instructions: int | None = None, cap_step: int | None = None,
                     subset: bool | None = None, **params) -> SampledResult:
    """Simulate `workload` on `cfg` with `params`, sampled (see the module docstring). `sample`: "auto"
    (sample a large kernel to `bound` where that gains, else simulate in full), "on" (sample whenever the
    kernel has waves or loops to extrapolate, however small; for tests and studies) or "off" (full
    simulation, as `gpusim.simulate`). `bound` (relative, default DEFAULT_BOUND) is the error bound the
    sample grows towards: more waves, deeper loop levels. The first plan aims at a twentieth of the
    kernel's warp instructions (at most MAX_SAMPLE_WARP_INSTRUCTIONS), the sample grows to at most
    MAX_SHARE of them; `max_sample_warp_instructions` sets both instead. `cap_step` s forces the loop
    levels of the first plan: (s/2, s, 2s), the loop model's (s/2, s, 2s, 4s) (for studies of the method).
    `subset` True samples on a subset of the SMs (`plan.subset_plan`) where the grid allows, False never;
    None (default): "auto" takes it for a kernel of over a minute whose few waves' data fits the L2."""
    if sample not in SAMPLE_MODES:
        raise GpusimError(f"sample mode {sample!r}: expected one of {', '.join(SAMPLE_MODES)}")
    if bound is not None and not 0 < bound < 1:
        raise GpusimError(f"sample bound {bound!r}: expected a fraction between 0 and 1 (0.05 for 5 %)")
    t0 = time.perf_counter()
    wl = workload if hasattr(workload, "program") else load_workload(workload)
    cfg = configure(cfg, scheduler, overrides)
    wl = wl.for_config(cfg)  # the kernel as ptxas compiles it (gpusim.isa.ptxas)
    p = wl.params(params)
    launch = wl.launch(p)
    occ = occupancy(cfg, launch.threads_per_block, wl.program.regs_per_thread, wl.program.shared_bytes)
    if occ.active_blocks_per_sm == 0:
        raise LaunchError(f"the kernel cannot run on {cfg.name}: {occ.reason}", field="block")
    job = _Job(wl, cfg, p, launch, occ.active_blocks_per_sm * cfg.chip.sm_count, sample,
               DEFAULT_BOUND if bound is None else bound, seed, max_steps_per_warp, max_cycles, t0, subset=subset)
    if sample == "off":
        return job.full("--sample off")
    bad = data_dependent_addresses(wl.program)
    dependent = ""
    if bad:
        lines = ", ".join(str(wl.program.instructions[pc].line) for pc in bad)
        dependent = (f"global addresses depend on loaded data (line {lines}): the lines a sample touches "
                     "do not predict those of the whole kernel")
        if sample == "auto":
            return job.full(dependent)
    try:
        return _sample(job, max_sample_warp_instructions, cap_step, dependent)
    finally:
        if job.pl is not None:
            job.pl.release()


def _profile(job: _Job) -> KernelProfile:
    """Prepare the inputs (generated once) and profile the kernel (`profile_kernel`), keeping the whole
    blocks' outputs for `_verify` where the inputs are at most VERIFY_MAX_BYTES (the reference costs a
    pass over all of them, more than a sample of a larger kernel)."""
    wl, p = job.wl, job.params
    # a workload with a numpy reference is checked where it runs whole (a compiler's generated kernel,
    # which has none, is not)
    verifiable = hasattr(wl, "inputs") and hasattr(wl, "reference")
    inputs, zero = _inputs(job) if verifiable else (None, False)
    job.pl = pl = wl.prepare(p, seed=job.seed, cfg=job.cfg,
                             **({} if inputs is None else {"inputs": inputs, "zeros": zero}))
    if not zero:  # (zeros need not be brought back between runs: the timing does not depend on them)
        pl.snapshot()
    outputs = {k: v for k, v in (inputs or {}).items() if isinstance(v, np.ndarray)}  # the buffers, as prepared
    nbytes = sum(v.nbytes for v in outputs.values())
    keep = None
    if verifiable and nbytes <= VERIFY_MAX_BYTES:
        keep, job.check = _keeper(wl, p, inputs, outputs)
    elif verifiable:
        zeros = ("; the sample ran on zeros of the inputs' shapes (no branch, guard or address of the kernel "
                 "depends on its data, so neither do its cycles)" if zero else "")
        job.more["verification"] = {
            "verified": None, "elements": 0, "of": 0, "blocks": [],
            "message": f"not checked: the inputs are {nbytes / 2**20:,.0f} MiB, and the reference, a pass over all "
                       f"of them, would cost more than the sample (checked up to {VERIFY_MAX_BYTES / 2**20:,.0f} MiB)"
                       + zeros}
    del inputs, outputs
    prof = profile_kernel(pl, job.cfg, job.blocks_per_wave, job.max_steps, keep=keep)
    job.more.update(representative=prof.rows, loop_trips=prof.trips,
                    warp_instructions_estimated=round(prof.warp_instructions))
    return prof


def _inputs(job: _Job) -> tuple[dict[str, Any], bool]:
    """The workload's inputs, and whether they are zeros: a kernel whose timing does not depend on its
    data (`value_dependent`) and whose inputs are too large to verify runs its sample on zeros of the
    same shapes (`ZeroRng`: no random draws, no pages touched, no snapshot to bring back), which
    costs the large streaming kernels most of their sample's time (saxpy at n = 2^28: 2 GiB drawn)."""
    wl, p = job.wl, job.params
    if not value_dependent(wl.program):
        try:
            zeros = wl.inputs(p, job.seed, rng=ZeroRng())
        except (AttributeError, TypeError):  # a draw the stand-in lacks: the real inputs
            zeros = None
        if zeros is not None and sum(v.nbytes for v in zeros.values() if isinstance(v, np.ndarray)) > VERIFY_MAX_BYTES:
            return zeros, True
    return wl.inputs(p, job.seed), False


def _keeper(wl, p, inputs, outputs):
    """`profile_kernel`'s `keep` (the whole blocks' outputs read back) and the check of them."""
    written: dict[str, Any] = {}

    def keep(pl, ids):
        written.update(blocks=ids, outputs={k: pl.memory.read(pl.args[k], v.dtype, v.size).copy()
                                            for k, v in outputs.items()})

    return keep, lambda: check_blocks(wl, p, inputs, written)


def _verify(job: _Job) -> None:
    """Check the profiled blocks' outputs against the reference (`check_blocks`), once sampling is decided;
    a mismatch is a VerificationError."""
    if job.check is None:
        return
    job.more["verification"] = check = job.check()
    job.check = None
    if check["verified"] is False:
        wl, p = job.wl, job.params
        raise VerificationError(f"{wl.name} ({', '.join(f'{k}={v}' for k, v in p.items())}): {check['message']}")


def _shape(job: _Job, prof: KernelProfile) -> Shape:
    """The kernel's shape for planning: a middle block's warp instructions with its long loops cut at
    levels 0 and 1 (functionally), and the L2's fill where the kernel needs it."""
    w0 = w1 = prof.per_block
    if prof.longest_loop >= 16:
        mid = prof.rows[len(prof.rows) // 2]["block"]
        w0 = block_instructions(job.pl, job.cfg, mid, level_caps(prof.trips, 0), job.max_steps)
        w1 = block_instructions(job.pl, job.cfg, mid, level_caps(prof.trips, 1), job.max_steps)
    fill = prof.fill_waves(job.cfg.l2.size_bytes) if needs_fill(prof, job.cfg) else float("inf")
    return Shape(prof.grid, prof.blocks_per_wave, prof.per_block, w0, w1, prof.longest_loop, fill)


def _steady_from(shape: Shape):
    """Where a run of g blocks is in its steady state (the first block count of its snapshots): after its
    first wave, or after the L2's fill where the kernel needs it and the run goes through it."""
    B = shape.blocks_per_wave

    def start(g: int) -> int:
        end = fill_end(g, shape.fill, B)
        return B if end is None else round(end * shape.fill * B)

    return start


def _sample(job: _Job, max_sample: int | None, cap_step: int | None, dependent: str) -> SampledResult:
    prof = _profile(job)
    full_y = prof.warp_instructions
    if job.sample == "auto" and full_y < AUTO_MIN_WARP_INSTRUCTIONS:
        return job.full(f"a small kernel: about {full_y:,.0f} warp instructions, under {AUTO_MIN_WARP_INSTRUCTIONS:,}")
    if max_sample is None:
        budget = min(full_y / TARGET_GAIN, MAX_SAMPLE_WARP_INSTRUCTIONS)
        share = MAX_SHARE if full_y > FULL_MINUTE_WARP_INSTRUCTIONS else 1 / max(MIN_GAIN, 1)
        ceiling = max(budget, min(full_y * share, MAX_CEILING_WARP_INSTRUCTIONS))
        # the first plan, where none fits the budget: at most the ceiling under "auto"
        max_cost = max(ceiling, MAX_COST) if job.sample == "on" else ceiling
    else:
        budget = max_cost = ceiling = max_sample
    whole_cost = ceiling  # (loops run whole where that fits)
    on_subset = _subset(job, prof, ceiling, dependent)
    if on_subset is not None:
        return on_subset
    try:
        shape = _shape(job, prof)
        plan, why = make_plan(shape.grid, shape.blocks_per_wave, shape.w_full, shape.w0, shape.w1, shape.longest_loop,
                              budget, max_cost=max_cost, min_step=MIN_CAP_STEP if job.sample == "auto" else 1,
                              only_step=cap_step, fill=shape.fill, whole_cost=whole_cost)
        if plan is None:
            return job.cannot(why)
        why = _not_worth(job, plan, shape, prof)
        if why:
            return job.cannot(why)
        _verify(job)
        runner = Runner(job.pl, job.cfg, prof.trips, dirty=prof.dirty, blocks_per_wave=job.blocks_per_wave,
                        steady_from=_steady_from(shape),
                        max_steps=job.max_steps, max_cycles=job.max_cycles)
        roofs = kernel_roofs(job.cfg, job.wl.program, prof)
        job.more["roofs"] = roofs
        plan, est, steps = _converge(job, runner, plan, shape, prof, roofs, max(ceiling, plan.cost))
    except KernelFault as e:  # a loop cut short can compute an address the kernel never does
        return job.cannot(f"a sampled run faults, so the kernel is simulated whole ({e})")
    runs = runner.every_run()
    job.more["steps"] = steps
    if job.sample == "auto" and est.confidence > job.bound and full_y <= FULL_AFFORDABLE_WARP_INSTRUCTIONS:
        worst = max(est.bounds, key=est.bounds.get)
        return job.full(f"the sampled estimate, {est.cycles:,} cycles +- {est.confidence:.1%} (mostly {worst}), "
                        f"misses the {job.bound:.0%} bound, and about {full_y:,.0f} warp instructions are "
                        "affordable in full", estimate=est, runs=runs)
    return _sampled(job, plan, runner, prof, est, dependent)


def _subset(job: _Job, prof: KernelProfile, ceiling: float, dependent: str) -> SampledResult | None:
    """The SM subset (`plan.subset_plan`, `model.on_subsets`) where it applies: forced (`job.subset`), or
    under "auto" a kernel of over FULL_MINUTE_WARP_INSTRUCTIONS of fewer than MANY_WAVES waves whose data
    fits the L2 (a subset keeps the whole L2, so its lines stay as in the kernel; the wave and loop models
    extrapolate such a grid from its first wave or its first iterations, whose blocks run in step); under
    "auto", the full run where its bound is missed and the kernel is affordable in full. None where it
    does not apply (the other plans then)."""
    G, S = prof.grid, job.cfg.chip.sm_count
    if job.subset is None:
        applies = (job.sample == "auto" and prof.warp_instructions > FULL_MINUTE_WARP_INSTRUCTIONS
                   and G < MANY_WAVES * job.blocks_per_wave and prof.footprint <= job.cfg.l2.size_bytes)
    else:
        applies = job.subset
    plan = subset_plan(G, S, prof.per_block, ceiling) if applies else None
    if plan is None:
        return None
    _verify(job)
    runner = Runner(job.pl, job.cfg, prof.trips, dirty=prof.dirty, blocks_per_wave=job.blocks_per_wave,
                    max_steps=job.max_steps, max_cycles=job.max_cycles)
    roofs = kernel_roofs(job.cfg, job.wl.program, prof)
    job.more["roofs"] = roofs
    try:
        runs, _ = runner.runs(plan)
    except KernelFault as e:
        return job.cannot(f"a sampled run faults, so the kernel is simulated whole ({e})")
    est = estimate_subset(runs, prof, roofs)
    met = est.confidence <= job.bound
    verdict = "<=" if met else ">"
    job.more["steps"] = [f"{plan.describe()} (first plan)",
                         f"bound {est.confidence:.2%} {verdict} {job.bound:.0%}: {'met' if met else 'missed'}"]
    if job.sample == "auto" and not met and prof.warp_instructions <= FULL_AFFORDABLE_WARP_INSTRUCTIONS:
        worst = max(est.bounds, key=est.bounds.get)
        return job.full(f"the sampled estimate on a subset of the SMs, {est.cycles:,} cycles +- {est.confidence:.1%} "
                        f"(mostly {worst}), misses the {job.bound:.0%} bound, and about {prof.warp_instructions:,.0f} "
                        "warp instructions are affordable in full", estimate=est, runs=runs)
    return _sampled(job, plan, runner, prof, est, dependent)


def _not_worth(job: _Job, plan: Plan, shape: Shape, prof: KernelProfile) -> str:
    """Why "auto" simulates in full rather than take `plan`: it would simulate more than 1 / MIN_GAIN of
    the kernel, or the kernel's data overflows the L2 and the plan sees the L2 neither full nor warm
    while the kernel is affordable in full (the "L2 write-backs" term would miss the bound); "" else."""
    full_y = prof.warp_instructions
    if job.sample != "auto":
        return ""
    if full_y < MIN_GAIN * plan.cost:
        return (f"too few waves or loop iterations to gain: the best plan simulates about {plan.cost:,.0f} of "
                f"{full_y:,.0f} warp instructions")
    blind = (plan.kind == "waves" and not plan.warm and math.isfinite(shape.fill)
             and not sees_full_l2(plan.blocks, shape.fill, shape.blocks_per_wave))
    if blind and full_y <= FULL_AFFORDABLE_WARP_INSTRUCTIONS:
        return (f"the kernel's data ({prof.footprint / 2**20:,.0f} MiB, {prof.dirty:.0%} of it written) overflows the "
                f"L2 ({job.cfg.l2.size_bytes / 2**20:,.0f} MiB) and no affordable sample sees the L2 full, while the "
                f"kernel, about {full_y:,.0f} warp instructions, is affordable in full")
    return ""


def _converge(job: _Job, runner: Runner, plan: Plan, shape: Shape, prof: KernelProfile, roofs: dict[str, float],
              ceiling: float) -> tuple[Plan, Estimate, list[str]]:
    """Run `plan`, estimate, and while the bound is wider than `job.bound` run the next plan `refine`
    gives, within `ceiling` warp instructions in all. Returns the last plan, its estimate and the
    steps (each plan and why it was taken)."""
    steps = [f"{plan.describe()} (first plan)"]
    while True:
        cold, warm = runner.runs(plan)
        in_step = runner.run(plan.kind, plan.in_step_blocks, plan.levels[0]) if plan.in_step_blocks else None
        est = estimate_cycles(plan, cold, warm, prof, job.cfg, roofs, runner.steady_from, in_step)
        if est.confidence <= job.bound:
            steps.append(f"bound {est.confidence:.2%} <= {job.bound:.0%}: met")
            return plan, est, steps
        nxt, why = refine(plan, shape, est.bounds, spent=runner.spent, ceiling=ceiling, done=set(runner.done))
        if nxt is None:
            steps.append(f"bound {est.confidence:.2%} > {job.bound:.0%}: {why}")
            return plan, est, steps
        steps.append(f"bound {est.confidence:.2%} > {job.bound:.0%}, mostly {why}")
        plan = nxt


def _sampled(job: _Job, plan: Plan, runner: Runner, prof: KernelProfile, est: Estimate, dependent: str
             ) -> SampledResult:
    """The sampled result: the estimate, the whole kernel's statistics (`whole_kernel`), the largest
    cold run's SimResult as `detail`, and the reason."""
    cold, warm = runner.runs(plan)
    biggest = max(cold, key=lambda r: r.warp_instructions)
    detail = SimResult.build(subset_config(job.cfg, biggest.sms) if biggest.sms else job.cfg, _SampledPart(biggest),
                             biggest.timing, wall_seconds=biggest.wall_seconds)
    flops = job.wl.flops(job.params) if callable(getattr(job.wl, "flops", None)) else None
    part = WholeKernel(job.wl, job.params, job.seed, job.launch, prof.kernel_stats(), flops)
    wall = time.perf_counter() - job.t0
    result = whole_kernel(plan, cold, warm, prof, est, job.cfg, part, wall_seconds=wall)
    reason = _reason(job, plan, prof, est, dependent)
    result.sampling = {"decision": "sampled", "reason": reason, "confidence": est.confidence,
                       "bound_target": job.bound}
    runs = runner.every_run()
    runner.release()
    return SampledResult(**job.base(), mode="sampled", reason=reason, cycles=est.cycles, confidence=est.confidence,
                         wall_seconds=time.perf_counter() - job.t0, estimate=est, runs=runs, detail=detail,
                         result=result, **job.more)


def _reason(job: _Job, plan: Plan, prof: KernelProfile, est: Estimate, dependent: str) -> str:
    l2 = job.cfg.l2.size_bytes
    notes = []
    if plan.kind == "sms":
        notes.append(f"on a subset of the SMs: the first {plan.blocks:,} blocks on {plan.sms[-1]} of the "
                     f"{job.cfg.chip.sm_count} SMs ({plan.subset_blocks[0]:,} on {plan.sms[0]} for the bound), each "
                     "running its share of the grid's blocks, loops whole")
    if plan.warm:
        notes.append(f"the kernel's data ({prof.footprint / 2**20:,.0f} MiB, {prof.dirty:.0%} of it written) overflows "
                     f"the L2 ({l2 / 2**20:,.0f} MiB): the sets fill around wave {est.fill_waves:,.1f}, from a cold L2 "
                     "to a warm one (the sample run again from a full L2)")
    elif plan.kind == "waves" and needs_fill(prof, job.cfg) and "L2 write-backs" not in est.bounds:
        notes.append(f"the kernel's data ({prof.footprint / 2**20:,.0f} MiB, {prof.dirty:.0%} of it written) overflows "
                     f"the L2 ({l2 / 2**20:,.0f} MiB): simulated through the L2's fill (around wave "
                     f"{prof.fill_waves(l2):,.1f}) to its steady state")
    if est.bounds.get("L2 write-backs", 0) > 0.01 * est.cycles:
        notes.append(f"the kernel's data ({prof.footprint / 2**20:,.0f} MiB) is more than the L2 holds "
                     f"({l2 / 2**20:,.0f} MiB), and the sample less: the write-backs of its dirty "
                     "lines once the L2 is full are outside the sample (bounded in the confidence)")
    if est.floored_from is not None:
        notes.append(f"the extrapolation, {est.floored_from:,} cycles, fell below the {est.floor_roof} roof "
                     f"({est.floor:,.0f} cycles: the kernel's work at the units' peak): raised to it, the "
                     "shortfall added to the bound ('roof floor')")
    if dependent:
        notes.append(dependent)
    if est.confidence > job.bound:
        worst = max(est.bounds, key=est.bounds.get)
        notes.append(f"the bound, {est.confidence:.1%} (mostly '{worst}'), misses the {job.bound:.0%} asked for: no "
                     "larger sample fits the ceiling, and the kernel is too large to simulate in full")
    return "; ".join(notes) or "steady state extrapolated"


class _SampledPart:
    """What SimResult.build reads of a run, for a sampled part: its functional stats, no workload
    provenance and no verification (its values are not the kernel's)."""

    ok = None
    flops = None
    bytes_moved = None
    workload = None
    params: dict = {}
    seed = None
    launch = None

    def __init__(self, run: SampleRun):
        self.result = type("R", (), {"stats": run.stats})()

    def summary(self) -> dict[str, Any]:
        return {"verified": None, "stats": self.result.stats.to_dict()}


@dataclass
class KernelSample:
    """`sample_kernel`'s answer: the cycles (exact when run in full), their relative bound, the whole
    kernel's SimResult (metrics, verdict, `bounds` per metric when sampled), whether it was sampled and
    why, and the SampledResult itself."""

    cycles: int
    bound: float
    low: int
    high: int
    result: SimResult
    sampled: bool
    reason: str
    sampled_result: SampledResult


def sample_kernel(workload, cfg: Config | str, params: dict[str, Any] | None = None, *,
                  bound: float = DEFAULT_BOUND, seed: int = 0, **kw) -> KernelSample:
    """Simulate `workload` at `params` on `cfg`, sampled to `bound` ("auto": in full where that is the
    cheaper way to an exact answer), returning the cycles, their bound, and the whole kernel's
    statistics (`KernelSample.result`, a SimResult): the call `gpusim validate --kernels` makes for
    the large H200 sizes. Other keywords go to `simulate_sampled`."""
    r = simulate_sampled(workload, cfg, sample="auto", bound=bound, seed=seed, **kw, **(params or {}))
    low = r.estimate.low if r.sampled else r.cycles
    high = r.estimate.high if r.sampled else r.cycles
    return KernelSample(r.cycles, r.confidence, low, high, r.result, r.sampled, r.reason, r)


__all__ = ["AUTO_MIN_WARP_INSTRUCTIONS", "DEFAULT_BOUND", "KernelSample", "SAMPLE_MODES", "sample_kernel",
           "simulate_sampled"]
