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
GPU's steady state, not its fill; such points are marked `extrapolated`. This holds for kernels whose
work per block does not depend on n; another kernel is refused (its warp instructions per block differ
between the anchors)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from gpusim.analysis.kernel_cost import as_workload, blocks_per_wave, extrapolate, kernel_run
from gpusim.config import load_config
from gpusim.config.schema import Config
from gpusim.errors import GpusimError
from gpusim.system import CopyD2H, CopyH2D, Kernel, Program, run_program
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

    @property
    def throughput(self) -> float:
        """Elements per second."""
        return self.size / self.seconds


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

    def series(self, config: str) -> list[ComparePoint]:
        return [p for p in self.points if p.config == config]

    def crossover(self, a: str, b: str) -> Crossover | None:
        """The first crossover between configs `a` and `b`, or None within the sizes."""
        return next((c for c in self.crossovers if {c.faster_below, c.faster_above} == {a, b}), None)

    def to_dict(self) -> dict[str, Any]:
        def point(p: ComparePoint) -> dict[str, Any]:
            return {**asdict(p), "throughput_per_second": p.throughput}

        return {"workload": self.workload, "configs": list(self.configs), "sizes": list(self.sizes),
                "include_transfers": self.include_transfers, "max_simulated": self.max_simulated,
                "points": [point(p) for p in self.points], "latency": [point(p) for p in self.latency],
                "crossovers": [asdict(c) for c in self.crossovers]}

    def table(self) -> str:
        """Time (us) and throughput (elements/s) per size and design, the one-element latency and the
        crossovers; `~` marks an extrapolated time."""
        width = 24
        head = f"{'n':>12} " + " ".join(f"{c:>{width}}" for c in self.configs)
        transfers = "with" if self.include_transfers else "without"
        lines = [f"{self.workload}: time in us (~ extrapolated past {self.max_simulated:,} elements) and "
                 f"throughput, {transfers} host-device copies", head]
        for size in self.sizes:
            cells = []
            for c in self.configs:
                p = next(q for q in self.series(c) if q.size == size)
                cells.append(f"{'~' if p.extrapolated else ''}{p.seconds * 1e6:,.2f} us {p.throughput:9.3g}/s")
            lines.append(f"{size:>12,} " + " ".join(f"{cell:>{width}}" for cell in cells))
        lines.append("latency of one element: " + ", ".join(f"{p.config} {p.seconds * 1e6:,.3f} us"
                                                         for p in self.latency))
        for c in self.crossovers:
            lines.append(f"crossover at n = {c.size:,.0f}: {c.faster_below} faster below, {c.faster_above} above")
        if not self.crossovers:
            lines.append("no crossover within the sizes")
        return "\n".join(lines)


def log_sizes(low: float, high: float, per_decade: int = 1) -> list[int]:
    """Log-spaced integer sizes from `low` to `high`, `per_decade` a decade."""
    if not 1 <= low <= high:
        raise GpusimError(f"sizes {low:g}..{high:g}: need 1 <= low <= high")
    count = round(math.log10(high / low) * per_decade) + 1
    return sorted({round(v) for v in np.geomspace(low, high, count)})


def compare(workload: Workload | str, configs: Sequence[str | Config], sizes: Sequence[int], *,
            include_transfers: bool = False, max_simulated: int = 2**18) -> Comparison:
    """Each size on each design (module docstring)."""
    wl = as_workload(workload)
    if SIZE not in wl.defaults:
        raise GpusimError(f"{wl.name} has no size parameter {SIZE!r} (parameters: {', '.join(wl.defaults)})")
    cfgs = [c if isinstance(c, Config) else load_config(c) for c in configs]
    sizes = tuple(sorted(set(sizes)))
    points, latency = [], []
    for cfg in cfgs:
        design = _Design(wl, cfg, include_transfers, max_simulated)
        points += [design.point(n) for n in sizes]
        latency.append(design.point(1))
    names = tuple(c.name for c in cfgs)
    return Comparison(wl.name, names, sizes, include_transfers, max_simulated, tuple(points), tuple(latency),
                      tuple(_crossovers(points, names, sizes)))


class _Design:
    """One config's points: simulated or extrapolated kernel cycles, run as a program with its copies."""

    def __init__(self, wl: Workload, cfg: Config, include_transfers: bool, max_simulated: int):
        self.wl, self.cfg = wl, cfg
        self.copies = include_transfers and not cfg.host.resident
        self.max_simulated = max_simulated
        self.params = {}
        if "block" in wl.defaults:
            self.params["block"] = min(int(wl.defaults["block"]), cfg.sm.max_threads_per_block)
        per_wave = blocks_per_wave(wl, cfg, **self._at(1)) * wl.launch(self._at(1)).threads_per_block
        self.anchor = max(max_simulated, 1 << math.ceil(math.log2(2 * per_wave)))
        self.io = [_io_bytes(wl, self._at(n)) for n in IO_SIZES]

    def _at(self, n: int) -> dict[str, int]:
        return {SIZE: n, **self.params}

    def _blocks(self, n: int) -> int:
        return self.wl.launch(self._at(n)).num_blocks

    def cycles(self, n: int) -> tuple[float, float, bool]:
        """(cycles, waves, extrapolated) of the kernel at size n."""
        if n <= self.max_simulated:
            run = kernel_run(self.wl, self.cfg, **self._at(n))
            return run.cycles, run.waves, False
        lo, hi = (kernel_run(self.wl, self.cfg, **self._at(a)) for a in (self.anchor // 2, self.anchor))
        per_block = [r.warp_instructions / r.blocks for r in (lo, hi)]
        if abs(per_block[1] - per_block[0]) > SAME_WORK * per_block[1]:
            raise GpusimError(f"{self.wl.name}: its warp instructions per block change with n ({per_block[0]:.1f} "
                              f"at n={self.anchor // 2}, {per_block[1]:.1f} at n={self.anchor}), so its time cannot "
                              f"be extrapolated in waves; keep the sizes within {self.max_simulated:,}")
        blocks = self._blocks(n)
        return extrapolate(blocks, lo.blocks, lo.cycles, hi.blocks, hi.cycles), blocks / hi.blocks_per_wave, True

    def point(self, n: int) -> ComparePoint:
        cycles, waves, extrapolated = self.cycles(n)
        (n0, (in0, out0)), (n1, (in1, out1)) = zip(IO_SIZES, self.io, strict=True)
        h2d, d2h = (round(extrapolate(n, n0, a, n1, b)) for a, b in ((in0, in1), (out0, out1)))
        ops = [Kernel(cycles=cycles, name=self.wl.name)]
        if self.copies:
            ops = [CopyH2D(bytes=h2d, name="inputs")] * bool(h2d) + ops
            ops += [CopyD2H(bytes=d2h, name="outputs")] * bool(d2h)
        report = run_program(Program(tuple(ops), name=self.wl.name), self.cfg)
        busy = report.busy(0)
        return ComparePoint(self.cfg.name, n, report.seconds, busy["compute"], report.launch_overhead_seconds,
                            busy["copy"], h2d if self.copies else 0, d2h if self.copies else 0, waves, extrapolated)


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


def _crossovers(points: Sequence[ComparePoint], names: Sequence[str], sizes: Sequence[int]) -> list[Crossover]:
    seconds = {(p.config, p.size): p.seconds for p in points}
    out = []
    for a, b in itertools.combinations(names, 2):
        gap = [math.log(seconds[(a, n)] / seconds[(b, n)]) for n in sizes]
        for i in range(len(sizes) - 1):
            if gap[i] * gap[i + 1] < 0:
                x = math.exp(extrapolate(0.0, gap[i], math.log(sizes[i]), gap[i + 1], math.log(sizes[i + 1])))
                below, above = (a, b) if gap[i] < 0 else (b, a)
                out.append(Crossover(below, above, x))
    return sorted(out, key=lambda c: c.size)
