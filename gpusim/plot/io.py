"""What the charts read and write: a result JSON (`gpusim run --json`, or a SimResult), a sweep table
(CSV, or JSON as a list of rows or {"points": [rows]}), the kernels in them as `KernelPoint`s, the
config each ran on, and a chart saved atomically as PNG or SVG.

A sweep table has one row per point. Its columns (the sweep's contract): `point`, `workload`, `config`,
`config_hash`, `label`, one column per workload parameter (`block`, `grid`, `n`, ...), `override.<field>`
per config override, `warp_scheduler`, `status` ("ok"/"error"), `error`, `verified`, `cached`,
`wall_seconds`, the kernel metrics flattened (`cycles`, `warp_states_pct.long_scoreboard`, ...) and
`verdict` (`gpusim sweep` adds `seed` and `verdict_reason`). A column that is none of these, no override
and no kernel metric, and holds numbers, is a parameter. A row's `warp_scheduler` is its config's
`scheduler.policy`, so it joins the overrides when the row's config is loaded.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from gpusim.config import Config, load_config
from gpusim.errors import GpusimError
from gpusim.stats.files import write_atomic
from gpusim.stats.metrics import KERNEL_METRICS, POWER_METRICS

SWEEP_FIXED = ("point", "workload", "config", "config_hash", "config_file", "label", "warp_scheduler", "seed", "status",
               "error", "verified", "cached", "wall_seconds", "verdict", "verdict_reason")
SWEEP_REQUIRED = ("config", "status")
OVERRIDE = "override."
FORMATS = {".png": "png", ".svg": "svg"}
PREFERRED_X = ("block", "grid")
SOURCE = "_source"  # the key under which load_input records a result's file


def is_metric(column: str) -> bool:
    """A kernel metric's column: a KERNEL_METRICS (or POWER_METRICS) name, or `name.key` of a nested one."""
    known = KERNEL_METRICS.keys() | POWER_METRICS.keys()
    return column in known or column.split(".", 1)[0] in known


@dataclass(frozen=True, slots=True)
class SweepTable:
    """A sweep table as read: `rows` (dicts, numbers as numbers, empty cells None) and `columns` in
    file order."""

    path: str
    rows: list[dict[str, Any]]
    columns: list[str]

    @property
    def ok_rows(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("status") == "ok"]

    @property
    def errors(self) -> int:
        """Rows whose status is not "ok" (skipped by every chart)."""
        return len(self.rows) - len(self.ok_rows)

    @property
    def params(self) -> list[str]:
        """The workload-parameter columns (numbers, in no fixed, override or metric column)."""
        return [c for c in self.columns if c not in SWEEP_FIXED and not c.startswith(OVERRIDE) and not is_metric(c)
                and all(isinstance(r.get(c), int | float | None) for r in self.rows)]

    def varying(self) -> list[str]:
        """Parameter columns taking more than one value over the ok rows, `block` then `grid` first."""
        rows = self.ok_rows
        vary = [c for c in self.params if len({r.get(c) for r in rows}) > 1]
        return sorted(vary, key=lambda c: PREFERRED_X.index(c) if c in PREFERRED_X else len(PREFERRED_X))

    def axes(self) -> list[str]:
        """Every column the points differ in over the ok rows, the chart's x axis first: the parameters
        (`varying`), then the config overrides (`override.chip.clock_mhz`), then `config` and
        `warp_scheduler`, which are names, not numbers."""
        rows = self.ok_rows
        overrides = [c for c in self.columns if c.startswith(OVERRIDE) and len({repr(r.get(c)) for r in rows}) > 1]
        names = [c for c in ("config", "warp_scheduler") if c in self.columns and len({r.get(c) for r in rows}) > 1]
        return [*self.varying(), *overrides, *names]

    def require(self, *columns: str) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise GpusimError(f"{self.path}: the sweep table has no column {', '.join(missing)}")


@dataclass(frozen=True, slots=True)
class KernelPoint:
    """One simulated kernel as the charts see it: a label, its kernel metrics (nested as
    `SimResult.kernel`), the config it ran on (name, hash, overrides) and the file it came from."""

    label: str
    kernel: dict[str, Any]
    config: str
    config_hash: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    source: str = "<result>"
    config_file: str | None = None

    def metric(self, name: str) -> Any:
        """A kernel metric by name (`warp_states_pct` gives the dict); an error naming the file if absent."""
        if name not in self.kernel:
            raise GpusimError(f"{self.source}: {self.label}: no {name!r} metric")
        return self.kernel[name]


def load_input(path: str | Path) -> dict[str, Any] | SweepTable:
    """A result JSON (returned as its dict) or a sweep table (CSV or JSON); an error naming the file when
    it is neither."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise GpusimError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".csv":
        return _sweep_csv(str(path), text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GpusimError(f"{path}: not JSON (line {exc.lineno}: {exc.msg}) and not a .csv sweep table") from None
    if isinstance(data, dict) and "points" in data:
        return _sweep_rows(str(path), data["points"], data.get("columns"))
    if isinstance(data, list):
        return _sweep_rows(str(path), data)
    if isinstance(data, dict) and "workload" in data and ("kernel" in data or "stats" in data
                                                          or data.get("mode") == "sampled"):
        return {**as_result(data), SOURCE: str(path)}
    raise GpusimError(f"{path}: neither a result (gpusim run --json) nor a sweep table (a list of rows "
                      "or {\"points\": [...]})")


def as_result(result: Any) -> dict[str, Any]:
    """A result's dict: a SimResult's or a sampled run's (`simulate_sampled`'s) `to_dict()`, or the dict
    itself; a sampled run's as `sampled_view` shows it, the same figures the terminal prints."""
    d = result.to_dict() if hasattr(result, "to_dict") else result
    sampled = isinstance(d, dict) and d.get("mode") == "sampled" and "sampled" not in d  # (not a view already)
    return sampled_view(d) if sampled else d


SAMPLED_RUN = "the largest sampled run"  # what a sampled result's metrics describe, until it carries the kernel's


def sampled_view(d: dict[str, Any]) -> dict[str, Any]:
    """A sampled run's dict (`gpusim run --sample`: the estimate, its verification and `detail`, the run
    simulated in detail) as one result: the provenance and verification of the whole kernel over the
    detail's metrics, SMs and timeline, and `sampled` = {cycles, confidence, cycles_low, cycles_high,
    kernel_seconds, sampling, metrics_of}: the estimate the terminal prints, and what `kernel` describes
    (the whole kernel where the sampled result carries its metrics, else SAMPLED_RUN)."""
    detail = d.get("detail") or {}
    view = {**detail, **{k: v for k, v in d.items() if k != "detail"}}
    whole = d.get("kernel")
    view["kernel"] = whole or detail.get("kernel")
    view["sampled"] = {"cycles": d.get("cycles"), "confidence": d.get("confidence"),
                       "cycles_low": d.get("cycles_low"), "cycles_high": d.get("cycles_high"),
                       "kernel_seconds": d.get("kernel_seconds"), "sampling": d.get("sampling") or {},
                       "metrics_of": "the whole kernel" if whole else SAMPLED_RUN}
    return view


def source_of(result: dict[str, Any]) -> str:
    return result.get(SOURCE, "<result>")


def require_kernel(result: dict[str, Any]) -> dict[str, Any]:
    """The result's kernel metrics; an error for a result without them (from `gpusim run --functional`)."""
    kernel = result.get("kernel")
    if not kernel:
        raise GpusimError(f"{source_of(result)}: no kernel metrics (a --functional result?); "
                          "run `gpusim run` without --functional")
    return kernel


def result_points(results: list[Any]) -> list[KernelPoint]:
    """One KernelPoint per result (a SimResult or its dict), labelled `workload k=v ...`, plus
    ` on <config>` when the results come from more than one config."""
    results = [as_result(r) for r in results]
    several = len({r.get("config") for r in results}) > 1
    points = []
    for r in results:
        params = " ".join(f"{k}={v}" for k, v in (r.get("params") or {}).items())
        label = " ".join(filter(None, [r.get("workload"), params, f"on {r.get('config')}" if several else ""]))
        points.append(KernelPoint(label or "kernel", require_kernel(r), r.get("config") or "?", r.get("config_hash"),
                                  dict(r.get("config_overrides") or {}), source=source_of(r),
                                  config_file=r.get("config_file")))
    return points


def sweep_points(table: SweepTable) -> list[KernelPoint]:
    """One KernelPoint per ok row, labelled by its `label` (or config) and the parameters that vary."""
    vary = table.varying()
    points = []
    for r in table.ok_rows:
        kernel: dict[str, Any] = {}
        for c, v in r.items():
            if is_metric(c):
                head, _, key = c.partition(".")
                if key:
                    kernel.setdefault(head, {})[key] = v
                else:
                    kernel[c] = v
        overrides = {c[len(OVERRIDE):]: v for c, v in r.items() if c.startswith(OVERRIDE) and v is not None}
        if r.get("warp_scheduler"):
            overrides.setdefault("scheduler.policy", r["warp_scheduler"])
        label = " ".join([str(r.get("label") or r["config"])] + [f"{c}={r.get(c)}" for c in vary])
        points.append(KernelPoint(label, kernel, str(r["config"]), r.get("config_hash"), overrides,
                                  source=table.path, config_file=r.get("config_file")))
    return points


def point_config(point: KernelPoint) -> Config:
    """The config a point ran on (see `run_config`)."""
    return run_config(point.config, point.config_hash, point.overrides, source=point.source,
                      config_file=point.config_file)


def result_config(result: dict[str, Any], cfg: Config | None = None) -> Config:
    """The config a result (as_result's dict) ran on: `cfg` when given, else the one it names, with the
    overrides it records (`config_overrides`), found as `run_config` finds it."""
    if cfg is not None:
        return cfg
    return run_config(result.get("config"), result.get("config_hash"), result.get("config_overrides"),
                      source=source_of(result), config_file=result.get("config_file"))


def run_config(name: str | None, config_hash: str | None, overrides: dict[str, Any] | None = None, *,
               source: str = "<result>", config_file: str | None = None) -> Config:
    """The config a run names, loaded with its overrides and checked against its hash. It is looked for
    where the run read it (`config_file`, when that file still exists), then by its name: a built-in, or
    NAME.yaml beside the result's file or in the working folder."""
    if not name:
        raise GpusimError(f"{source}: names no config; name it with --config")
    key = tuple(sorted((overrides or {}).items()))
    places = [str(Path(p).resolve()) for p in (config_file, Path(source).parent / f"{name}.yaml", f"{name}.yaml")
              if p and Path(p).is_file() and Path(p).stem == name]
    loaded, problem = [], None
    for place in [*dict.fromkeys(places), name]:
        try:
            loaded.append(_load_config(place, key))
        except GpusimError as exc:
            problem = problem or exc
        if loaded and (not config_hash or loaded[-1].hash() == config_hash):
            break
    if not loaded:
        raise GpusimError(f"{source}: cannot load its config {name!r} ({problem}); name it with --config") from None
    cfg = next((c for c in loaded if not config_hash or c.hash() == config_hash), loaded[0])
    if config_hash and cfg.hash() != config_hash:
        raise GpusimError(f"{source}: ran on config {name!r} with hash {config_hash}, but {name!r} now loads "
                          f"with hash {cfg.hash()} (overrides, or an edited file?); describe the hardware "
                          "with --config and --config-set")
    return cfg


@functools.lru_cache(maxsize=32)
def _load_config(name: str, overrides: tuple[tuple[str, Any], ...]) -> Config:
    return load_config(name, overrides=dict(overrides))


def save_figure(fig: Figure, path: str | Path, *, dpi: int = 100) -> None:
    """Render `fig` in memory as PNG or SVG (by the suffix of `path`) and write it atomically."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise GpusimError(f"{path}: unknown image format; name the file .png or .svg")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
    write_atomic(path, buf.getvalue())


def _sweep_csv(path: str, text: str) -> SweepTable:
    reader = csv.DictReader(io.StringIO(text))
    rows = [{k: _cell(v) for k, v in row.items()} for row in reader]
    return _table(path, rows, list(reader.fieldnames or []))


def _sweep_rows(path: str, rows: Any, columns: list[str] | None = None) -> SweepTable:
    if not isinstance(rows, list):
        raise GpusimError(f"{path}: \"points\" is not a list of rows")
    bad = next((i for i, r in enumerate(rows) if not isinstance(r, dict)), None)
    if bad is not None:
        raise GpusimError(f"{path}: sweep row {bad} is not an object")
    return _table(path, rows, columns or list(dict.fromkeys(c for r in rows for c in r)))


def _table(path: str, rows: list[dict[str, Any]], columns: list[str]) -> SweepTable:
    table = SweepTable(path, rows, columns)
    table.require(*SWEEP_REQUIRED)
    return table


def _cell(text: str | None) -> Any:
    """A CSV cell as a value: empty -> None, numbers -> int/float, true/false -> bool, else the text."""
    if text is None or text == "":
        return None
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text
