"""The detailed runs of a sample (step 4 of docs/sampling.md): each from the same prepared inputs, the
first g blocks of the grid through the functional executor and the timing model with the long loops cut
at a level, from a cold L2 or a warm one. A run is simulated once however many plans ask for it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from gpusim.analysis.sampling.plan import Plan, level_caps
from gpusim.stats.simulate import timed_execute


@dataclass(frozen=True)
class SampleRun:
    """One detailed run of the sample: its first `blocks` blocks, loops capped at `loop_cap`, from a cold
    L2 (`warm_l2` None) or one full of foreign lines, that fraction of them dirty. `timing` and `stats`
    are its KernelTiming and the functional executor's stats (not in `to_dict`)."""

    purpose: str  # the plan's kind: "waves" (several waves) or "loops" (the grid of a few waves or less)
    blocks: int
    loop_cap: int | None  # iterations the longest loop may take (None: every loop runs whole)
    loop_caps: dict[int, int] | None  # per loop header pc: the cap of each long loop
    cycles: int
    warp_instructions: int
    global_bytes: int
    wall_seconds: float
    warm_l2: float | None = None  # the run started from a warm L2, this fraction of its lines dirty
    sms: int | None = None  # the run was on a chip of this many of the config's SMs (`subset_config`)
    timing: Any = field(default=None, compare=False, repr=False)
    stats: Any = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[int, int | None, bool]:
        return (self.blocks, self.loop_cap, self.warm_l2 is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "blocks": self.blocks, "loop_cap": self.loop_cap,
                "loop_caps": {str(k): v for k, v in (self.loop_caps or {}).items()}, "cycles": self.cycles,
                "warp_instructions": self.warp_instructions, "global_bytes": self.global_bytes,
                "wall_seconds": self.wall_seconds, "warm_l2": self.warm_l2,
                **({"sms": self.sms} if self.sms else {})}


def subset_config(cfg, k: int):
    """`cfg` with k of its SMs: the L2's slices in proportion (the nearest count that splits into its
    partitions and its sets, so that each SM has about the L2 bandwidth it has on the whole chip), its size
    and the DRAM as they are (the SM subset is taken for kernels whose data fits the L2)."""
    l2 = cfg.l2
    sets = l2.size_bytes // (l2.ways * l2.line_size_bytes)
    want = l2.slices * k / cfg.chip.sm_count
    valid = [n for n in range(l2.partitions, l2.slices + 1, l2.partitions) if sets % n == 0] or [l2.slices]
    slices = min(valid, key=lambda n: (abs(n - want), n))
    return replace(cfg, chip=replace(cfg.chip, sm_count=k), l2=replace(l2, slices=slices))


class Runner:
    """Simulates runs of one prepared kernel (`pl`: a PreparedLaunch with a snapshot of its inputs) and
    keeps them: `run` simulates a run once, `runs(plan)` all of a plan's, `spent` counts the warp
    instructions simulated so far."""

    def __init__(self, pl, cfg, trips: dict[int, int], *, dirty: float, blocks_per_wave: int, steady_from=None,
                 max_steps: int | None = None, max_cycles: int | None = None):
        self.pl, self.cfg, self.trips, self.dirty = pl, cfg, trips, dirty
        self.blocks_per_wave = blocks_per_wave
        self.steady_from = steady_from  # blocks -> where a run of that many is in its steady state
        self.max_steps, self.max_cycles = max_steps, max_cycles
        self.done: dict[tuple[int, int | None, bool], SampleRun] = {}
        self.on_subsets: dict[int, SampleRun] = {}  # runs on a subset of the SMs, by their count

    @property
    def spent(self) -> int:
        return sum(r.warp_instructions for r in self.every_run())

    def every_run(self) -> list[SampleRun]:
        """The runs made so far: on the whole chip, then on subsets of its SMs."""
        return [*self.done.values(), *self.on_subsets.values()]

    def run(self, purpose: str, blocks: int, cap: int | None, warm: bool = False) -> SampleRun:
        key = (blocks, cap, warm)
        if key not in self.done:
            pl = self.pl
            caps = None if cap is None else level_caps(self.trips, cap)
            warm_l2 = self.dirty if warm else None
            pl.restore()
            t1 = time.perf_counter()
            te = timed_execute(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=self.cfg,
                               max_steps_per_warp=self.max_steps, max_cycles=self.max_cycles, block_limit=blocks,
                               loop_cap=caps, warm_l2=warm_l2, snapshots=self.snapshots(blocks))
            st = te.stats
            self.done[key] = SampleRun(purpose, blocks, cap, caps, int(te.timing.cycles), int(st.warp_instructions),
                                       int(st.global_bytes), time.perf_counter() - t1, warm_l2, timing=te.timing,
                                       stats=st)
        return self.done[key]

    def on_sms(self, k: int, blocks: int) -> SampleRun:
        """A run of the first `blocks` blocks, loops whole, on a chip of k of the config's SMs
        (`subset_config`), from a cold L2."""
        if k not in self.on_subsets:
            pl, cfg = self.pl, subset_config(self.cfg, k)
            pl.restore()
            t1 = time.perf_counter()
            te = timed_execute(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=cfg,
                               max_steps_per_warp=self.max_steps, max_cycles=self.max_cycles, block_limit=blocks)
            st = te.stats
            self.on_subsets[k] = SampleRun("sms", blocks, None, None, int(te.timing.cycles), int(st.warp_instructions),
                                           int(st.global_bytes), time.perf_counter() - t1, None, k, te.timing, st)
        return self.on_subsets[k]

    def snapshots(self, blocks: int) -> tuple[int, ...]:
        """The block counts at which a run of `blocks` keeps its counters: where its steady state
        starts, where its drain starts (a wave before its end: no block is dispatched after), and halfway
        between (none when the steady part is shorter than a twentieth of a wave)."""
        if self.steady_from is None:
            return ()
        B = self.blocks_per_wave
        s, e = self.steady_from(blocks), blocks - B
        return (s, (s + e) // 2, e) if e - s >= max(2, B // 20) else ()

    def runs(self, plan: Plan) -> tuple[list[SampleRun], list[SampleRun]]:
        """The plan's runs from a cold L2 and (with `plan.warm`) from a warm one, each in level order (an SM
        subset's: its runs in the order of their SMs)."""
        if plan.kind == "sms":
            return [self.on_sms(k, g) for k, g in zip(plan.sms, plan.subset_blocks, strict=True)], []
        cold = [self.run(plan.kind, g, c) for g, c in plan.runs()]
        warm = [self.run(plan.kind, plan.warm_blocks, c, True) for c in plan.levels] if plan.warm else []
        return cold, warm

    def release(self) -> None:
        """Let the runs' timings go (their timelines and counters), keeping the runs' figures."""
        self.done = {k: replace(r, timing=None, stats=None) for k, r in self.done.items()}
        self.on_subsets = {k: replace(r, timing=None, stats=None) for k, r in self.on_subsets.items()}


__all__ = ["Runner", "SampleRun", "subset_config"]
