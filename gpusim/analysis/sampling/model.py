"""The arithmetic of sampled simulation (docs/sampling.md): from a few detailed runs of a kernel's first
blocks with its long loops cut short, the cycles of the whole kernel and a bound on the error; and the
per-wave time's steady state inside a run. Pure functions of numbers.

Two models, by the shape of the grid (B = blocks per SM x SMs: a wave):

- Waves. The sample is the first g blocks, several waves, at one or more loop-cap levels. Inside a run,
  block j + B retires one wave after block j: the mean of those gaps is the per-wave time D, and the
  run's cycles are T = O + D * g / B (O: the ramp and drain). D and O grow linearly with a block's warp
  instructions y; fitted at the two highest levels and taken to the kernel's own y, the kernel's cycles
  are O + D * grid / B. (With loops whole, one run: T + D * (grid - g) / B.)
- Loops. The grid is a few waves or less, all in the sample, or the sample is its first wave; the
  runs differ only in where the long loops stop (four levels, plan.LOOP_LEVELS). Each further warp
  instruction costs `beta` cycles (the slope between the two highest levels; the bound holds how far
  the slopes of the lower pairs of levels would move the estimate), and the kernel's cycles are T(highest) + beta * (its
  warp instructions - the run's), plus, for waves not sampled, half the first wave's intercept each.

No estimate may undercut the hardware: `floor_estimate` holds it to the largest of the kernel's roofs
(its work at each unit's peak).

The blocks of the first wave start together and keep in step for a while, and later waves do not:
the per-wave model measures what later waves do (the runs are three waves long), where the loop
model can only use the first wave, and a slope taken over its first few iterations overstates a
kernel of many waves (docs/sampling.md has the figures).

A kernel whose data overflows the L2 and that writes runs in two phases: while the L2 fills, no line
is evicted; once it is full, every line it allocates evicts one, and DRAM also takes the dirty ones.
A sample of the first waves sees only the first phase, so the per-wave model is fitted twice, on
runs from a cold L2 and on runs from a warm one (`GPU.run(warm_l2=...)`: full of foreign lines, the
kernel's fraction of them dirty), and `two_phase` joins them over the waves in which the L2's sets
fill (`eviction_fraction`), the write-backs costing time only where the DRAM has no room for them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

CONFIDENCE_FLOOR = 0.01  # never claim better than 1 %: the model is a model
L2_FILL_SPREAD = 0.1  # the "L2 fill" term: where the L2 fills, within this fraction of the waves before it
LOOP_DRIFT_FACTOR = 2.0  # the loop term: this many times the change between the lower and upper fits


@dataclass(frozen=True, slots=True)
class Observation:
    """One detailed run: the first `blocks` blocks, the long loops cut at level `cap` (None: whole)."""

    blocks: int
    cap: int | None
    cycles: int
    warp_instructions: int


@dataclass
class Estimate:
    """The extrapolated cycles; the error bound (`confidence`, relative: the estimate is within
    cycles * (1 +- confidence) as far as the terms in `bounds`, in cycles, can tell); the model
    ("waves" or "loops") and its fitted figures: `per_wave` D and `offset` O of the kernel (waves), or
    `beta`, cycles per further warp instruction (loops); and how many waves were extrapolated."""

    cycles: int
    confidence: float
    model: str
    waves_extrapolated: float
    per_wave: float | None = None
    offset: float | None = None
    beta: float | None = None
    bounds: dict[str, float] = field(default_factory=dict)
    cold_per_wave: float | None = None  # two phases: the per-wave time while the L2 fills (`per_wave`: after)
    fill_waves: float | None = None  # two phases: the waves until the kernel's data fills the L2
    floor: float = 0.0  # the hardware roofs' least time for the kernel's work (`floor_estimate`): low never below
    floor_roof: str = ""  # the roof that sets it
    floored_from: int | None = None  # the extrapolation, where it fell below the floor and was raised to it

    @property
    def low(self) -> int:
        return max(math.ceil(self.floor), round(self.cycles * (1 - self.confidence)))

    @property
    def high(self) -> int:
        return round(self.cycles * (1 + self.confidence))


def slope(a: Observation, b: Observation) -> float:
    """Cycles per warp instruction between two runs of the same blocks at different caps."""
    dy = b.warp_instructions - a.warp_instructions
    if dy <= 0:
        raise ValueError("runs at different loop caps issued the same number of warp instructions")
    return (b.cycles - a.cycles) / dy


def wave_deltas(timeline, blocks_per_wave: int) -> np.ndarray:
    """The time between the retirement of block j and of block j + B (one wave later), for every j
    of a run's timeline ((block, sm, start, end) rows): the per-wave time seen inside one run."""
    ends = np.array([e for _, _, _, e in sorted(timeline)], dtype=np.float64)
    if ends.size <= blocks_per_wave:
        return np.zeros(0)
    return ends[blocks_per_wave:] - ends[:-blocks_per_wave]


def _line(x0: float, y0: float, x1: float, y1: float, x: float) -> float:
    return y1 + (y1 - y0) / (x1 - x0) * (x - x1)


STEADY_BATCHES = 16  # a run's retirement gaps are cut into about this many batches to find its steady state
NOISE_SIGMAS = 2.0  # the "waves" term holds the steady per-wave time's standard error this many times
# the "waves" term's drift (later half of the steady gaps against the earlier half) is at least what the
# difference of the halves' means cannot tell from noise: NOISE_SIGMAS x its standard error, DRIFT_SE_FACTOR x
# the whole mean's (saxpy at 2^18 on 4 SMs of an a100 with a 512 KiB L2, steady gaps over waves 16-23 of 32:
# halves 2,736 and 2,739 cycles, the bound 1.1 % against a -2.1 % error; its later waves ran 2,980 cycles)
DRIFT_SE_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class Steady:
    """The steady state of a run's retirement gaps (`steady_gaps`): the gaps from `start` on, their
    mean, the means of the earlier and later half of them, and the standard error of the mean (the
    spread of batch means over the square root of the waves the gaps span: gaps a wave apart are what is
    independent)."""

    start: int
    mean: float
    early: float
    late: float
    stderr: float


def steady_gaps(gaps: np.ndarray, blocks_per_wave: int) -> Steady:
    """Where a run's retirement gaps (`wave_deltas`) settle: the truncation point that minimises the
    marginal standard error of the mean of the rest (MSER, White 1997: the standard rule for cutting
    a simulation's warm-up), over batches of about a sixteenth of the gaps, at most half of them cut.
    A run's first wave starts in step and its L2 starts empty; the gaps after the cut are what the
    later waves do."""
    d = np.asarray(gaps, dtype=np.float64)
    n = d.size
    if n == 0:
        raise ValueError("no retirement gaps: the run spans one wave or less")
    k = max(1, n // STEADY_BATCHES)
    m = n // k
    batches = d[: m * k].reshape(m, k).mean(axis=1) if m else d[:1]
    best, cut = math.inf, 0
    for c in range(max(1, (m + 1) // 2)):
        rest = batches[c:]
        if rest.size < 2:
            break
        stat = float(((rest - rest.mean()) ** 2).sum()) / rest.size**2
        if stat < best - 1e-12:
            best, cut = stat, c
    start = cut * k
    tail = d[start:]
    rest = batches[cut:]
    half = tail.size // 2
    # the gaps of one wave measure the same pair of waves from different blocks: the window holds about
    # tail.size / B independent waves, not as many independent batches
    waves = max(1.0, tail.size / blocks_per_wave)
    se = float(rest.std(ddof=1) / math.sqrt(waves)) if rest.size >= 2 else 0.0
    return Steady(start, float(tail.mean()), float(tail[:half].mean()) if half else float(tail.mean()),
                  float(tail[half:].mean()), se)


def extrapolate(*, grid: int, blocks_per_wave: int, runs: list[Observation], full_warp_instructions: float,
                wave_deltas: list[np.ndarray] | None = None, warp_instructions_spread: float = 0.0,
                remainder_matched: bool = True, extra_bounds: dict[str, float] | None = None,
                later_ratio: float | None = None) -> Estimate:
    """Cycles of the whole kernel and the bound on their error, from `runs` of the same first blocks at
    increasing loop-cap levels (one run with loops whole, or two or more levels).

    With `wave_deltas` (per run, `wave_deltas()` of its timeline): the per-wave model (`_per_wave`);
    without, the loop model (`_loops`). `full_warp_instructions`: the kernel's warp instructions
    (estimated from a few blocks; `warp_instructions_spread` their relative uncertainty). With
    `remainder_matched` False the sample does not end with the grid's partial last wave, which the
    model then counts as a fraction of a wave. `extra_bounds`: further terms, in cycles. `later_ratio` (the
    loop model on the first wave of a larger grid): a later wave's time over the first one's, as a run of
    two waves measured it (`_loops`)."""
    runs_in = list(runs)
    runs = sorted(runs_in, key=lambda o: -1 if o.cap is None else o.cap)
    if not runs or len({o.blocks for o in runs}) != 1:
        raise ValueError("runs must be one or more runs of the same first blocks")
    fit = dict(grid=grid, blocks_per_wave=blocks_per_wave, y_full=full_warp_instructions,
               spread=warp_instructions_spread, remainder_matched=remainder_matched)
    if wave_deltas is not None:
        if len(wave_deltas) != len(runs) or any(np.asarray(d).size == 0 for d in wave_deltas):
            raise ValueError("every run of the per-wave model needs its retirement gaps (more than one wave)")
        order = sorted(range(len(runs_in)), key=lambda i: -1 if runs_in[i].cap is None else runs_in[i].cap)
        est, bounds, result = _per_wave(runs, [np.asarray(wave_deltas[i], dtype=np.float64) for i in order], **fit)
    else:
        est, bounds, result = _loops(runs, later_ratio=later_ratio, **fit)
    for k, v in (extra_bounds or {}).items():
        bounds[k] = float(v)
    cycles = max(1, round(est))
    conf = max(CONFIDENCE_FLOOR, sum(bounds.values()) / cycles)
    return Estimate(cycles, conf, waves_extrapolated=max(0.0, (grid - runs[0].blocks) / blocks_per_wave),
                    bounds=bounds, **result)


def _per_wave(runs: list[Observation], gaps: list[np.ndarray], *, grid: int, blocks_per_wave: int, y_full: float,
              spread: float, remainder_matched: bool) -> tuple[float, dict[str, float], dict]:
    """The per-wave model: inside a run, block j + B retires one wave after block j; the mean of those
    gaps over the run's steady state (`steady_gaps`) is the per-wave time D, and T = O + D g / B gives
    the ramp and drain O. With loops cut, D and O are fitted linearly in a block's warp instructions at
    the two highest levels and taken to the kernel's own; the kernel's cycles are O + D grid / B.

    Bound terms: "waves", how far the estimate moves between the earlier and the later half of each
    run's steady gaps (at least NOISE_SIGMAS standard errors of that difference: a drift hidden in its
    noise), plus NOISE_SIGMAS standard errors of their mean, taken through the fit; "loops"
    (three levels or more), LOOP_DRIFT_FACTOR times the difference the two lowest levels make instead
    of the two highest; "instruction count"; "last wave", up to a whole wave for a partial last wave
    counted as a fraction."""
    B = blocks_per_wave
    g = runs[0].blocks
    n = len(runs)
    if n == 1 and runs[0].cap is not None:
        raise ValueError("one run at a loop cap: nothing to take to the whole loops")
    yf = y_full / grid  # warp instructions of one whole block
    ys = [r.warp_instructions / g for r in runs]
    hi = (n - 2, n - 1) if n >= 2 else (0, 0)

    def total(means: list[float], i: int, j: int) -> float:
        """O + D grid / B at the kernel's own block length, from runs i and j (or run i alone)."""
        offs = [r.cycles - m * g / B for r, m in zip(runs, means, strict=True)]
        if i == j:
            d, o = means[i], offs[i]
        else:
            d, o = _line(ys[i], means[i], ys[j], means[j], yf), _line(ys[i], offs[i], ys[j], offs[j], yf)
        return o + d * grid / B

    steady = [steady_gaps(d, B) for d in gaps]
    means = [s.mean for s in steady]
    est = total(means, *hi)
    drift = abs(total([s.late for s in steady], *hi) - total([s.early for s in steady], *hi))
    noise = hidden = 0.0
    for i in set(hi):  # each fitted run's standard error, through the fit
        moved = list(means)
        moved[i] += NOISE_SIGMAS * steady[i].stderr
        noise += abs(total(moved, *hi) - est)
        # a drift the halves' difference cannot tell from its own noise (the difference of two means of half
        # the gaps: twice the whole mean's standard error)
        moved[i] = means[i] + NOISE_SIGMAS * DRIFT_SE_FACTOR * steady[i].stderr
        hidden += abs(total(moved, *hi) - est)
    bounds = {"waves": max(drift, hidden) + noise}
    if n >= 3:
        bounds["loops"] = abs(total(means, 0, 1) - est) * LOOP_DRIFT_FACTOR
    x = max(0.0, (grid - g) / B)
    d_full = (means[hi[0]] if hi[0] == hi[1] else _line(ys[hi[0]], means[hi[0]], ys[hi[1]], means[hi[1]], yf))
    if spread:
        if n >= 2:  # cycles per warp instruction of a block, all blocks together
            i, j = hi
            offs = [r.cycles - m * g / B for r, m in zip(runs, means, strict=True)]
            per_y = ((means[j] - means[i]) * grid / B + (offs[j] - offs[i])) / (ys[j] - ys[i])
            bounds["instruction count"] = abs(per_y) * yf * spread
        else:
            bounds["instruction count"] = d_full * x * spread
    r = grid % B
    if not remainder_matched and r:
        bounds["last wave"] = (1 - r / B) * d_full
    o_full = est - d_full * grid / B
    return est, bounds, dict(model="waves", per_wave=d_full, offset=o_full)


def _loops(runs: list[Observation], *, grid: int, blocks_per_wave: int, y_full: float, spread: float,
           remainder_matched: bool, later_ratio: float | None = None) -> tuple[float, dict[str, float], dict]:
    """The loop model: each further warp instruction costs `beta` cycles (the slope between the two
    highest levels), and the kernel's cycles are T(highest) + beta (its warp instructions - the run's),
    plus, for waves not sampled, half the first wave's intercept each.

    Bound terms: "loops" (three levels or more), LOOP_DRIFT_FACTOR times the most the estimate moves when
    the mean slope from a lower level up to the highest replaces the top pair's (with four levels, the
    slope must have held over two doublings: two shallow slopes can agree and the loop not keep them); "waves",
    the first wave's own intercept for the waves
    still to come; "instruction count"; "last wave" (a partial last wave may take as long as a whole
    one); with `later_ratio` r (runs of the first wave only), "later waves": the first wave's blocks
    start together, the later ones as the first retire, and a later wave may take r times the first's (a
    run of two waves at the lowest level: the second after the first), not once it as the extrapolation
    assumes - the later waves' extrapolated time moves by half of (1 - r) of it, and the bound holds that
    half (matmul_tiled at n = 1024 on h200, its first wave at 2/4/8/16: +8.1 % against a 4.8 % bound without
    it; with it, r = 0.74 at level 2, -2.6 % within 15.8 %)."""
    if len(runs) < 2 or any(o.cap is None for o in runs):
        raise ValueError("the loop model needs runs at two loop-cap levels or more")
    B = blocks_per_wave
    g = runs[0].blocks
    x = max(0.0, (grid - g) / B)
    bounds: dict[str, float] = {}
    beta = slope(runs[-2], runs[-1])
    top = runs[-1]

    def total(b: float) -> float:
        return top.cycles + b * (y_full - top.warp_instructions)

    est = total(beta)
    if len(runs) >= 3:  # the top slope against the mean slope from each lower level up to the top level:
        # stable over more than one doubling. (Chords, not the successive pairs: a pair of shallow levels
        # spans few instructions, so its slope is mostly the runs' noise - the compiler's matmul with a
        # 128-step K loop at levels 1/2/4/8: pairs 0.971/1.154/0.939 cycles a warp instruction, a 42 % bound
        # 1.1 % off; chords to level 8 1.005/1.010: 14 %.)
        lower = [slope(a, top) for a in runs[:-2]]
        bounds["loops"] = max(abs(total(b) - est) for b in lower) * LOOP_DRIFT_FACTOR
    if x > 0:  # no run of the later waves: each costs between nothing and the first one's intercept
        alpha = max(0.0, runs[0].cycles - beta * runs[0].warp_instructions) * B / g
        est += alpha / 2 * x
        bounds["waves"] = alpha / 2 * x
        if later_ratio is not None:  # the later waves as the first (extrapolated), or as a run's second one
            first = top.cycles + beta * (y_full * g / grid - top.warp_instructions)  # its loops whole
            shift = (1.0 - later_ratio) / 2 * (est - first)
            est -= shift
            bounds["later waves"] = abs(shift)
    if spread:
        bounds["instruction count"] = beta * y_full * spread
    r = grid % B
    if x > 0 and not remainder_matched and r:  # a partial last wave may take as long as a whole one
        bounds["last wave"] = (1 - r / B) * est * B / grid
    return est, bounds, dict(model="loops", beta=beta)


def on_subsets(cycles: dict[int, int], *, spread: float = 0.0, extra_bounds: dict[str, float] | None = None
               ) -> Estimate:
    """The SM subset (`plan.subset_plan`): runs of the kernel's first blocks, loops whole, on k and 2k of
    the chip's SMs (`cycles`, by SM count), each SM running as many blocks as in the kernel, so that the run
    is each of its SMs' whole history: the kernel's cycles are the run on the most SMs. What a subset does
    not see is how the chip's other SMs share the L2 and the DRAM with them (fewer blocks share each line of
    data the L2 holds, so more of its misses go to the DRAM: matmul_tiled at n = 1024 on h200, +2.3 % on 2
    SMs, +0.26 % on 4, +0.13 % on 8). Bound terms: "SM subset", LOOP_DRIFT_FACTOR times how far the cycles
    moved from the run on half as many SMs (the subset converges as it doubles, as the loop model's slopes
    do); "instruction count", the profiled blocks' spread; and `extra_bounds`."""
    if len(cycles) < 2:
        raise ValueError("the SM subset needs runs on two SM counts")
    ks = sorted(cycles)
    top = cycles[ks[-1]]
    bounds = {"SM subset": LOOP_DRIFT_FACTOR * abs(top - cycles[ks[-2]])}
    if spread:
        bounds["instruction count"] = top * spread
    for k, v in (extra_bounds or {}).items():
        bounds[k] = float(v)
    cycles_est = max(1, top)
    return Estimate(cycles_est, max(CONFIDENCE_FLOOR, sum(bounds.values()) / cycles_est), "sms", 0.0, bounds=bounds)


def first_wave_end(timeline, blocks_per_wave: int) -> float:
    """When the last of the first B blocks (by block id) retired: the first wave's time."""
    return float(max(e for b, _, _, e in timeline if b < blocks_per_wave))


def in_step_bound(*, grid: int, blocks_per_wave: int, runs: list[Observation], first_wave_ends: list[float],
                  wave_deltas: list[np.ndarray], full_warp_instructions: float) -> float:
    """Cycles the per-wave model may be off by for loops cut short: per further warp instruction of a
    block, the first wave (whose blocks start in step) grows by dF, the later waves by dD; how the
    later waves' growth moves towards the first's over the iterations not simulated is not measured,
    so half the difference, over those iterations and every wave, is the bound. From the two runs at
    the highest levels; 0 with loops whole."""
    B = blocks_per_wave
    order = sorted(range(len(runs)), key=lambda i: -1 if runs[i].cap is None else runs[i].cap)
    if len(order) < 2 or runs[order[-1]].cap is None:
        return 0.0
    i, j = order[-2], order[-1]
    g = runs[j].blocks
    yi, yj = runs[i].warp_instructions / g, runs[j].warp_instructions / g
    if yj <= yi:
        return 0.0
    d_f = (first_wave_ends[j] - first_wave_ends[i]) / (yj - yi)
    d_d = (float(np.mean(wave_deltas[j])) - float(np.mean(wave_deltas[i]))) / (yj - yi)
    remaining = max(0.0, full_warp_instructions / grid - yj)
    return abs(d_f - d_d) * remaining * grid / B / 2


def writeback_bound(*, written_bytes: float, footprint_bytes: float, sampled_footprint_bytes: float,
                    l2_bytes: int, dram_bytes_per_cycle: float) -> float:
    """Cycles a sample may miss when the kernel's data overflows the L2 but the sample's does not: the
    dirty lines the L2 will have to write back to DRAM (written bytes beyond what the L2 holds), at
    the DRAM's peak rate. 0 when the sample fills the L2 too, or the kernel fits in it."""
    if footprint_bytes <= l2_bytes or sampled_footprint_bytes >= l2_bytes or written_bytes <= 0:
        return 0.0
    evicted = written_bytes * (1 - l2_bytes / footprint_bytes)
    return evicted / dram_bytes_per_cycle


def l2_dirty_fraction(*, bytes_read: float, bytes_written: float, allocated_bytes: float) -> tuple[float, float]:
    """The kernel's distinct global footprint and the fraction of it that ends dirty: (footprint bytes,
    fraction). The footprint is what it reads and writes, at most its buffers' size (data read and
    written back, or read several times, counts once); the written part, at most the footprint."""
    footprint = min(bytes_read + bytes_written, allocated_bytes) if allocated_bytes > 0 else bytes_read + bytes_written
    if footprint <= 0:
        return 0.0, 0.0
    return footprint, min(1.0, bytes_written / footprint)


def fill_waves(*, grid: int, blocks_per_wave: int, footprint_bytes: float, l2_bytes: int) -> float:
    """The waves after which the kernel's data, spread evenly over its blocks, fills the L2 (the grid's
    waves, or more, when it never does)."""
    waves = grid / blocks_per_wave
    if footprint_bytes <= 0:
        return math.inf
    return waves * l2_bytes / footprint_bytes


def eviction_fraction(waves, *, fill: float, ways: int) -> np.ndarray:
    """The fraction of the kernel's L2 allocations that evict a line, at each of `waves` (an array):
    the lines are spread over the sets as by a hash, so the lines a set has received by wave w are
    Poisson-distributed with mean ways x w / fill (`fill_waves`: where the kernel's data reaches the
    L2's size), and an allocation evicts when its set already holds `ways`: P(N >= ways). The sets fill
    one by one: the change from no evictions to one per allocation spreads over about +-1/sqrt(ways)
    of the fill (saxpy at n = 2^23: from wave 16 to wave 30, fill 23.7)."""
    lam = np.maximum(ways * np.asarray(waves, dtype=np.float64) / max(fill, 1e-12), 1e-300)
    i = np.arange(ways, dtype=np.float64)
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.maximum(i[1:], 1.0)))))  # log(i!)
    below = np.exp(-lam[..., None] + i * np.log(lam)[..., None] - log_fact).sum(axis=-1)  # P(N < ways)
    return np.clip(1.0 - below, 0.0, 1.0)


TRANSITION_STEPS = 1024  # waves are integrated over this many steps


def two_phase(cold: Estimate, warm: Estimate, *, grid: int, blocks_per_wave: int, fill: float, ways: int,
              write_back_share: float, extra_bounds: dict[str, float] | None = None) -> Estimate:
    """Join two per-wave fits of the same sample, one from a cold L2 (`cold`: no allocation evicts) and
    one from a warm one (`warm`: every allocation evicts a line, written back when dirty), over the
    grid's W waves: at wave w a fraction x(w) of the allocations evicts (`eviction_fraction`, with
    `fill` from `fill_waves`), and the wave takes D(x) = max(D_cold, D_warm (1 - r (1 - x))), r the
    share of the warm runs' DRAM traffic that is write-backs (`write_back_share`): the write-backs
    cost nothing while the DRAM has room for them beside the cold waves' traffic, and their share of
    the warm time once it has not (a DRAM-bound warm phase); never more than the linear mix
    D_cold + x (D_warm - D_cold). The kernel's cycles: O + the sum of
    D(x(w)) over the waves, O the mean of the two fits' ramp and drain (the ramp runs cold, the drain
    warm).

    The bound: each fit's terms, weighted by the waves of its phase (the integrals of 1 - x and x);
    "ramp and drain", half the difference of the two offsets; "L2 fill", the per-wave difference over
    L2_FILL_SPREAD of the waves before the fill (how far the sets' filling may lie from the
    hashed-spread curve); "L2 transition", how much more the waves would take if each write-back
    cost its share of the warm time however much room the DRAM has (D_cold + x (D_warm - D_cold)):
    what the warm time is made of is not measured, only its DRAM traffic; and `extra_bounds`."""
    if cold.model != "waves" or warm.model != "waves":
        raise ValueError("two phases join two per-wave fits")
    W = grid / blocks_per_wave
    F = min(max(fill, 0.0), W)
    o = (cold.offset + warm.offset) / 2
    dw = W / TRANSITION_STEPS
    x = eviction_fraction((np.arange(TRANSITION_STEPS) + 0.5) * dw, fill=fill, ways=ways)
    r = min(max(write_back_share, 0.0), 1.0)
    dc, dwm = cold.per_wave, warm.per_wave
    d_lin = dc + x * (dwm - dc)
    # never above the linear mix: where D_warm (1 - r) exceeds D_cold, the warm time is not the DRAM's
    # traffic alone, and the mix is linear
    d_max = np.minimum(d_lin, np.maximum(dc, dwm * (1.0 - r * (1.0 - x))))
    est = o + float(d_max.sum()) * dw
    warm_waves = float(x.sum()) * dw
    bounds: dict[str, float] = {}
    for k in dict.fromkeys([*cold.bounds, *warm.bounds]):
        bounds[k] = (cold.bounds.get(k, 0.0) * (W - warm_waves) + warm.bounds.get(k, 0.0) * warm_waves) / W
    bounds["ramp and drain"] = abs(cold.offset - warm.offset) / 2
    if F < W:
        bounds["L2 fill"] = abs(dwm - dc) * F * L2_FILL_SPREAD
    transition = float((d_lin - d_max).sum()) * dw
    if transition > 0:
        bounds["L2 transition"] = transition
    for k, v in (extra_bounds or {}).items():
        bounds[k] = float(v)
    cycles = max(1, round(est))
    conf = max(CONFIDENCE_FLOOR, sum(bounds.values()) / cycles)
    return Estimate(cycles, conf, "waves", max(cold.waves_extrapolated, warm.waves_extrapolated),
                    per_wave=warm.per_wave, offset=o, bounds=bounds, cold_per_wave=cold.per_wave, fill_waves=F)


def floor_estimate(est: Estimate, roofs: dict[str, float]) -> Estimate:
    """`est` held to what the hardware allows: no kernel finishes before its busiest unit has done its
    work at the unit's peak rate (`roofs`, in cycles per roof: the tensor cores' multiply-adds, the DRAM's
    bytes, the schedulers' issue slots, ...). The largest roof is the floor: `low` never falls below it,
    and an extrapolation below it is raised to it, the amount it fell short added to the bound as
    "roof floor" (an extrapolation that undercuts the roofs is off by at least that much: the loops or
    waves it was fitted on were not the kernel's steady state), `floored_from` keeping what it said."""
    if not roofs:
        return est
    name = max(roofs, key=roofs.get)
    floor = float(roofs[name])
    if est.cycles >= floor:
        return replace(est, floor=floor, floor_roof=name)
    cycles = math.ceil(floor)
    bounds = {**est.bounds, "roof floor": float(cycles - est.cycles)}
    conf = max(CONFIDENCE_FLOOR, sum(bounds.values()) / cycles)
    return replace(est, cycles=cycles, confidence=conf, bounds=bounds, floor=floor, floor_roof=name,
                   floored_from=est.cycles)


__all__ = ["CONFIDENCE_FLOOR", "DRIFT_SE_FACTOR", "Estimate", "L2_FILL_SPREAD", "LOOP_DRIFT_FACTOR", "Observation",
           "TRANSITION_STEPS",           "eviction_fraction", "extrapolate", "fill_waves", "first_wave_end",
           "floor_estimate", "in_step_bound", "l2_dirty_fraction", "on_subsets", "slope", "two_phase", "wave_deltas",
           "writeback_bound"]
