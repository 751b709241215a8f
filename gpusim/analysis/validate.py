"""`gpusim validate`: microbenchmarks of gpusim/data/workloads/micro/ run on a config and compared with
published figures, or with real measurements (gpusim/data/validation/published.yaml says which, with
the source of each). Every simulated figure is a difference of two runs of one microbenchmark at two
sizes, so fixed costs (launch, prologue, the final store's drain) cancel, as the hardware
microbenchmarks' clock64() or event differences do."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import yaml

from gpusim.analysis.parallel import in_order
from gpusim.config import Config, load_config
from gpusim.data import data_dir
from gpusim.errors import GpusimError

DEFAULT_TOLERANCE_PCT = 15.0
OPS = ("ffma", "fadd", "imad", "iadd", "popc", "dfma", "sin", "cos", "rsqrt", "ex2", "lg2", "rcp", "sqrt", "shl", "xor",
       "min", "cvt", "shfl")


class ValidationDataError(GpusimError):
    """The reference data (published.yaml or a measurement file) is missing something a figure needs."""


@dataclass(frozen=True, slots=True)
class Row:
    """One figure on one config: simulated against reference."""

    figure: str
    kind: str
    units: str
    simulated: float
    reference: float
    error_pct: float  # (simulated / reference - 1) x 100
    tolerance_pct: float
    status: str  # "ok", "FAIL", "known gap"
    source: str
    known_gap: str | None
    seconds: float  # wall time of its simulations

    @property
    def within(self) -> bool:
        return abs(self.error_pct) <= self.tolerance_pct


@dataclass(frozen=True, slots=True)
class Validation:
    config: str
    rows: list[Row]

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.status == "FAIL"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: `rows` is a list of flat records (pandas.DataFrame(d["rows"]))."""
        return {"config": self.config, "figures": len(self.rows),
                "within_tolerance": sum(r.within for r in self.rows), "known_gaps": sum(r.status == "known gap"
                                                                                        for r in self.rows),
                "failed": len(self.failed), "rows": [{"config": self.config, **asdict(r)} for r in self.rows]}

    def markdown(self) -> str:
        """The rows as a Markdown table under a heading with the counts (docs/validation.md's form)."""
        gaps = sum(r.status == "known gap" for r in self.rows)
        out = [f"#### {self.config}: {len(self.rows)} figures, {sum(r.within for r in self.rows)} within tolerance, "
               f"{gaps} known gaps, {len(self.failed)} outside", "",
               "| figure | kind | simulated | reference | error % | status | source |", "|---|---|---|---|---|---|---|"]
        for r in self.rows:
            status = f"known gap: {r.known_gap}" if r.status == "known gap" else r.status
            out.append(f"| `{r.figure}` | {r.kind} | {r.simulated:.4g} | {r.reference:.4g} {r.units} | "
                       f"{r.error_pct:+.1f} | {status} | {r.source} |")
        return "\n".join(out)

    def table(self) -> str:
        head = ("figure", "simulated", "reference", "error %", "tolerance", "source")
        body = [(r.figure, f"{r.simulated:.4g} {r.units}", f"{r.reference:.4g}", f"{r.error_pct:+.1f}",
                 f"{r.tolerance_pct:g} %", (f"known gap: {r.known_gap} -- " if r.status == "known gap" else
                                            "FAIL -- " if r.status == "FAIL" else "") + r.source)
                for r in self.rows]
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(5)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row[:5], widths, strict=True)) + "  " + row[5]
                 for row in [head, *body]]
        gaps = sum(r.status == "known gap" for r in self.rows)
        lines.append(f"{self.config}: {len(self.rows)} figures, {sum(r.within for r in self.rows)} within tolerance, "
                     f"{gaps} known gaps, {len(self.failed)} outside tolerance")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# reference data


@cache
def published() -> dict[str, Any]:
    """gpusim/data/validation/published.yaml, parsed."""
    return yaml.safe_load((data_dir("validation") / "published.yaml").read_text())


@cache
def measurements(config: str) -> dict[str, Any] | None:
    path = data_dir("measurements") / f"{config}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def lookup(data: Any, path: str) -> float:
    """`a.b[k=v,k2=v2].c` in a measurement file: keys, and list items chosen by their fields."""
    for part in re.findall(r"[^.\[]+(?:\[[^\]]*\])?", path):
        key, _, sel = part.partition("[")
        if key:
            if not isinstance(data, dict) or key not in data:
                raise ValidationDataError(f"measurement path {path!r}: no {key!r}")
            data = data[key]
        if sel:
            want = dict(kv.split("=", 1) for kv in sel.rstrip("]").split(","))
            found = [d for d in data if all(str(d.get(k)) == v for k, v in want.items())]
            if len(found) != 1:
                raise ValidationDataError(f"measurement path {path!r}: {len(found)} items match [{sel}")
            data = found[0]
    if not isinstance(data, (int, float)) or isinstance(data, bool):
        raise ValidationDataError(f"measurement path {path!r} is not a number")
    return float(data)


def references(config: str, figures: list[str] | None = None) -> list[tuple[dict, float, str, dict]]:
    """(figure, reference value, source, its entry) for every figure with a reference for `config`."""
    out = []
    for fig in published()["figures"]:
        entry = fig.get(config)
        if entry is None or (figures and fig["id"] not in figures):
            continue
        if "measured" in entry:
            data = measurements(config)
            if data is None:
                raise ValidationDataError(f"{fig['id']}: no gpusim/data/measurements/{config}.json")
            value = lookup(data, entry["measured"]) * float(entry.get("scale", 1.0))
            source = f"measured on the {config.upper()}: measurements/{config}.json {entry['measured']}"
        else:
            value, source = float(entry["value"]), entry["source"]
        out.append((fig, value, source, entry))
    return out


# ----------------------------------------------------------------------------------------------
# microbenchmarks


@dataclass(frozen=True, slots=True)
class Run:
    """One simulation of a figure: a microbenchmark at one size (a task of `validate` on an executor)."""

    workload: str
    cfg: Config
    params: dict[str, Any]
    warm_l2: float | None = None
    max_steps: int | None = None
    ptxas_model: bool = True


def _cycles_of(run: Run) -> tuple[int, float]:
    """The kernel cycles of `run`, and the wall seconds its simulation took."""
    import gpusim

    t0 = time.perf_counter()
    cycles = gpusim.simulate(run.workload, run.cfg, params=run.params, warm_l2=run.warm_l2,
                             max_steps_per_warp=run.max_steps, ptxas_model=run.ptxas_model).kernel["cycles"]
    return cycles, time.perf_counter() - t0


def measure(config: str, m: dict[str, Any], overrides: dict[str, Any] | None = None, *,
            ptxas_model: bool = True) -> float:
    """The simulated figure of one `measure:` entry of published.yaml on `config` (with `overrides`).
    `ptxas_model` False runs the microbenchmark in program order (gpusim.isa.ptxas): a published figure is
    a rate of native instructions (the Programming Guide's table), measured on the instructions as written;
    a figure measured on a GPU ran what ptxas made of its CUDA benchmark, and is simulated through the
    ptxas model."""
    runs, figure = plan(config, m, overrides, ptxas_model=ptxas_model)
    return figure([_cycles_of(r)[0] for r in runs])


def plan(config: str, m: dict[str, Any], overrides: dict[str, Any] | None = None, *,
         ptxas_model: bool = True, configs: dict | None = None) -> tuple[list[Run], Callable[[list[int]], float]]:
    """The simulations `measure` runs for one `measure:` entry, and the figure as a function of their kernel
    cycles (in the same order). The runs are independent: `validate` gives each to its executor alone, so a
    figure whose runs are long (a chase over a whole L2) is spread over the workers too. `configs`: the
    configs loaded so far by override (a dict the caller keeps, so that a suite loads each once)."""
    overrides = dict(overrides or {})
    configs = {} if configs is None else configs

    def variant(**more) -> Config:  # a one-SM machine for per-SM throughputs, L1 bypassed for the L2's
        both = {**overrides, **more}
        try:
            key = (str(config), tuple(sorted(both.items())))
            hash(key)
        except TypeError:  # (an override given as a list: loaded each time)
            return load_config(config, overrides=both or None)
        if key not in configs:
            configs[key] = load_config(config, overrides=both or None)
        return configs[key]

    cfg = variant()
    bench = m["bench"]

    def runs(workload: str, on: Config, sizes: tuple[dict, ...], **fixed) -> list[Run]:
        opts = {k: fixed.pop(k) for k in ("warm_l2", "max_steps") if k in fixed}
        return [Run(workload, on, {**fixed, **size}, ptxas_model=ptxas_model, **opts) for size in sizes]

    if bench == "chase":
        k, fp, stride = int(m["steps"]), int(m["footprint"]), int(m["stride"])
        big = m.get("max_steps")  # (none: the runaway guard's default, on evidence; a whole footprint's chase runs)
        int_latency = cfg.units["int"].latency_cycles
        return (runs("latency_chase", cfg, ({"steps": k}, {"steps": 2 * k}), footprint=fp, stride=stride,
                     max_steps=big),
                lambda c: (c[1] - c[0]) / k - int_latency)
    if bench in ("op_latency", "op_throughput"):
        op = OPS.index(m["op"])
        if bench == "op_latency":
            return runs("op_chain", cfg, ({"iters": 4}, {"iters": 8}), op=op, ilp=1), lambda c: (c[1] - c[0]) / (4 * 32)
        one = variant(**{"chip.sm_count": 1})
        return (runs("op_chain", one, ({"iters": 4}, {"iters": 8}), op=op, ilp=8, threads=1024),
                lambda c: 4 * 32 * 1024 / (c[1] - c[0]))
    if bench == "shared_latency":
        return (runs("shared_chase", cfg, ({"iters": 4}, {"iters": 8}), stride=int(m["stride"])),
                lambda c: (c[1] - c[0]) / (4 * 32))
    if bench == "shared_throughput":
        one = variant(**{"chip.sm_count": 1})
        return (runs("shared_chase", one, ({"iters": 4}, {"iters": 8}), stride=int(m["stride"]), threads=1024,
                     blocks=2),
                lambda c: (c[1] - c[0]) / (4 * 32 * 64))
    sms = cfg.chip.sm_count
    if bench == "stream_copy":
        # A long copy's steady state: the L2 full of the copy's earlier lines, the written half dirty, so
        # that every line read misses and every line written evicts one that goes back to DRAM
        wl, block = m.get("workload", "stream_copy"), int(m.get("block", 256))
        grid = int(m.get("blocks_per_sm", 8)) * sms
        n1 = grid * block * int(m.get("iters", 8))
        width = 16 if wl.endswith("_v4") else 4
        clock_hz = cfg.chip.clock_mhz * 1e6
        return (runs(wl, cfg, ({"n": n1}, {"n": 2 * n1}), warm_l2=0.5, grid=grid, block=block),
                lambda c: 2 * width * n1 / ((c[1] - c[0]) / clock_hz) / 1e9)
    if bench == "l2_bandwidth":
        nocache = variant(**{"l1.caches_global_loads": False})
        words, grid = int(m["words"]), 8 * sms
        clock_mhz = cfg.chip.clock_mhz

        def l2_bandwidth(c: list[int]) -> float:
            per_cycle = 4 * words / (c[1] - c[0])
            return per_cycle * clock_mhz / 1000 if m.get("per_second") else per_cycle  # B/clk or GB/s

        return runs("l2_read", nocache, ({"passes": 1}, {"passes": 2}), words=words, grid=grid), l2_bandwidth
    if bench == "atomics":
        n = 4 * sms * 256
        spread = int(m["spread"]) or n
        k = int(m.get("iters", 2))  # enough that the slices' queues reach their steady state
        return (runs("atomic_add", cfg, ({"iters": k}, {"iters": 2 * k}), n=n, spread=spread, pitch=int(m["pitch"])),
                lambda c: k * n / (c[1] - c[0]))
    if bench == "divergence":
        return (runs("diverge_paths", cfg, ({"iters": 2}, {"iters": 4}), paths=int(m["paths"])),
                lambda c: (c[1] - c[0]) / 2)
    if bench == "launch":
        overhead_us, clock_mhz = cfg.launch.kernel_launch_overhead_ns / 1000, cfg.chip.clock_mhz
        return runs("op_chain", cfg, ({"iters": 0},), threads=32), lambda c: overhead_us + c[0] / clock_mhz
    raise ValidationDataError(f"unknown bench {bench!r} (known: {', '.join(published()['benches'])})")


def peak(fig: dict[str, Any], cfg: Config) -> float | None:
    """The config's peak for a bandwidth figure in the figure's units (DRAM for a stream copy, the L2's slices
    for an L2 read), None for figures that are not bandwidths."""
    bench, m = fig["measure"]["bench"], fig["measure"]
    if bench == "stream_copy":
        return cfg.dram.bandwidth_gbps
    if bench == "l2_bandwidth":
        per_cycle = cfg.l2.slices * cfg.l2.slice_bandwidth_bytes_per_cycle
        return per_cycle * cfg.chip.clock_mhz / 1000 if m.get("per_second") else per_cycle
    return None


def above_peak(fig: dict[str, Any], simulated: float, cfg: Config) -> str | None:
    """Why `simulated` cannot be (above the config's peak), or None."""
    top = peak(fig, cfg)
    if top is None or simulated <= top * (1 + 1e-6):
        return None
    return f"{simulated:.4g} {fig['units']} is above the config's peak {top:.4g} (a timing-model bug)"


def validate(config: str, *, figures: list[str] | None = None, overrides: dict[str, Any] | None = None,
             progress=None, executor=None) -> Validation:
    """Run the suite's figures that have a reference for `config` (a built-in name; `figures` picks some by
    id) and compare each with its reference; on `executor` (gpusim.analysis.parallel: e.g. a process pool),
    the rows the same and in the same order."""
    cfg = load_config(config, overrides=overrides or None)
    known = {f["id"] for f in published()["figures"]}
    unknown = sorted(set(figures or ()) - known)
    if unknown:
        raise ValidationDataError(f"no figure named {', '.join(map(repr, unknown))} (gpusim validate --list)")
    refs = references(cfg.name, figures)
    if not refs:
        raise ValidationDataError(f"no reference figures for config {cfg.name!r} in published.yaml "
                                  f"(configs with some: {', '.join(configs_with_references())})")
    configs: dict = {}
    plans = [plan(config, fig["measure"], overrides, ptxas_model="measured" in entry, configs=configs)
             for fig, _, _, entry in refs]
    runs = [run for p in plans for run in p[0]]
    rows, got = [], []
    for cycles in in_order(_cycles_of, runs, executor):  # (each run alone: a long figure's runs on two workers)
        got.append(cycles)
        while len(rows) < len(refs) and len(got) == len(plans[len(rows)][0]):
            i = len(rows)
            rows.append(_figure_row(cfg, refs[i], plans[i][1]([c for c, _ in got]), sum(t for _, t in got)))
            got = []
            if progress:
                progress(rows[-1])
    return Validation(cfg.name, rows)


def _figure_row(cfg: Config, ref_entry: tuple, sim: float, seconds: float) -> Row:
    """One figure's simulated value `sim` compared with its reference."""
    fig, ref, source, entry = ref_entry
    err = (sim / ref - 1) * 100 if ref else math.inf
    tol = float(entry.get("tolerance_pct", fig.get("tolerance_pct", DEFAULT_TOLERANCE_PCT)))
    gap = entry.get("known_gap")
    status = "ok" if abs(err) <= tol else ("known gap" if gap else "FAIL")
    over = above_peak(fig, sim, cfg)
    if over:  # a bandwidth the config cannot deliver fails whatever its reference says
        status, source = "FAIL", f"{over}; {source}"
    return Row(fig["id"], fig["kind"], fig["units"], round(sim, 4), round(ref, 4), round(err, 2), tol, status,
               source, gap, round(seconds, 3))


def configs_with_references() -> list[str]:
    return sorted({k for f in published()["figures"] for k in f if k not in ("id", "kind", "units", "measure",
                                                                             "tolerance_pct")})
