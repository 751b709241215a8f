"""What to simulate (step 3 of docs/sampling.md): a plan of detailed runs of a kernel's first blocks, at
one or more loop-cap levels, from a cold L2 and maybe again from a warm one (`make_plan`), and, when the
estimate's bound is wider than asked, the next, larger plan that should narrow it (`refine`). Pure
functions of the kernel's shape (`KernelProfile`) and warp-instruction counts."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

MIN_LOOP_TRIPS = 16  # loops shorter than this always run whole; longer ones are cut only to fit the budget
MANY_WAVES = 8  # from this many waves on, the sample may leave the last wave's remainder to the model
WAVE_SPAN = 2  # waves simulated after the first one to measure the per-wave time
CAP_STEPS = (2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)  # s of the cap levels (s/2, s, 2s)
MIN_CAP_STEP = 4  # "auto" takes the slope from 4 iterations on: the first few run apart from the steady state
# the loop model's levels: s/2, s, 2s and 4s, so that the slope it extrapolates (the top pair's) is checked
# against the two pairs below it, over two doublings (two shallow slopes can agree by chance: matmul_naive at
# n = 256 on h200, 320 and 318 cycles an iteration over levels 2/4/8, 344 on average over the whole loop)
LOOP_LEVELS = 4
# where a run through the L2's fill is in its steady state, in fills: after two where that fits the ceiling,
# else after 1.5. By 1.5 x the fill the sets are full (96 % of allocations evict, `model.eviction_fraction`),
# but until the second fill the lines evicted are those the cold L2 took in, and the waves run a little
# faster than the kernel's later ones (on h200: saxpy at 2^28, waves 33-56 1,570 cycles, from 58 on 1,582;
# vecadd 1,555, from 2 x 19.4 on 1,577; transpose_naive at 8192^2, waves 44-52 9,020, from 57 on 9,250: its
# run to 1.5 fills and 8 waves on missed by -2.0 %, which the "waves" term's drift floor now holds)
FILL_ENDS = (2.0, 1.5)
MAX_COST = 6_000_000  # a first plan's warp instructions, where none fits the budget, at most (make_plan's default)
STEADY_WAVES = 3  # waves a run simulates past the L2's fill to measure the steady state after it (at least)
STEADY_WAVES_WANTED = 8  # ... and where that fits: the steady per-wave time's error shrinks as 1 / sqrt(waves)
WARM_WAVES = 8  # waves a run from a warm L2 spans: its first waves evict in a burst (saxpy on h200: 3 waves 7 % slow)
# the bound terms each refinement narrows (others are left as they are)
# the SM subset (`subset_plan`): runs of the kernel's first blocks on k and 2k of the chip's SMs, k from these
SUBSET_SMS = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
# a run on a few SMs simulates every cycle of the kernel for few warps: on h200 it took 1.4 to 2 times the CPU
# a warp instruction of the whole chip's runs (matmul_tiled at n = 1024 on 4 and 8 SMs), so its warp
# instructions count this many times against the ceiling
SUBSET_COST = 1.4
MORE_WAVES = ("waves", "ramp and drain", "L2 fill", "L2 transition", "L2 write-backs", "last wave")
DEEPER = ("loops", "first wave in step", "roof floor")


@dataclass(frozen=True)
class Plan:
    """The detailed runs of a sample: the first `blocks` blocks at each loop-cap level of `levels` (None:
    loops whole), and with `warm` again from a warm L2 (the two-phase model). `kind` "waves": the runs
    span several waves (the per-wave model); "loops": they are the whole grid of a few waves or less,
    or the first wave of a grid of fewer than MANY_WAVES (the loop model)."""

    kind: str
    blocks: int
    levels: tuple[int | None, ...]
    remainder_matched: bool  # the sampled blocks end with the grid's partial last wave
    cost: float  # estimated warp instructions simulated
    warm: bool = False
    warm_blocks: int = 0  # the first blocks of the runs from a warm L2
    # a loop plan on the first wave of a larger grid: a run of this many first blocks (two waves) at its lowest
    # level, for how the later waves run against the first (`model._loops`' "later waves")
    in_step_blocks: int = 0
    sms: tuple[int, ...] = ()  # an SM subset (kind "sms"): the SM counts of its runs, `blocks` on the last
    subset_blocks: tuple[int, ...] = ()  # ... and the first blocks each of them runs

    def runs(self) -> list[tuple[int, int | None]]:
        return [(self.blocks, c) for c in self.levels]

    def keys(self) -> list[tuple[int, int | None, bool]]:
        """Each run as (blocks, level, from a warm L2)."""
        return ([(self.blocks, c, False) for c in self.levels]
                + ([(self.warm_blocks, c, True) for c in self.levels] if self.warm else [])
                + ([(self.in_step_blocks, self.levels[0], False)] if self.in_step_blocks else []))

    def describe(self) -> str:
        if self.kind == "sms":
            return (f"{self.blocks:,} blocks on {self.sms[-1]} SMs and the first "
                    + ", ".join(f"{g:,} on {k}" for k, g in zip(self.sms[:-1], self.subset_blocks[:-1], strict=True))
                    + ", loops whole")
        levels = "loops whole" if self.levels == (None,) else "loops cut at " + "/".join(map(str, self.levels))
        warm = f", and {self.warm_blocks:,} from a warm L2" if self.warm else ""
        step = f", and {self.in_step_blocks:,} at {self.levels[0]}" if self.in_step_blocks else ""
        return f"{self.blocks:,} blocks, {levels}{warm}{step}"


@dataclass(frozen=True)
class Shape:
    """What a plan's cost depends on: the grid, a wave, a block's warp instructions whole (`w_full`),
    with its long loops cut at level 0 (`w0`) and 1 (`w1`), the longest loop's iterations, and the
    waves by which the kernel's data fills the L2 when it writes (`fill`: inf when it need not be
    simulated through)."""

    grid: int
    blocks_per_wave: int
    w_full: float
    w0: float
    w1: float
    longest_loop: int
    fill: float = math.inf

    @property
    def long(self) -> bool:
        return self.longest_loop >= MIN_LOOP_TRIPS and self.w1 > self.w0

    def per_block(self, cap: int | None) -> float:
        return self.w_full if cap is None else min(self.w_full, self.w0 + cap * max(self.w1 - self.w0, 0.0))

    def cost(self, blocks: int, levels: tuple[int | None, ...], warm_blocks: int = 0) -> float:
        """Warp instructions of runs of `blocks` at each of `levels` (and of `warm_blocks` from a warm L2)."""
        return (blocks + warm_blocks) * sum(self.per_block(c) for c in levels)

    def warm_blocks(self, blocks: int) -> int:
        """The blocks of the runs from a warm L2 beside cold runs of `blocks`: WARM_WAVES waves (at least
        as many as the cold ones, fewer than the grid)."""
        B = self.blocks_per_wave
        return min(max(blocks, self.first()[0] + (WARM_WAVES - 1) * B), self.grid - 1)

    def first(self) -> tuple[int, bool]:
        """The first wave and the grid's remainder (g1, matched); from MANY_WAVES waves on, a first wave
        alone when the remainder is left to the model is asked for by `matched` False."""
        B = self.blocks_per_wave
        r = self.grid % B
        return (B + r if r else B), True

    def through_fill(self, steady: int = STEADY_WAVES, end: float = FILL_ENDS[0]) -> int | None:
        """The blocks of a run that goes `end` x the fill and `steady` waves further, with the grid's
        remainder (the natural fill: the L2 then holds the kernel's own lines), or None when the kernel
        need not or cannot."""
        if not math.isfinite(self.fill):
            return None
        B = self.blocks_per_wave
        g = math.ceil(end * self.fill + steady) * B + self.grid % B
        return g if g < self.grid else None


def fill_end(blocks: int, fill: float, blocks_per_wave: int) -> float | None:
    """The most fills (of FILL_ENDS) after which a run of the first `blocks` blocks still has STEADY_WAVES
    waves of steady state (`fill`: the waves by which the kernel's data fills the L2), or None."""
    if not math.isfinite(fill):
        return None
    return next((e for e in FILL_ENDS if blocks >= (e * fill + STEADY_WAVES) * blocks_per_wave), None)


def sees_full_l2(blocks: int, fill: float, blocks_per_wave: int) -> bool:
    """Whether a run of the first `blocks` blocks sees the L2 full and its steady state after (`fill_end`)."""
    return fill_end(blocks, fill, blocks_per_wave) is not None


def _level_sets(shape: Shape, only_step: int | None, count: int = 3) -> list[tuple[int, ...]]:
    """The level sets (s/2, s, 2s, ...: `count` levels, each twice the one before) whose top is below the
    longest loop's iterations, deepest first (`only_step`: that s alone)."""
    steps = CAP_STEPS if only_step is None else (only_step,)
    sets = [(s // 2, *(s << i for i in range(count - 1))) for s in steps]
    return [ls for ls in sets if ls[-1] < shape.longest_loop][::-1] if shape.long else []


def make_plan(grid: int, blocks_per_wave: int, w_full: float, w0: float, w1: float, longest_loop: int,
              budget: float, *, min_step: int = MIN_CAP_STEP, max_cost: float | None = None,
              only_step: int | None = None, fill: float = math.inf,
              whole_cost: float | None = None) -> tuple[Plan | None, str]:
    """The first runs to simulate. Per block: `w_full` warp instructions whole, `w0` with the long loops
    cut at level 0 and `w1` at level 1 (so one more level costs w1 - w0). Levels are (s/2, s, 2s) with
    2s below the longest loop's iterations (`only_step`: that s alone).

    Per-wave model, when the grid has room for a first g1 blocks and WAVE_SPAN waves more (g1: one wave
    plus the grid's remainder, so the sample ends with a partial wave as the kernel does; or, from
    MANY_WAVES waves on, one wave, leaving the remainder to the model): one run with loops whole where
    that fits `whole_cost` (default `budget`: loops are cut only where whole ones cost too much; a
    loop cut short is a model, its whole run is the kernel's),
    else runs at the highest levels within the budget (the remainder simulated if it fits), else the
    cheapest. A kernel whose data overflows the L2 and that writes (`fill`: the waves by which its data
    fills the L2) is simulated through the fill where that fits `max_cost` (the run's last waves then
    see the L2 in its steady state, holding the kernel's own lines), else from a cold and a warm L2
    (`Plan.warm`, the two-phase model).

    One wave deep: where the per-wave plan's levels stay under MIN_CAP_STEP (s) and the grid has fewer
    than MANY_WAVES waves, the loop model on the first wave (B blocks, the remainder not matched) at
    levels with s >= MIN_CAP_STEP; the per-wave plan when none is within `max_cost`.

    Loop model, for a grid of fewer waves with long loops, at LOOP_LEVELS levels (s/2, s, 2s, 4s, the top
    below the longest loop's iterations: the slope it takes is checked against two pairs below it): runs
    of the whole grid at each level, or, for
    a grid of more than a wave, of its first wave alone. Choice: the highest levels with s >= `min_step`
    within `budget` (the whole grid, else the first wave); the cheapest with s >= `min_step` within
    `max_cost` (likewise); the highest within `max_cost`; the cheapest. (None, why) when there is nothing
    to extrapolate."""
    shape = Shape(grid, blocks_per_wave, w_full, w0, w1, longest_loop, fill)
    max_cost = max(budget, MAX_COST) if max_cost is None else max_cost
    B = blocks_per_wave
    k, r = divmod(grid, B)
    triples = _level_sets(shape, only_step)
    firsts = [(B + r if r else B, True)] + ([(B, False)] if r and k >= MANY_WAVES else [])
    spans = [(g1 + WAVE_SPAN * B, matched) for g1, matched in firsts if g1 + WAVE_SPAN * B < grid]
    if spans:
        if shape.long and only_step is not None and not triples:
            return None, f"no levels (s/2, s, 2s) with s = {only_step} fit loops of {longest_loop} iterations"
        whole = budget if whole_cost is None else max(budget, whole_cost)
        return _wave_plan(shape, spans, triples, budget, max_cost, only_step, whole), ""
    quads = _level_sets(shape, only_step, LOOP_LEVELS)
    if not quads:
        return None, (f"nothing to extrapolate: {grid:,} blocks fill {grid / B:.2f} waves of {B:,} (too few to "
                      f"sample {WAVE_SPAN + 1} and extrapolate), and no loop has {MIN_LOOP_TRIPS} iterations or more")
    plans = [Plan("loops", grid, levels, True, shape.cost(grid, levels)) for levels in quads]
    late = [pl for pl in plans if pl.levels[1] >= min_step]
    # a grid of more than a wave: its first wave alone where the whole grid costs too much (the later
    # waves extrapolated from it)
    first = [_first_wave(shape, pl.levels) for pl in late] if grid > B else []
    for choice in ([pl for pl in late if pl.cost <= budget][:1],
                   [pl for pl in first if pl.cost <= budget][:1],
                   sorted((pl for pl in late if pl.cost <= max_cost), key=lambda pl: pl.cost)[:1],
                   sorted((pl for pl in first if pl.cost <= max_cost), key=lambda pl: pl.cost)[:1],
                   [pl for pl in plans if pl.cost <= max_cost][:1]):
        if choice:
            return choice[0], ""
    return min(plans, key=lambda pl: pl.cost), ""


def _wave_plan(shape: Shape, spans, triples, budget: float, max_cost: float, only_step: int | None,
               whole_cost: float) -> Plan:
    """The per-wave plan of `make_plan` (or, for a kernel of few waves whose span affords only the
    first iterations, the loop model one wave deep)."""
    B, grid = shape.blocks_per_wave, shape.grid
    whole = [Plan("waves", g, (None,), m, shape.cost(g, (None,))) for g, m in spans]
    if not shape.long or (only_step is None and whole[-1].cost <= whole_cost):
        plan = next((pl for pl in whole if pl.cost <= whole_cost), whole[-1])
        return _through_fill(shape, plan, max_cost)
    level_sets = triples + ([(0, 1, 2), (0, 1)] if only_step is None else [])
    plans = [Plan("waves", g, levels, m, shape.cost(g, levels)) for levels in level_sets for g, m in spans]
    within = [pl for pl in plans if pl.cost <= budget]
    chosen = within[0] if within else min(plans, key=lambda pl: pl.cost)
    if chosen.levels[1] < MIN_CAP_STEP and grid < MANY_WAVES * B:
        # Spanning three waves, the runs can afford only the loop's first iterations, whose cost per
        # iteration is its prologue's (the first copies' latency, a pipeline filling), not the steady
        # loop's (gemm_mma at n = 4096: an estimate below the tensor roof). With few waves, the first
        # wave's loops run to the steady state instead (the loop model), the later waves extrapolated.
        deep = [_first_wave(shape, levels) for levels in _level_sets(shape, only_step, LOOP_LEVELS)
                if levels[1] >= MIN_CAP_STEP]
        steady = ([pl for pl in deep if pl.cost <= budget][:1]
                  or sorted((pl for pl in deep if pl.cost <= max_cost), key=lambda pl: pl.cost)[:1])
        if steady:
            return steady[0]
    return _through_fill(shape, chosen, max_cost)


def _through_fill(shape: Shape, plan: Plan, max_cost: float) -> Plan:
    """`plan` taken through the L2's fill where the kernel needs it and that fits `max_cost` (with up to
    STEADY_WAVES_WANTED waves of steady state after it, at least STEADY_WAVES); else, where
    the kernel needs it and it fits, the same runs from a cold L2 and WARM_WAVES waves from a warm one
    (two phases); else `plan`."""
    if plan.kind != "waves" or not math.isfinite(shape.fill):
        return plan
    seen = fill_end(plan.blocks, shape.fill, shape.blocks_per_wave)
    for end in FILL_ENDS:
        if seen is not None and seen >= end:
            return plan
        for steady in range(STEADY_WAVES_WANTED, STEADY_WAVES - 1, -1):
            g = shape.through_fill(steady, end)
            if g is not None and g > plan.blocks and shape.cost(g, plan.levels) <= max_cost:
                return replace(plan, blocks=g, remainder_matched=_matched(shape, g), cost=shape.cost(g, plan.levels))
    if seen is not None:
        return plan
    wb = shape.warm_blocks(plan.blocks)
    if shape.cost(plan.blocks, plan.levels, wb) > max_cost:
        return plan  # cold alone: the write-backs it misses are bounded ("L2 write-backs")
    return replace(plan, warm=True, warm_blocks=wb, cost=shape.cost(plan.blocks, plan.levels, wb))


def _loop_cost(shape: Shape, blocks: int, levels: tuple[int, ...], in_step_blocks: int = 0) -> float:
    """Warp instructions of a loop plan's runs, with its run of `in_step_blocks` at the lowest level."""
    return shape.cost(blocks, levels) + (shape.cost(in_step_blocks, levels[:1]) if in_step_blocks else 0.0)


def _first_wave(shape: Shape, levels: tuple[int, ...]) -> Plan:
    """The loop model on the first wave of a grid of more than one (its partial last wave, if any, left to
    the model), with a run of the first two waves (or the grid) at the lowest level: in the kernel, the
    later waves start as the first retires, not in step, and may run faster (matmul_tiled at n = 1024 on
    h200: 186,397 cycles for the first wave, 151,238 and 152,170 for the next two)."""
    B, grid = shape.blocks_per_wave, shape.grid
    two = min(2 * B, grid)
    return Plan("loops", B, levels, grid % B == 0, _loop_cost(shape, B, levels, two), in_step_blocks=two)


def _matched(shape: Shape, g: int) -> bool:
    r = shape.grid % shape.blocks_per_wave
    return r == 0 or g % shape.blocks_per_wave == r


def refine(plan: Plan, shape: Shape, bounds: dict[str, float], *, spent: float, ceiling: float,
           done: set | frozenset = frozenset()) -> tuple[Plan | None, str]:
    """The next plan when the estimate's bound is too wide: by the largest term of `bounds`, more waves
    (MORE_WAVES: twice the waves after the first; through the L2's fill where the kernel needs it), or
    deeper loop levels (DEEPER: each level doubled; loops whole once the levels reach the loop's
    length), trying the other when the first cannot help; a plan whose runs would take the sample past
    `ceiling` warp instructions (with the `spent` ones; runs in `done`, as `Plan.keys`, cost nothing
    again) is not taken. (None, why) when nothing helps."""

    def new_cost(p: Plan) -> float:
        return sum(shape.cost(g, (c,)) for g, c, w in p.keys() if (g, c, w) not in done)

    order = sorted(bounds, key=bounds.get, reverse=True)
    tried = []
    for term in order:
        for step in ((_more_waves, _deeper) if term in MORE_WAVES else (_deeper, _more_waves) if term in DEEPER
                     else ()):
            nxt = step(plan, shape)
            if nxt is None or nxt in tried:
                continue
            tried.append(nxt)
            if spent + new_cost(nxt) > ceiling and step is _more_waves:
                nxt = _fit_waves(plan, shape, ceiling - spent) or nxt  # fewer waves more, as many as fit
            if spent + new_cost(nxt) <= ceiling:
                return nxt, f"'{term}' {bounds[term]:,.0f} cycles: {nxt.describe()}"
    if not tried:
        return None, f"no larger sample narrows '{order[0]}'" if order else "no bound terms"
    cheapest = min(tried, key=new_cost)
    return None, (f"the next sample ({cheapest.describe()}) would take {spent + new_cost(cheapest):,.0f} warp "
                  f"instructions in all, over {ceiling:,.0f}")


def _more_waves(plan: Plan, shape: Shape) -> Plan | None:
    if plan.kind != "waves":
        return None
    B, grid = shape.blocks_per_wave, shape.grid
    g1, _ = shape.first()
    g = g1 + 2 * max(plan.blocks - g1, WAVE_SPAN * B)
    fill_g = shape.through_fill()
    if plan.warm and fill_g is not None:  # through the fill instead of two phases, where affordable
        g = max(g, fill_g)
        warm = False
    else:
        warm = plan.warm
    if g >= grid:
        return None
    if not plan.remainder_matched and grid % B:
        g += grid % B
    wb = min(max(shape.warm_blocks(g), g1 + 2 * (plan.warm_blocks - g1)), grid - 1) if warm else 0
    return replace(plan, blocks=g, remainder_matched=_matched(shape, g), warm=warm, warm_blocks=wb,
                   cost=shape.cost(g, plan.levels, wb))


def _fit_waves(plan: Plan, shape: Shape, room: float) -> Plan | None:
    """The plan's runs at least a wave longer, by as many whole waves as `room` warp instructions allow
    (its runs simulated again from the start), or None when not even one more wave fits."""
    if plan.kind != "waves" or room <= 0:
        return None
    B = shape.blocks_per_wave
    per_block = shape.cost(1, plan.levels)
    extra = (room - shape.cost(0, plan.levels, plan.warm_blocks)) / per_block - plan.blocks
    waves = int(extra // B)
    g = plan.blocks + waves * B
    if waves < 1 or g >= shape.grid:
        return None
    return replace(plan, blocks=g, remainder_matched=_matched(shape, g),
                   cost=shape.cost(g, plan.levels, plan.warm_blocks))


def _deeper(plan: Plan, shape: Shape) -> Plan | None:
    if plan.levels == (None,) or not shape.long:
        return None
    top = max(c for c in plan.levels if c is not None)
    if plan.kind == "loops":  # one level more (the fit takes the LOOP_LEVELS highest)
        nxt = 2 * max(top, 1)
        if nxt >= shape.longest_loop:
            return None
        levels = (*plan.levels, nxt)
        return replace(plan, levels=levels, cost=_loop_cost(shape, plan.blocks, levels, plan.in_step_blocks))
    levels = tuple(sorted({max(1, 2 * c) if c else 1 for c in plan.levels}))
    if max(levels) >= shape.longest_loop:
        levels = (None,)
    return replace(plan, levels=levels, cost=shape.cost(plan.blocks, levels, plan.warm_blocks))


def subset_blocks(grid: int, sm_count: int, k: int) -> int:
    """The first blocks a run on k of the chip's SMs takes: k x the blocks each of the chip's SMs takes (grid //
    SMs), and where the grid does not split evenly, one more on as many SMs as in the kernel (at least one:
    the SMs with one block more are those that end the kernel)."""
    m, r = divmod(grid, sm_count)
    return k * m + (max(1, round(k * r / sm_count)) if r else 0)


def subset_plan(grid: int, sm_count: int, per_block: float, ceiling: float) -> Plan | None:
    """The SM subset: runs of the kernel's first blocks, loops whole, on k and on 2k of the chip's SMs
    (`subset_blocks`: each SM runs as many blocks as in the kernel, so each run is every one of its SMs'
    whole history, and the kernel's cycles are the larger run's), the largest k of SUBSET_SMS whose two runs'
    warp instructions, SUBSET_COST times, fit `ceiling`; None when none fits, the chip has too few SMs for
    2k, or the grid gives an SM no block."""
    best = None
    for k in SUBSET_SMS:
        if 2 * k >= sm_count or grid < sm_count:
            break
        blocks = (subset_blocks(grid, sm_count, k), subset_blocks(grid, sm_count, 2 * k))
        cost = sum(blocks) * per_block
        if cost * SUBSET_COST <= ceiling:
            best = Plan("sms", blocks[-1], (None,), True, cost, sms=(k, 2 * k), subset_blocks=blocks)
    return best


def level_caps(trips: dict[int, int], level: int) -> dict[int, int]:
    """Caps of the long loops (at least MIN_LOOP_TRIPS iterations; the others run whole) for one level:
    the longest loop may take `level` backward branches, each other long loop the same fraction of its
    own (at least one when `level` is), so that every long loop is cut at the same point of its run."""
    longest = max(trips.values(), default=0)
    return {h: (0 if level == 0 else max(1, round(level * t / longest)))
            for h, t in trips.items() if t >= MIN_LOOP_TRIPS}


__all__ = ["CAP_STEPS", "FILL_ENDS", "LOOP_LEVELS", "MANY_WAVES", "MIN_CAP_STEP", "MIN_LOOP_TRIPS", "Plan",
           "STEADY_WAVES", "SUBSET_COST", "SUBSET_SMS", "WARM_WAVES", "fill_end", "sees_full_l2",
           "Shape", "WAVE_SPAN", "level_caps", "make_plan", "refine", "subset_blocks",
           "subset_plan"]
