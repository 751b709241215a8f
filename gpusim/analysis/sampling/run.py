"""The detailed runs of a sample (step 4 of docs/sampling.md): each from the same prepared inputs, the
first g blocks of the grid through the functional executor and the timing model with the long loops cut
at a level, from a cold L2 or a warm one. A run is simulated once however many plans ask for it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
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
    timing: Any = field(default=None, compare=False, repr=False)
    stats: Any = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[int, int | None, bool]:
        return (self.blocks, self.loop_cap, self.warm_l2 is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "blocks": self.blocks, "loop_cap": self.loop_cap,
                "loop_caps": {str(k): v for k, v in (self.loop_caps or {}).items()}, "cycles": self.cycles,
                "warp_instructions": self.warp_instructions, "global_bytes": self.global_bytes,
                "wall_seconds": self.wall_seconds, "warm_l2": self.warm_l2}


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

    @property
    def spent(self) -> int:
        return sum(r.warp_instructions for r in self.done.values())

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
                                       int(st.global_bytes), time.perf_counter() - t1, warm_l2, te.timing, st)
        return self.done[key]

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
        """The plan's runs from a cold L2 and (with `plan.warm`) from a warm one, each in level order."""
        cold = [self.run(plan.kind, g, c) for g, c in plan.runs()]
        warm = [self.run(plan.kind, plan.warm_blocks, c, True) for c in plan.levels] if plan.warm else []
        return cold, warm

    def release(self) -> None:
        """Let the runs' timings go (their timelines and counters), keeping the runs' figures."""
        from dataclasses import replace

        self.done = {k: replace(r, timing=None, stats=None) for k, r in self.done.items()}


__all__ = ["Runner", "SampleRun"]
