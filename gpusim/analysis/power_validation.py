"""`gpusim validate --power`: microbenchmarks that stress one unit each, run on a config, and the power
model's board power for each (gpusim/stats/power.py), against the published or measured figures of
gpusim/data/validation/power.yaml (docs/power.md). Idle is the model with no kernel; an FFMA stress must
reach the board's limit and have its clock lowered."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from gpusim.config import Config, load_config
from gpusim.data import data_dir
from gpusim.errors import GpusimError
from gpusim.stats.power import idle_power
from gpusim.stats.simulate import simulate

DEFAULT_TOLERANCE_PCT = 15.0


def _grid(per_sm: int) -> Callable[[Config], dict[str, Any]]:
    return lambda cfg: {"n": cfg.chip.sm_count * per_sm}


# id -> (what it stresses, workload or None (idle), its parameters for a config)
BENCHES: dict[str, tuple[str, str | None, Callable[[Config], dict[str, Any]]]] = {
    "idle": ("no kernel, clocks at the DVFS curve's lowest point, SMs power-gated", None, lambda cfg: {}),
    "idle_clocked": ("no kernel, clocks held at chip.clock_mhz, every SM powered", None, lambda cfg: {}),
    "ffma": ("FP32 pipe: ffma_peak, 512 threads per SM, 8 FMA chains each", "ffma_peak",
             lambda cfg: {"n": cfg.chip.sm_count * 512, "iters": 16}),
    "sfu": ("SFU: sfu_peak, 512 threads per SM", "sfu_peak", lambda cfg: {"n": cfg.chip.sm_count * 512, "iters": 4}),
    "tensor": ("tensor cores: gemm_mma n = 1024 (f16 in, f32 accumulate)", "gemm_mma",
               lambda cfg: {"n": 1024, "stages": 3}),
    "shared": ("shared memory: conflict-free shared loads, 512 threads per SM", "shared_bank_conflict",
               lambda cfg: {"n": cfg.chip.sm_count * 512, "stride": 1, "iters": 16}),
    "l2": ("L2: l2_read, a 1 MiB footprint read twice by 4 blocks per SM", "l2_read",
           lambda cfg: {"words": 262144, "passes": 2, "grid": cfg.chip.sm_count * 4}),
    "dram": ("DRAM: stream_copy_v4, 8 blocks per SM copying 16 MiB per 1000 blocks", "stream_copy_v4",
             lambda cfg: {"n": cfg.chip.sm_count * 8 * 256 * 8, "grid": cfg.chip.sm_count * 8}),
}


@dataclass(frozen=True, slots=True)
class PowerRow:
    """One microbenchmark on one config: the model's board power against its reference (where one is)."""

    bench: str
    what: str
    power_w: float  # at clock_mhz
    clock_mhz: float  # after the power cap
    unconstrained_power_w: float
    reference_w: float | None
    kind: str | None  # measured, published, limit
    error_pct: float | None
    tolerance_pct: float
    status: str  # ok, FAIL, known gap, no reference
    source: str
    known_gap: str | None
    seconds: float


@dataclass(frozen=True, slots=True)
class PowerValidation:
    config: str
    rows: list[PowerRow]

    @property
    def failed(self) -> list[PowerRow]:
        return [r for r in self.rows if r.status == "FAIL"]

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "failed": len(self.failed),
                "rows": [{"config": self.config, **asdict(r)} for r in self.rows]}

    def _cells(self, r: PowerRow) -> list[str]:
        ref = "-" if r.reference_w is None else f"{r.reference_w:.1f} W ({r.kind})"
        err = "-" if r.error_pct is None else f"{r.error_pct:+.1f}"
        status = f"known gap: {r.known_gap}" if r.status == "known gap" else r.status
        return [r.bench, f"{r.power_w:.1f} W", f"{r.clock_mhz:.0f} MHz", f"{r.unconstrained_power_w:.1f} W", ref, err,
                status, r.source or r.what]

    def table(self) -> str:
        head = ["bench", "model", "clock", "uncapped", "reference", "error %", "status", "source"]
        body = [self._cells(r) for r in self.rows]
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(6)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row[:6], widths, strict=False)) + "  " + " -- ".join(row[6:])
                 for row in [head, *body]]
        ref = [r for r in self.rows if r.reference_w is not None]
        lines.append(f"{self.config}: {len(self.rows)} microbenchmarks, {len(ref)} with a reference, "
                     f"{sum(r.status == 'ok' for r in ref)} within tolerance, {len(self.failed)} outside")
        return "\n".join(lines)

    def markdown(self) -> str:
        out = [f"#### {self.config}", "",
               "| bench | model | clock | uncapped | reference | error % | status | source |", "|---|" * 8]
        out += ["| " + " | ".join(self._cells(r)) + " |" for r in self.rows]
        return "\n".join(out) + "\n"


def references(config: str) -> dict[str, dict[str, Any]]:
    """The config's entries of gpusim/data/validation/power.yaml (bench -> entry)."""
    data = yaml.safe_load((data_dir("validation") / "power.yaml").read_text()) or {}
    return data.get(config, {})


def _row(bench: str, cfg: Config, ref: dict[str, Any] | None) -> PowerRow:
    what, workload, params = BENCHES[bench]
    t0 = time.perf_counter()
    if workload is None:
        clock = cfg.power.dvfs_clocks_mhz[0] if bench == "idle" else cfg.chip.clock_mhz
        power = idle_power(cfg.power, cfg.chip.sm_count, None if bench == "idle" else cfg.chip.clock_mhz)
        unconstrained = power
    else:
        k = simulate(workload, cfg, params=params(cfg)).kernel
        power, clock, unconstrained = k["average_power_w"], k["power_clock_mhz"], k["unconstrained_power_w"]
    seconds = time.perf_counter() - t0
    if ref is None:
        return PowerRow(bench, what, power, clock, unconstrained, None, None, None, DEFAULT_TOLERANCE_PCT,
                        "no reference", "", None, seconds)
    watts, kind = float(ref["watts"]), ref.get("kind", "published")
    tol = float(ref.get("tolerance_pct", DEFAULT_TOLERANCE_PCT))
    error = (power / watts - 1) * 100
    if kind == "limit":  # the stress must draw more than the limit unconstrained, and be capped to it
        ok = unconstrained > watts and clock < cfg.chip.clock_mhz and math.isclose(power, watts, rel_tol=1e-4)
    else:
        ok = abs(error) <= tol
    status = "ok" if ok else ("known gap" if ref.get("known_gap") else "FAIL")
    return PowerRow(bench, what, power, clock, unconstrained, watts, kind, error, tol, status, ref.get("source", ""),
                    ref.get("known_gap"), seconds)


def validate_power(config: str, *, benches: list[str] | None = None, overrides: dict[str, Any] | None = None,
                   progress: Callable[[PowerRow], None] | None = None) -> PowerValidation:
    """Run the power microbenchmarks (`benches`, default all of BENCHES) on `config` and compare each
    model board power with its reference."""
    cfg = load_config(config, overrides=overrides)
    if cfg.power is None:
        raise GpusimError(f"config {cfg.name} has no power: section (the power model's coefficients; docs/power.md)")
    unknown = [b for b in benches or [] if b not in BENCHES]
    if unknown:
        raise GpusimError(f"no power microbenchmark {unknown[0]!r} (known: {', '.join(BENCHES)})")
    refs = references(cfg.name)
    rows = []
    for bench in benches or list(BENCHES):
        rows.append(_row(bench, cfg, refs.get(bench)))
        if progress is not None:
            progress(rows[-1])
    return PowerValidation(cfg.name, rows)
