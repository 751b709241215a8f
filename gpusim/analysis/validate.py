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
from dataclasses import asdict, dataclass
from functools import cache, partial
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


def _cycles_of(workload: str, cfg: Config, warm_l2: float | None = None, max_steps: int | None = None,
               ptxas_model: bool = True, **params) -> int:
    import gpusim

    return gpusim.simulate(workload, cfg, params=params, warm_l2=warm_l2, max_steps_per_warp=max_steps,
                           ptxas_model=ptxas_model).kernel["cycles"]


def measure(config: str, m: dict[str, Any], overrides: dict[str, Any] | None = None, *,
            ptxas_model: bool = True) -> float:
    """The simulated figure of one `measure:` entry of published.yaml on `config` (with `overrides`).
    `ptxas_model` False runs the microbenchmark in program order (gpusim.isa.ptxas): a published figure is
    a rate of native instructions (the Programming Guide's table), measured on the instructions as written;
    a figure measured on a GPU ran what ptxas made of its CUDA benchmark, and is simulated through the
    ptxas model."""
    overrides = dict(overrides or {})
    _cycles = partial(_cycles_of, ptxas_model=ptxas_model)
    cfg = load_config(config, overrides=overrides or None)
    bench = m["bench"]

    def variant(**more) -> Config:  # a one-SM machine for per-SM throughputs, L1 bypassed for the L2's
        return load_config(config, overrides={**overrides, **more})

    if bench == "chase":
        k, fp, stride = int(m["steps"]), int(m["footprint"]), int(m["stride"])
        big = m.get("max_steps")  # a chase walking a whole footprint outlasts the runaway guard's default
        c1 = _cycles("latency_chase", cfg, footprint=fp, stride=stride, steps=k, max_steps=big)
        c2 = _cycles("latency_chase", cfg, footprint=fp, stride=stride, steps=2 * k, max_steps=big)
        return (c2 - c1) / k - cfg.units["int"].latency_cycles
    if bench in ("op_latency", "op_throughput"):
        op = OPS.index(m["op"])
        if bench == "op_latency":
            c1, c2 = (_cycles("op_chain", cfg, op=op, ilp=1, iters=i) for i in (4, 8))
            return (c2 - c1) / (4 * 32)
        one = variant(**{"chip.sm_count": 1})
        c1, c2 = (_cycles("op_chain", one, op=op, ilp=8, iters=i, threads=1024) for i in (4, 8))
        return 4 * 32 * 1024 / (c2 - c1)
    if bench == "shared_latency":
        c1, c2 = (_cycles("shared_chase", cfg, stride=int(m["stride"]), iters=i) for i in (4, 8))
        return (c2 - c1) / (4 * 32)
    if bench == "shared_throughput":
        one = variant(**{"chip.sm_count": 1})
        c1, c2 = (_cycles("shared_chase", one, stride=int(m["stride"]), iters=i, threads=1024, blocks=2)
                  for i in (4, 8))
        return (c2 - c1) / (4 * 32 * 64)
    sms = cfg.chip.sm_count
    if bench == "stream_copy":
        # A long copy's steady state: the L2 full of the copy's earlier lines, the written half dirty, so
        # that every line read misses and every line written evicts one that goes back to DRAM
        wl, block = m.get("workload", "stream_copy"), int(m.get("block", 256))
        grid = int(m.get("blocks_per_sm", 8)) * sms
        n1 = grid * block * int(m.get("iters", 8))
        width = 16 if wl.endswith("_v4") else 4
        c1, c2 = (_cycles(wl, cfg, warm_l2=0.5, n=n, grid=grid, block=block) for n in (n1, 2 * n1))
        return 2 * width * n1 / ((c2 - c1) / (cfg.chip.clock_mhz * 1e6)) / 1e9
    if bench == "l2_bandwidth":
        nocache = variant(**{"l1.caches_global_loads": False})
        words, grid = int(m["words"]), 8 * sms
        c1, c2 = (_cycles("l2_read", nocache, words=words, passes=p, grid=grid) for p in (1, 2))
        per_cycle = 4 * words / (c2 - c1)
        return per_cycle * cfg.chip.clock_mhz / 1000 if m.get("per_second") else per_cycle  # B/clk or GB/s
    if bench == "atomics":
        n = 4 * sms * 256
        spread = int(m["spread"]) or n
        k = int(m.get("iters", 2))  # enough that the slices' queues reach their steady state
        c1, c2 = (_cycles("atomic_add", cfg, n=n, spread=spread, pitch=int(m["pitch"]), iters=i) for i in (k, 2 * k))
        return k * n / (c2 - c1)
    if bench == "divergence":
        c1, c2 = (_cycles("diverge_paths", cfg, paths=int(m["paths"]), iters=i) for i in (2, 4))
        return (c2 - c1) / 2
    if bench == "launch":
        cycles = _cycles("op_chain", cfg, iters=0, threads=32)
        return cfg.launch.kernel_launch_overhead_ns / 1000 + cycles / cfg.chip.clock_mhz
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
    rows = []
    for row in in_order(partial(_figure_row, config, cfg, overrides), refs, executor):
        rows.append(row)
        if progress:
            progress(row)
    return Validation(cfg.name, rows)


def _figure_row(config: str, cfg: Config, overrides: dict[str, Any] | None, ref_entry: tuple) -> Row:
    """One figure simulated and compared with its reference (a task of `validate`)."""
    fig, ref, source, entry = ref_entry
    t0 = time.perf_counter()
    sim = measure(config, fig["measure"], overrides, ptxas_model="measured" in entry)
    err = (sim / ref - 1) * 100 if ref else math.inf
    tol = float(entry.get("tolerance_pct", fig.get("tolerance_pct", DEFAULT_TOLERANCE_PCT)))
    gap = entry.get("known_gap")
    status = "ok" if abs(err) <= tol else ("known gap" if gap else "FAIL")
    over = above_peak(fig, sim, cfg)
    if over:  # a bandwidth the config cannot deliver fails whatever its reference says
        status, source = "FAIL", f"{over}; {source}"
    return Row(fig["id"], fig["kind"], fig["units"], round(sim, 4), round(ref, 4), round(err, 2), tol, status,
               source, gap, round(time.perf_counter() - t0, 3))


def configs_with_references() -> list[str]:
    return sorted({k for f in published()["figures"] for k in f if k not in ("id", "kind", "units", "measure",
                                                                             "tolerance_pct")})
