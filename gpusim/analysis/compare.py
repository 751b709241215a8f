"""Latency-oriented and throughput-oriented designs side by side: one workload over problem sizes on several
configs, each size's time, throughput and the size where one design overtakes another.

The size is the workload's `n` (elements; one thread each). The block is the workload's default block,
or the config's `sm.max_threads_per_block` where that is smaller (a CPU-like design's narrow cores).
A point's time is a one-stream program run by the system model: the kernel launch, the kernel, and,
with `include_transfers`, the copies of its inputs to the device first and its outputs back after
(none on a design that computes in host memory, `host.resident`).

Sizes up to `max_simulated` are simulated. Beyond, the kernel's cycles are extrapolated linearly in the
number of waves (blocks / blocks resident at once) from two anchor simulations, at the largest
simulated size and at half of it, each raised to at least one and two waves so that the line is the
GPU's steady state, not its fill, and no faster than the kernel's DRAM traffic (on the same line) at the
data bus's sustained rate (`dram.bandwidth_gbps` x `dram.efficiency`: anchors of one and two waves still
carry part of the fill); such points are marked `extrapolated`. This holds for kernels whose
work per block does not depend on n; another kernel is refused (its warp instructions per block differ
between the anchors).

A CPU config (one with a `cpu:` section: cpu_8core, cpu_64core) is timed by the CPU model
(`gpusim.cpu`: out-of-order cores, SIMD, SMT, caches, prefetcher, branch predictor, DRAM channels), not by
the GPU timing model; its extrapolated points follow the same line in blocks. Each point also carries its
time without copies (`kernel_only_seconds`), so a chart shows both. `size` names the parameter swept
(default `n`; the divergence study sweeps `paths` at a fixed n), `params` fixes the others.
`explain()` says in one paragraph who wins and why (bus, bandwidth, latency, divergence);
`multi_gpu_step` compares a data-parallel training step's all-reduce over NVLink and over PCIe."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gpusim.analysis.kernel_cost import as_workload, blocks_per_wave, extrapolate, kernel_run
from gpusim.config import load_config
from gpusim.config.schema import Config
from gpusim.cpu import dram_bandwidth, simulate_cpu
from gpusim.cpu.core import dram_bytes
from gpusim.cpu.energy import static_power
from gpusim.errors import GpusimError
from gpusim.stats.power import idle_power, transfer_energy
from gpusim.stats.ranking import METRICS
from gpusim.system import Collective, CopyD2H, CopyH2D, Kernel, Program, run_program
from gpusim.workloads.loader import Workload

SIZE = "n"
SAME_WORK = 0.1  # warp instructions per block may differ this much between the anchors
IO_SIZES = (1000, 2000)  # sizes at which the inputs' and outputs' bytes are measured (a line in n)


@dataclass(frozen=True, slots=True)
class ComparePoint:
    """One design at one size: seconds end to end and their parts (the launch overlaps the first copy, so
    the parts can add up to more), bytes copied each way, the kernel's waves, whether extrapolated."""

    config: str
    size: int
    seconds: float
    kernel_seconds: float
    launch_seconds: float
    copy_seconds: float
    h2d_bytes: int
    d2h_bytes: int
    waves: float
    extrapolated: bool
    kernel_only_seconds: float = 0.0  # launch + kernel, without the copies
    bound: str = ""  # what limits the kernel: dram, core, chain (CPU model); gpu (timing model)
    energy_j: float | None = None  # energy to solution (the whole program); None: the config has no power model
    kernel_energy_j: float | None = None  # of which the kernel's

    @property
    def throughput(self) -> float:
        """Elements per second."""
        return self.size / self.seconds

    @property
    def energy_per_element_j(self) -> float | None:
        return None if self.energy_j is None else self.energy_j / self.size

    @property
    def average_power_w(self) -> float | None:
        return None if self.energy_j is None else self.energy_j / self.seconds

    @property
    def elements_per_joule(self) -> float | None:
        """Performance per watt: elements a second per watt (= elements per joule)."""
        return None if not self.energy_j else self.size / self.energy_j

    def value(self, metric: str) -> float | None:
        """What ranks the point: its seconds ("time") or its energy ("energy")."""
        return self.seconds if metric == "time" else self.energy_j


@dataclass(frozen=True, slots=True)
class Crossover:
    """Below `size` elements `faster_below` takes less time; above it, `faster_above` does (interpolated
    on the log-log line between the two sizes around it)."""

    faster_below: str
    faster_above: str
    size: float


@dataclass(frozen=True)
class Comparison:
    workload: str
    configs: tuple[str, ...]
    sizes: tuple[int, ...]
    include_transfers: bool
    max_simulated: int
    points: tuple[ComparePoint, ...]
    latency: tuple[ComparePoint, ...]
    crossovers: tuple[Crossover, ...]
    size_name: str = SIZE
    params: tuple[tuple[str, Any], ...] = ()
    simt_efficiency: tuple[tuple[int, float], ...] = ()  # per size, the GPU warp's active-lane share
    warp_sizes: dict[str, int] = field(default_factory=dict)  # per config: lanes of a warp or SIMD group
    metric: str = "time"  # what "best" means: least time, or least energy
    energy_crossovers: tuple[Crossover, ...] = ()  # the crossovers in energy to solution

    def series(self, config: str) -> list[ComparePoint]:
        return [p for p in self.points if p.config == config]

    @property
    def energy_configs(self) -> tuple[str, ...]:
        """The configs with a power model (their points carry energy)."""
        return tuple(c for c in self.configs if all(p.energy_j is not None for p in self.series(c)))

    def best(self, size: int, metric: str | None = None) -> str | None:
        """The config with the least time (metric "time") or energy ("energy") at `size`; None when no
        config has the metric (no power model)."""
        metric = metric or self.metric
        names = self.configs if metric == "time" else self.energy_configs
        at = {p.config: p for p in self.points if p.size == size}
        return min(names, key=lambda c: at[c].value(metric), default=None)

    def crossover(self, a: str, b: str) -> Crossover | None:
        """The first crossover between configs `a` and `b`, or None within the sizes."""
        return next((c for c in self.crossovers if {c.faster_below, c.faster_above} == {a, b}), None)

    def to_dict(self) -> dict[str, Any]:
        def point(p: ComparePoint) -> dict[str, Any]:
            return {**asdict(p), "throughput_per_second": p.throughput, "energy_per_element_j": p.energy_per_element_j,
                    "average_power_w": p.average_power_w, "elements_per_joule": p.elements_per_joule}

        return {"workload": self.workload, "configs": list(self.configs), "sizes": list(self.sizes),
                "include_transfers": self.include_transfers, "max_simulated": self.max_simulated,
                "points": [point(p) for p in self.points], "latency": [point(p) for p in self.latency],
                "crossovers": [asdict(c) for c in self.crossovers], "size_name": self.size_name,
                "params": dict(self.params), "metric": self.metric,
                "best": [{"size": n, "config": self.best(n)} for n in self.sizes],
                "energy_crossovers": [asdict(c) for c in self.energy_crossovers], "explanation": explain(self)}

    def table(self) -> str:
        """Time (us) and throughput (elements/s) per size and design, the one-element latency, the
        crossovers and the explanation; `~` marks an extrapolated time."""
        width = 24
        head = f"{self.size_name:>12} " + " ".join(f"{c:>{width}}" for c in self.configs)
        transfers = "with" if self.include_transfers else "without"
        lines = [f"{self.workload}: time in us (~ extrapolated past {self.max_simulated:,} elements) and "
                 f"throughput, {transfers} host-device copies", head]
        for size in self.sizes:
            cells = []
            for c in self.configs:
                p = next(q for q in self.series(c) if q.size == size)
                cells.append(f"{'~' if p.extrapolated else ''}{p.seconds * 1e6:,.2f} us {p.throughput:9.3g}/s")
            lines.append(f"{size:>12,} " + " ".join(f"{cell:>{width}}" for cell in cells))
        one = "one element" if self.size_name == SIZE else f"{self.size_name} = 1"
        lines.append(f"latency of {one}: " + ", ".join(f"{p.config} {p.seconds * 1e6:,.3f} us"
                                                         for p in self.latency))
        for c in self.crossovers:
            lines.append(f"crossover at {self.size_name} = {c.size:,.0f}: {c.faster_below} faster below, "
                         f"{c.faster_above} above")
        if not self.crossovers:
            lines.append("no crossover within the sizes")
        lines += self.energy_table()
        lines.append(explain(self))
        return "\n".join(lines)

    def energy_table(self) -> list[str]:
        """Energy to solution per element (nJ) and performance per watt (elements/J) per size and design with
        a power model, the one with the least energy, and the crossovers in energy; no lines without one."""
        names = self.energy_configs
        if not names:
            return []
        width = 24
        lines = [f"energy to solution per element in nJ and performance per watt (elements/s per W), "
                 f"{'with' if self.include_transfers else 'without'} host-device copies",
                 f"{self.size_name:>12} " + " ".join(f"{c:>{width}}" for c in names) + "   least energy"]
        for size in self.sizes:
            cells = []
            for c in names:
                p = next(q for q in self.series(c) if q.size == size)
                cells.append(f"{'~' if p.extrapolated else ''}{p.energy_per_element_j * 1e9:,.3g} nJ "
                             f"{p.elements_per_joule:9.3g}/J")
            lines.append(f"{size:>12,} " + " ".join(f"{cell:>{width}}" for cell in cells)
                         + f"   {self.best(size, 'energy')}")
        for c in self.energy_crossovers:
            lines.append(f"energy crossover at {self.size_name} = {c.size:,.0f}: {c.faster_below} uses less below, "
                         f"{c.faster_above} above")
        if len(names) > 1 and not self.energy_crossovers:
            lines.append("no energy crossover within the sizes")
        return lines


def log_sizes(low: float, high: float, per_decade: int = 1) -> list[int]:
    """Log-spaced integer sizes from `low` to `high`, `per_decade` a decade."""
    if not 1 <= low <= high:
        raise GpusimError(f"sizes {low:g}..{high:g}: need 1 <= low <= high")
    count = round(math.log10(high / low) * per_decade) + 1
    return sorted({round(v) for v in np.geomspace(low, high, count)})


def compare(workload: Workload | str, configs: Sequence[str | Config], sizes: Sequence[int], *,
            include_transfers: bool = False, max_simulated: int = 2**18, size: str = SIZE,
            params: dict[str, Any] | None = None, metric: str = "time") -> Comparison:
    """Each size on each design (module docstring). `metric` ("time" or "energy") is what "best" means."""
    if metric not in METRICS:
        raise GpusimError(f"metric {metric!r}: expected one of {', '.join(METRICS)}")
    wl = as_workload(workload)
    if size not in wl.defaults:
        raise GpusimError(f"{wl.name} has no size parameter {size!r} (parameters: {', '.join(wl.defaults)})")
    fixed = dict(params or {})
    unknown = sorted(set(fixed) - set(wl.defaults))
    if unknown:
        raise GpusimError(f"{wl.name} has no parameter {unknown[0]!r} (parameters: {', '.join(wl.defaults)})")
    cfgs = [c if isinstance(c, Config) else load_config(c) for c in configs]
    sizes = tuple(sorted(set(sizes)))
    points, latency = [], []
    simt = ()
    for cfg in cfgs:
        design = _Design(wl, cfg, include_transfers, max_simulated, size, fixed)
        points += [design.point(n) for n in sizes]
        latency.append(design.point(1))
        if cfg.cpu is None and not simt and size != SIZE:  # a sweep of divergence (paths, k) at a fixed n
            simt = tuple((n, design.simt_efficiency(n)) for n in sizes if n <= max_simulated)
    names = tuple(c.name for c in cfgs)
    if metric == "energy" and not any(c.power is not None or c.cpu_power is not None for c in cfgs):
        raise GpusimError(f"--metric energy: none of {', '.join(names)} has a power model (power: or cpu_power:)")
    with_energy = tuple(n for n in names if all(p.energy_j is not None for p in points if p.config == n))
    return Comparison(wl.name, names, sizes, include_transfers, max_simulated, tuple(points), tuple(latency),
                      tuple(_crossovers(points, names, sizes)), size, tuple(sorted(fixed.items())), simt,
                      {c.name: c.sm.warp_size for c in cfgs}, metric,
                      tuple(_crossovers(points, with_energy, sizes, "energy")))


class _Design:
    """One config's points: simulated or extrapolated kernel cycles (the GPU timing model, or the CPU model
    for a config with a cpu: section), run as a program with its copies."""

    def __init__(self, wl: Workload, cfg: Config, include_transfers: bool, max_simulated: int, size: str = SIZE,
                 fixed: dict[str, Any] | None = None):
        self.wl, self.cfg, self.size = wl, cfg, size
        self.copies = include_transfers and not cfg.host.resident
        self.max_simulated = max_simulated
        self.params = dict(fixed or {})
        if "block" in wl.defaults:
            self.params["block"] = min(int(self.params.get("block", wl.defaults["block"])),
                                       cfg.sm.max_threads_per_block)
        if cfg.cpu is None:
            per_wave = blocks_per_wave(wl, cfg, **self._at(1)) * wl.launch(self._at(1)).threads_per_block
            self.anchor = max(max_simulated, 1 << math.ceil(math.log2(2 * per_wave)))
        else:
            self.anchor = max_simulated
        self.io = [_io_bytes(wl, self._at(n)) for n in IO_SIZES] if size == SIZE else None

    def _at(self, n: int) -> dict[str, int]:
        return {**self.params, self.size: n}

    def _blocks(self, n: int) -> int:
        return self.wl.launch(self._at(n)).num_blocks

    def _run(self, n: int) -> tuple[float, int, int, float, str, Any, float, float | None, float]:
        """(cycles, blocks, warp instructions, blocks per wave, bound, the CPU model's result or None, DRAM
        bytes, the kernel's energy or None, its static watts) of one simulated size."""
        if self.cfg.cpu is not None:
            r = simulate_cpu(self.wl, self.cfg, **self._at(n))
            bound = "chain" if r.breakdown["chain"] >= 0.5 * r.cycles else r.bound
            e = r.energy
            return (r.seconds * self.cfg.chip.clock_mhz * 1e6, r.blocks, r.instructions,
                    self.cfg.cpu.cores * self.cfg.cpu.smt_threads, bound, r, 0.0,
                    None if e is None else e.energy_j, 0.0 if e is None else e.static_w)
        r = kernel_run(self.wl, self.cfg, **self._at(n))
        return (r.cycles, r.blocks, r.warp_instructions, r.blocks_per_wave, "gpu", None, r.dram_bytes, r.energy_j,
                r.static_w)

    def simt_efficiency(self, n: int) -> float:
        """Active lanes per issued warp instruction at size n (a functional run: no timing needed)."""
        return float(self.wl.run(self._at(n), self.cfg).result.stats.simt_efficiency)

    def cycles(self, n: int) -> tuple[float, float, bool, str, float | None]:
        """(cycles, waves, extrapolated, bound, the kernel's energy in J or None) of the kernel at size n.
        Past the anchors the energy is the events' (on the line in blocks) plus the static watts over the
        kernel's extrapolated time."""
        if n <= self.max_simulated:
            cycles, blocks, _, per_wave, bound, _, _, energy, _ = self._run(n)
            return cycles, blocks / per_wave, False, bound, energy
        lo, hi = (self._run(a) for a in (self.anchor // 2, self.anchor))
        per_block = [r[2] / r[1] for r in (lo, hi)]
        if lo[1] == hi[1] or abs(per_block[1] - per_block[0]) > SAME_WORK * per_block[1]:
            raise GpusimError(f"{self.wl.name}: its warp instructions per block change with n ({per_block[0]:.1f} "
                              f"at n={self.anchor // 2}, {per_block[1]:.1f} at n={self.anchor}; {lo[1]} and {hi[1]} "
                              f"blocks), so its time cannot be extrapolated in waves; keep the sizes within "
                              f"{self.max_simulated:,}")
        blocks = self._blocks(n)
        waves = blocks / hi[3]
        if hi[5] is None:
            # a larger problem takes at least as long as the largest one simulated, and at least as long as
            # its DRAM traffic (on the same line) takes at the DRAM's sustained bandwidth: anchors of one and
            # two waves still include the fill, whose slope can promise more than the bus delivers
            traffic = max(0.0, extrapolate(blocks, lo[1], lo[6], hi[1], hi[6]))
            line = extrapolate(blocks, lo[1], lo[0], hi[1], hi[0])
            cycles = max(hi[0], line, traffic / self.cfg.dram_bytes_per_cycle())
        else:
            cycles = self._cpu_line(blocks, lo, hi)
        return cycles, waves, True, hi[4], self._energy_line(blocks, cycles, lo, hi)

    def _energy_line(self, blocks: int, cycles: float, lo: tuple, hi: tuple) -> float | None:
        """The kernel's energy past the anchors: its events' energy (the anchors' less their static watts
        over their time) on the line in blocks, plus the static watts over `cycles`."""
        if lo[7] is None or hi[7] is None:
            return None
        clock = self.cfg.chip.clock_mhz * 1e6
        dynamic = [r[7] - r[8] * r[0] / clock for r in (lo, hi)]
        return max(0.0, extrapolate(blocks, lo[1], dynamic[0], hi[1], dynamic[1])) + hi[8] * cycles / clock

    def _cpu_line(self, blocks: int, lo: tuple, hi: tuple) -> float:
        """A CPU's cycles past the anchors: its cores' time and its DRAM traffic each on the line in blocks,
        the written lines counted again once the footprint outgrows the LLC (as the model counts them)."""
        a, b = lo[5], hi[5]

        def line(field: str) -> float:
            return max(0.0, extrapolate(blocks, lo[1], getattr(a, field), hi[1], getattr(b, field)))

        cpu = self.cfg.cpu
        dram = dram_bytes(cpu, line("dram_read_bytes"), line("written_bytes"), line("footprint_bytes"))
        return max(line("core_seconds"), dram / dram_bandwidth(cpu)) * self.cfg.chip.clock_mhz * 1e6

    def point(self, n: int) -> ComparePoint:
        cycles, waves, extrapolated, bound, kernel_energy = self.cycles(n)
        if self.io is None or n <= self.max_simulated:
            h2d, d2h = _io_bytes(self.wl, self._at(n))
        else:
            (n0, (in0, out0)), (n1, (in1, out1)) = zip(IO_SIZES, self.io, strict=True)
            h2d, d2h = (round(extrapolate(n, n0, a, n1, b)) for a, b in ((in0, in1), (out0, out1)))
        kernel = [Kernel(cycles=cycles, name=self.wl.name)]
        ops = list(kernel)
        if self.copies:
            ops = [CopyH2D(bytes=h2d, name="inputs")] * bool(h2d) + ops
            ops += [CopyD2H(bytes=d2h, name="outputs")] * bool(d2h)
        report = run_program(Program(tuple(ops), name=self.wl.name), self.cfg)
        alone = run_program(Program(tuple(kernel), name=self.wl.name), self.cfg).seconds if self.copies \
            else report.seconds
        busy = report.busy(0)
        copied = (h2d + d2h) if self.copies else 0
        return ComparePoint(self.cfg.name, n, report.seconds, busy["compute"], report.launch_overhead_seconds,
                            busy["copy"], h2d if self.copies else 0, d2h if self.copies else 0, waves, extrapolated,
                            alone, bound, self._energy(kernel_energy, report.seconds - busy["compute"], copied),
                            kernel_energy)

    def _energy(self, kernel_j: float | None, other_seconds: float, copied: int) -> float | None:
        """Energy to solution: the kernel's, the design's idle power over the rest of the program's time (the
        launch, the copies: a GPU with its clocks held, a CPU package with its cores awake) and, on a GPU,
        the copies' bits over PCIe."""
        if kernel_j is None:
            return None
        cfg = self.cfg
        if cfg.cpu is not None:
            return kernel_j + static_power(cfg.cpu_power, cfg.cpu.cores) * other_seconds
        held = idle_power(cfg.power, cfg.chip.sm_count, cfg.chip.clock_mhz)
        return kernel_j + held * max(0.0, other_seconds) + transfer_energy(cfg.power, copied)


def _io_bytes(wl: Workload, params: dict[str, int]) -> tuple[int, int]:
    """Bytes copied to the device (every input array except an output that starts all zeros: a buffer
    the kernel only writes) and back (the reference's outputs)."""
    p = wl.params(params)
    inputs = wl.inputs(p)
    outputs = wl.reference(p, inputs)
    arrays = {k: v for k, v in inputs.items() if isinstance(v, np.ndarray)}
    write_only = {k for k in outputs if k in arrays and not arrays[k].any()}
    return (sum(a.nbytes for k, a in arrays.items() if k not in write_only),
            sum(arrays[k].nbytes for k in outputs if k in arrays))


def _crossovers(points: Sequence[ComparePoint], names: Sequence[str], sizes: Sequence[int],
                metric: str = "time") -> list[Crossover]:
    """Where one design overtakes another in `metric` (time or energy), on the log-log line between sizes."""
    seconds = {(p.config, p.size): p.value(metric) for p in points}
    out = []
    for a, b in itertools.combinations(names, 2):
        gap = [math.log(seconds[(a, n)] / seconds[(b, n)]) for n in sizes]
        for i in range(len(sizes) - 1):
            if gap[i] * gap[i + 1] < 0:
                x = math.exp(extrapolate(0.0, gap[i], math.log(sizes[i]), gap[i + 1], math.log(sizes[i + 1])))
                below, above = (a, b) if gap[i] < 0 else (b, a)
                out.append(Crossover(below, above, x))
    return sorted(out, key=lambda c: c.size)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us"


def explain(c: Comparison) -> str:
    """One paragraph: who is faster where, and the cause (bus, bandwidth, latency, divergence), read off
    the points: the GPU's share of time in copies, the CPU model's bound, the SIMT efficiency."""
    at = {(p.config, p.size): p for p in c.points}
    cpus = [n for n in c.configs if at[(n, c.sizes[0])].bound in ("dram", "core", "chain")]
    gpus = [n for n in c.configs if n not in cpus]
    big, small = c.sizes[-1], c.sizes[0]
    out = []
    for g in gpus:
        for cpu in cpus:
            pg, pc = at[(g, big)], at[(cpu, big)]
            cross = c.crossover(cpu, g)
            lead = pc.seconds / pg.seconds
            if lead < 1:
                where = "at every size" if cross is None else f"up to {c.size_name} = {cross.size:,.0f}"
                if pc.bound == "chain":
                    cause = (f"latency: every load waits for the one before, and {cpu}'s caches and DRAM answer "
                             f"in nanoseconds where {g}'s memory takes hundreds of its slower cycles")
                elif c.include_transfers and pg.copy_seconds > 0.5 * pg.seconds:
                    cause = (f"the bus: {g} spends {pg.copy_seconds / pg.seconds:.0%} of its {_us(pg.seconds)} "
                             f"copying {pg.h2d_bytes + pg.d2h_bytes:,} bytes over PCIe, while {cpu} works in "
                             f"host memory ({_us(pc.seconds)}, {pc.bound}-bound)")
                else:
                    cause = (f"launch and latency: {g}'s {_us(pg.launch_seconds)} launch and long memory latency "
                             f"outweigh its width at these sizes")
                out.append(f"{cpu} is faster than {g} {where} ({lead:.2g}x {g}'s time at {c.size_name} = "
                           f"{big:,}): {cause}.")
            else:
                where = f"above {c.size_name} = {cross.size:,.0f}" if cross else "at every size"
                copies = (f" even with {_us(pg.copy_seconds)} of PCIe copies" if c.include_transfers and pg.copy_seconds
                          else "")
                cause = (f"bandwidth and width: {g}'s thousands of lanes and its memory's bandwidth finish "
                         f"{c.size_name} = {big:,} in {_us(pg.seconds)}{copies}, against {cpu}'s {_us(pc.seconds)} "
                         f"({pc.bound}-bound)")
                if at[(cpu, small)].seconds < at[(g, small)].seconds:
                    cause += f"; below the crossover {cpu}'s {_us(at[(cpu, small)].launch_seconds)} dispatch wins"
                out.append(f"{g} is faster than {cpu} {where} ({lead:.3g}x): {cause}.")
    if c.simt_efficiency and gpus and cpus:
        g, cpu = gpus[0], cpus[0]
        leads = [at[(cpu, n)].kernel_seconds / at[(g, n)].kernel_seconds for n in c.sizes]
        eff = dict(c.simt_efficiency)
        out.append(f"Divergence: as {c.size_name} goes from {small:,} to {big:,}, {g}'s SIMT efficiency falls from "
                   f"{eff.get(small, float('nan')):.0%} to {eff.get(big, float('nan')):.0%} and its lead over "
                   f"{cpu} in kernel time (launches aside) from {leads[0]:.3g}x to {leads[-1]:.3g}x: a "
                   f"warp of {c.warp_sizes.get(g, 32)} lanes runs every path its lanes take, a SIMD group of "
                   f"{c.warp_sizes.get(cpu, 8)} at most that many, and the CPU's branch predictor charges "
                   f"only its mispredictions.")
    if len(c.configs) > 1 and (not out or len(gpus) > 1 or len(cpus) > 1):  # designs of one kind: their ranking
        out.append(_ranking(c, at))
    energy = _energy_sentence(c, at)
    if energy:
        out = [energy, *out] if c.metric == "energy" else [*out, energy]
    return " ".join(out) or "one design only: nothing to compare"


def _nj(joules: float) -> str:
    return f"{joules * 1e9:,.3g} nJ"


def _energy_sentence(c: Comparison, at: dict) -> str:
    """Who uses the least energy to solution at each size, where that changes, and the average power
    that makes it so; empty with fewer than two designs with a power model."""
    names = c.energy_configs
    if len(names) < 2:
        return ""
    winners = [c.best(n, "energy") for n in c.sizes]
    spans = []
    for n, w in zip(c.sizes, winners, strict=True):
        if spans and spans[-1][0] == w:
            spans[-1][2] = n
        else:
            spans.append([w, n, n])
    if len(spans) == 1:
        where = [f"{spans[0][0]} uses the least energy at every size"]
    else:
        where = [f"{w} uses the least energy at {c.size_name} = {lo:,}" + (f"..{hi:,}" if hi != lo else "")
                 for w, lo, hi in spans]
    big = c.sizes[-1]
    cells = ", ".join(f"{name} {_nj(at[(name, big)].energy_per_element_j)} per element at "
                      f"{at[(name, big)].average_power_w:,.0f} W" for name in names)
    return f"On energy: {'; '.join(where)} ({cells} at {c.size_name} = {big:,})."


def _ranking(c: Comparison, at: dict) -> str:
    """The designs from fastest to slowest at the smallest and the largest size, in time (end to end)."""
    parts = []
    for n in dict.fromkeys((c.sizes[0], c.sizes[-1])):
        order = sorted(c.configs, key=lambda name: at[(name, n)].seconds)
        best = at[(order[0], n)]
        others = ", ".join(f"{at[(o, n)].seconds / best.seconds:.2f}x faster than {o} ({_us(at[(o, n)].seconds)})"
                           for o in order[1:])
        parts.append(f"At {c.size_name} = {n:,}, {order[0]} is fastest ({_us(best.seconds)}): {others}.")
    return " ".join(parts)


@dataclass(frozen=True)
class StepComparison:
    """A data-parallel training step on each node: every GPU computes for `compute_seconds`, then the
    gradients (`sizes`, bytes) are all-reduced over the node's interconnect."""

    configs: tuple[str, ...]
    sizes: tuple[int, ...]
    gpus: int
    points: tuple[ComparePoint, ...]

    def series(self, config: str) -> list[ComparePoint]:
        return [p for p in self.points if p.config == config]

    def table(self) -> str:
        """Each size's step time per node, its share in the all-reduce, and the explanation."""
        lines = [f"data-parallel step on {self.gpus} GPUs: compute, then an all-reduce of the gradients",
                 f"{'bytes':>14} " + " ".join(f"{c:>26}" for c in self.configs)]
        for n in self.sizes:
            cells = [next(p for p in self.series(c) if p.size == n) for c in self.configs]
            lines.append(f"{n:>14,} " + " ".join(f"{_us(p.seconds):>13} ({p.copy_seconds / p.seconds:4.0%} comm)"
                                                 for p in cells))
        lines.append(self.explain())
        return "\n".join(lines)

    def explain(self) -> str:
        fast, slow = sorted(self.configs, key=lambda c: self.series(c)[-1].seconds)[:1] + \
            sorted(self.configs, key=lambda c: -self.series(c)[-1].seconds)[:1]
        pf, ps = self.series(fast)[-1], self.series(slow)[-1]
        return (f"The bus: at {self.sizes[-1]:,} bytes of gradients {fast} finishes the step in {_us(pf.seconds)}, "
                f"{ps.seconds / pf.seconds:.3g}x faster than {slow} ({_us(ps.seconds)}), whose all-reduce takes "
                f"{ps.copy_seconds / ps.seconds:.0%} of the step: over PCIe every ring hop crosses host memory, "
                f"over NVLink it goes GPU to GPU.")

    def to_dict(self) -> dict[str, Any]:
        return {"configs": list(self.configs), "sizes": list(self.sizes), "gpus": self.gpus,
                "points": [asdict(p) for p in self.points], "explanation": self.explain()}


def multi_gpu_step(configs: Sequence[str | Config], sizes: Sequence[int], *, gpus: int = 8,
                   flops_per_byte: float = 1024.0) -> StepComparison:
    """Each node runs one step per gradient size S (bytes): a kernel of `flops_per_byte` x S flops on every
    GPU at its fp32 peak (S/4 parameters, 6 flops each for 1024/6 tokens of forward and backward), then a
    ring all-reduce of S bytes over all `gpus` GPUs, as NCCL would."""
    cfgs = [c if isinstance(c, Config) else load_config(c) for c in configs]
    points = []
    for cfg in cfgs:
        if cfg.system.gpus < gpus:
            raise GpusimError(f"{cfg.name} has {cfg.system.gpus} GPUs; the step needs {gpus}")
        clock = cfg.chip.clock_mhz * 1e6
        for n in sorted(set(sizes)):
            compute = flops_per_byte * n / (cfg.derived()["peak_fp32_gflops"] * 1e9)
            ops = [Kernel(cycles=max(1, round(compute * clock)), gpu=g, name="compute")
                   for g in range(gpus)]
            ops.append(Collective(collective="all_reduce", bytes=int(n), gpus=tuple(range(gpus)), name="gradients"))
            report = run_program(Program(tuple(ops), name="step"), cfg)
            busy = report.busy(0)
            points.append(ComparePoint(cfg.name, int(n), report.seconds, busy["compute"],
                                       report.launch_overhead_seconds, busy["communication"], 0, 0, 1.0, False,
                                       report.seconds - busy["communication"], "gpu"))
    return StepComparison(tuple(c.name for c in cfgs), tuple(sorted(set(sizes))), gpus, tuple(points))
