"""`gpusim validate --kernels`: whole kernels timed on a real GPU against their simulation.

`gpusim/data/measurements/<config>.json` ("kernels") holds kernels measured on real hardware: for each
(kernel, size) its parameters, the launch, and the median time of repeated launches bracketed by CUDA
events, each launch on a fresh copy of the buffers so that its data comes from DRAM ("rotated"). For
each measured pair this module simulates every shipped workload that is a port of the kernel — the
`.sasm` workload named like the kernel, and its nvcc-PTX port `<kernel>_cu` — at the same parameters,
and compares the times the way they were measured:

- **The launch as CUDA events count it.** An event pair around one launch measures the kernel and its
  launch latency (the stream reaching the launch to the first block, and the completion reaching the
  second event): `launch.event_latency_ns` of the config, added to the simulated kernel time.
- **The L2 as the rotation leaves it.** Before each timed launch the previous launches, on other copies
  of the buffers, filled the L2 with their lines, dirty where they wrote. A full simulation starts from
  that steady state: the L2 full of lines the kernel does not use, the kernel's own written share of its
  buffers dirty (`written_share`), so the kernel's first allocations evict and write back as on the GPU.
- **Large sizes sampled** (`--sample auto`, gpusim/analysis/sampling/) with the estimate's bound shown
  beside the error; small and medium sizes run whole under `auto` (minutes at most), `--sample on`
  samples them too.

The summary per front end is Accel-Sim's: mean absolute percentage error (MAPE), mean signed error, the
pairs within +-30 %, and Pearson's r of the log times."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gpusim.analysis.parallel import in_order
from gpusim.analysis.validate import ValidationDataError, measurements
from gpusim.config import Config, load_config
from gpusim.workloads import list_workloads, load_workload

SIZES = ("small", "medium", "large")  # the measured sizes of a kernel, in the order the file lists them
FRONT_ENDS = ("sasm", "ptx", "sass")  # gpusim's .sasm workloads; nvcc's PTX, and the SASS, of the CUDA port
WITHIN_PCT = 30.0  # a pair within this error is "within" (the fidelity issue's acceptance)


@dataclass(frozen=True, slots=True)
class KernelRow:
    """One measured (kernel, size) simulated through one front end."""

    kernel: str  # the measured kernel
    workload: str  # the gpusim workload simulated
    front_end: str  # "sasm", "ptx" or "sass"
    size: str  # small / medium / large
    params: dict[str, Any]
    measured_us: float  # median event time of rotated launches
    simulated_us: float  # kernel_us + launch_us
    kernel_us: float
    launch_us: float
    cycles: int
    mode: str  # "full" or "sampled"
    bound_pct: float  # the sampled estimate's half-width, % of its cycles (0 for a full run)
    error_pct: float  # (simulated / measured - 1) x 100
    warp_instructions: int
    verified: bool | None  # the full run's output matched the reference (None: sampled, not checked)
    seconds: float  # wall time of the simulation

    @property
    def within(self) -> bool:
        return abs(self.error_pct) <= WITHIN_PCT


def summary(rows: Sequence[KernelRow]) -> dict[str, Any]:
    """MAPE, mean signed error, Pearson's r of log times, pairs within +-30 % and the worst pair."""
    if not rows:
        return {"pairs": 0}
    err = np.array([r.error_pct for r in rows])
    meas = np.log([r.measured_us for r in rows])
    sim = np.log([r.simulated_us for r in rows])
    r = float(np.corrcoef(meas, sim)[0, 1]) if len(rows) > 1 and meas.std() > 0 and sim.std() > 0 else math.nan
    worst = max(rows, key=lambda x: abs(x.error_pct))
    return {"pairs": len(rows), "mape_pct": float(np.abs(err).mean()), "mean_signed_error_pct": float(err.mean()),
            "pearson_log": r, "within_30_pct": int(sum(x.within for x in rows)),
            "worst": f"{worst.workload} {worst.size} ({worst.error_pct:+.1f} %)"}


@dataclass
class KernelValidation:
    config: str
    rows: list[KernelRow] = field(default_factory=list)

    def front_ends(self) -> list[str]:
        return [f for f in FRONT_ENDS if any(r.front_end == f for r in self.rows)]

    def summaries(self) -> dict[str, dict[str, Any]]:
        return {f: summary([r for r in self.rows if r.front_end == f]) for f in self.front_ends()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; `rows` are flat records (pandas.DataFrame(d["rows"]))."""
        return {"config": self.config, "summary": self.summaries(),
                "rows": [{"config": self.config, **asdict(r)} for r in self.rows]}

    def markdown(self) -> str:
        """The summary per front end and the pairs as Markdown tables (docs/validation.md's form)."""
        out = ["| front end | pairs | MAPE | mean signed error | Pearson r (log times) | within +-30 % | worst |",
               "|---|---|---|---|---|---|---|"]
        for fe, s in self.summaries().items():
            out.append(f"| {fe} | {s['pairs']} | {s['mape_pct']:.1f} % | {s['mean_signed_error_pct']:+.1f} % | "
                       f"{s['pearson_log']:.3f} | {s['within_30_pct']} | {s['worst']} |")
        out += ["", "| kernel | size | front end | measured us | simulated us | error % | mode (bound) |",
                "|---|---|---|---|---|---|---|"]
        for r in self.rows:
            mode = f"sampled (+-{r.bound_pct:.1f} %)" if r.mode == "sampled" else r.mode
            out.append(f"| {r.workload} | {r.size} | {r.front_end} | {r.measured_us:.1f} | {r.simulated_us:.1f} | "
                       f"{r.error_pct:+.1f} | {mode} |")
        return "\n".join(out)

    def table(self) -> str:
        head = ("kernel", "size", "front end", "measured us", "simulated us", "error %", "bound %", "mode")
        body = [(r.workload, r.size, r.front_end, f"{r.measured_us:.1f}", f"{r.simulated_us:.1f}",
                 f"{r.error_pct:+.1f}", f"{r.bound_pct:.1f}" if r.mode == "sampled" else "-", r.mode)
                for r in self.rows]
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
        lines = ["  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                strict=True)))
                 for row in [head, *body]]
        for fe, s in self.summaries().items():
            if s["pairs"]:
                lines.append(f"{self.config} {fe}: {s['pairs']} pairs, MAPE {s['mape_pct']:.1f} %, mean signed "
                             f"{s['mean_signed_error_pct']:+.1f} %, Pearson r (log times) {s['pearson_log']:.3f}, "
                             f"{s['within_30_pct']} within +-{WITHIN_PCT:g} %, worst {s['worst']}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# the measured pairs


@dataclass(frozen=True, slots=True)
class Pair:
    kernel: str
    size: str
    params: dict[str, Any]
    measured_us: float


def measured_pairs(config: str) -> list[Pair]:
    """The (kernel, size) pairs measured on `config`, sizes named small/medium/large in file order."""
    data = measurements(config)
    if data is None or not data.get("kernels"):
        raise ValidationDataError(f"no measured kernels for config {config!r} (gpusim/data/measurements/"
                                  f"{config}.json has no \"kernels\")")
    seen: dict[str, int] = {}
    out = []
    for k in data["kernels"]:
        i = seen.get(k["kernel"], 0)
        seen[k["kernel"]] = i + 1
        size = SIZES[i] if i < len(SIZES) else f"size{i}"
        out.append(Pair(k["kernel"], size, dict(k["params"]), float(k["ms_median_rotated"]) * 1000))
    return out


def ports(kernel: str) -> list[tuple[str, str]]:
    """(workload, front end) of each shipped port of a measured kernel."""
    known = set(list_workloads())
    out = []
    if kernel in known:
        out.append((kernel, "sasm"))
    if f"{kernel}_cu" in known:
        out.append((f"{kernel}_cu", "ptx"))
        out.append((f"{kernel}_cu", "sass"))  # the machine code ptxas makes of it (docs/isa.md, "SASS")
    return out


def written_share(wl, params: dict[str, Any]) -> float:
    """The fraction of the kernel's buffer bytes it writes: its reference's output buffers over all its
    array buffers (saxpy: y of x and y, 0.5; a reduction: ~0). The names come from the reference at the
    workload's smallest test size; the sizes from the buffers at `params` (shapes only: the inputs are
    generated, not kept)."""
    small = wl.params(min(wl.test_sizes, key=lambda s: sum(float(v) for v in s.values())) if wl.test_sizes
                      else None)
    outputs = set(wl.reference(small, wl.inputs(small)))
    sizes = {name: int(v.nbytes) for name, v in wl.inputs(wl.params(params)).items() if isinstance(v, np.ndarray)}
    total = sum(sizes.values())
    return sum(b for n, b in sizes.items() if n in outputs) / total if total else 0.0


# ----------------------------------------------------------------------------------------------
# simulation


def simulate_pair(pair: Pair, workload: str, front_end: str, cfg: Config, *, sample: str = "auto",
                  ptxas_model: bool = True) -> KernelRow:
    """Simulate one measured pair through one port (see the module docstring for what is counted).
    `ptxas_model` False runs the .sasm and PTX ports in program order, as written (docs/isa.md, "The ptxas
    model"); the SASS port is machine code either way."""
    from gpusim.analysis.sampling import simulate_sampled
    from gpusim.stats.simulate import simulate

    wl = load_workload(workload, isa="sass" if front_end == "sass" else None).for_config(cfg, ptxas_model)
    if front_end == "sass":  # (the sampler's loop and memory analyses read PTX-shaped code: SASS runs whole)
        sample = "off"
    if sample == "auto" and pair.size != "large":  # small and medium run whole: minutes at most, no bound
        sample = "off"
    launch_us = cfg.launch.event_ns / 1000
    t0 = time.perf_counter()
    sampled = None
    if sample != "off":
        sampled = simulate_sampled(wl, cfg, sample=sample, **pair.params)
    if sampled is not None and sampled.sampled:
        cycles, bound = sampled.cycles, 100 * sampled.confidence
        mode, verified, warp = "sampled", None, int(sampled.warp_instructions_estimated)
    else:
        r = simulate(wl, cfg, params=pair.params, verify=False, warm_l2=written_share(wl, pair.params))
        cycles, bound, mode = r.cycles, 0.0, "full"
        verified, warp = bool(r.verified), int(r.kernel["warp_instructions"])
    kernel_us = cycles / cfg.chip.clock_mhz
    sim = kernel_us + launch_us
    return KernelRow(pair.kernel, workload, front_end, pair.size, pair.params, round(pair.measured_us, 3),
                     round(sim, 3), round(kernel_us, 3), launch_us, int(cycles), mode, round(bound, 2),
                     round((sim / pair.measured_us - 1) * 100, 2), warp, verified,
                     round(time.perf_counter() - t0, 2))


def validate_kernels(config: str = "h200", *, kernels: Sequence[str] | None = None,
                     sizes: Sequence[str] | None = None, front_ends: Sequence[str] | None = None,
                     sample: str = "auto", overrides: dict[str, Any] | None = None,
                     progress: Callable[[KernelRow], None] | None = None,
                     ptxas_model: bool = True, executor=None) -> KernelValidation:
    """Every measured (kernel, size) of `config` through each of its ports (filtered by `kernels`,
    `sizes`, `front_ends`), simulated on the config with `overrides` (`ptxas_model` False: the .sasm and
    PTX ports in program order, without the ptxas model); on `executor` (gpusim.analysis.parallel: e.g. a
    process pool), the rows the same and in the same order."""
    cfg = load_config(config, overrides=overrides or None)
    pairs = measured_pairs(cfg.name)
    for what, given, known in (("kernel", kernels, {p.kernel for p in pairs}),
                               ("size", sizes, {p.size for p in pairs}), ("front end", front_ends, set(FRONT_ENDS))):
        bad = sorted(set(given or ()) - known)
        if bad:
            raise ValidationDataError(f"no measured {what} {', '.join(map(repr, bad))}; "
                                      f"known: {', '.join(sorted(known))}")
    out = KernelValidation(cfg.name)
    tasks = []
    for pair in pairs:
        if (kernels and pair.kernel not in kernels) or (sizes and pair.size not in sizes):
            continue
        for workload, fe in ports(pair.kernel):
            if front_ends and fe not in front_ends:
                continue
            if fe == "sass" and pair.size == "large" and not (front_ends and sizes):
                continue  # SASS runs whole, and a large size whole takes minutes to hours: only when asked for
            tasks.append((pair, workload, fe))
    for row in in_order(partial(_pair_row, cfg, sample, ptxas_model), tasks, executor):
        out.rows.append(row)
        if progress:
            progress(row)
    return out


def _pair_row(cfg: Config, sample: str, ptxas_model: bool, task: tuple) -> KernelRow:
    """One measured pair through one port (a task of `validate_kernels`)."""
    pair, workload, fe = task
    return simulate_pair(pair, workload, fe, cfg, sample=sample, ptxas_model=ptxas_model)
