"""Launch-configuration and design-space sweeps: simulate the cross product of workload parameters, configs,
config overrides and warp schedulers, in parallel (a process pool or a Dask cluster), reusing cached
points, into one tidy table (docs/sweep.md).

    >>> from gpusim.sweep import sweep
    >>> s = sweep("saxpy", "a100", grid={"block": [64, 128, 256]}, params={"n": 4096})
    >>> [r["status"] for r in s.rows], s.best()["cycles"] == min(r["cycles"] for r in s.rows)
    (['ok', 'ok', 'ok'], True)
    >>> print(s.table()); print(s.explain())            # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpusim import __version__
from gpusim.config import Config, load_config
from gpusim.errors import ConfigError, GpusimError
from gpusim.stats.ranking import METRICS
from gpusim.stats.simulate import SCHEDULERS
from gpusim.sweep.cache import CacheWarning, ResultCache, code_version
from gpusim.sweep.executors import DaskExecutor, LocalExecutor
from gpusim.sweep.points import Point, make_points, parse_values, resolve_field
from gpusim.sweep.progress import Progress
from gpusim.sweep.result import TIE_PCT, SweepResult, make_row
from gpusim.sweep.worker import Task, failure, run_task
from gpusim.workloads import Workload, find_workload, load_workload


def sweep(workload: str | os.PathLike | Workload, configs: str | os.PathLike | Sequence[str | os.PathLike] = "a100",
          *, grid: Mapping[str, Sequence[Any]] | None = None, overrides: Mapping[str, Sequence[Any]] | None = None,
          params: Mapping[str, Any] | None = None, warp_schedulers: Sequence[str] | None = None, seed: int = 0,
          verify: bool = True, executor: LocalExecutor | DaskExecutor | None = None,
          cache: ResultCache | None = None, progress: bool = False,
          on_point: Callable[[dict[str, Any]], None] | None = None, tie_pct: float = TIE_PCT,
          zipped: Sequence[Sequence[str]] = (), metric: str = "time") -> SweepResult:
    """Simulate every combination of `configs` (built-in names or YAML paths), `overrides` (config field
    -> values; a full dotted field or a unique tail such as `sm_count`), `warp_schedulers` (default: each
    config's own) and `grid` (workload parameter -> values), with the fixed workload `params`. `zipped`
    names groups of swept axes (parameters, config fields) that vary together instead of multiplying
    (`[["dram.bandwidth_gbps", "l2.size_bytes"]]`: the first values together, then the second, ...).

    Points run on `executor` (default: a LocalExecutor on every core); with a `cache`, points simulated
    before are read back instead (and new ones stored as they finish, so an interrupted sweep resumes).
    A point that fails (any GpusimError: a bad launch, a config override out of range, a kernel fault; or
    with `verify`, values that differ from the numpy reference) becomes a row with status "error" and
    the message; the others go on. `progress` draws a bar on stderr; `on_point(row)` is called as each
    point finishes. Unknown configs, parameters or override names raise before anything runs. Points are
    compared only with points of the same problem size (`Workload.problem`); those within `tie_pct` percent
    of the best are reported as ties. `metric` is what "best" means: least time ("time": fewest cycles at
    one clock) or least energy ("energy": the power model's energy_j, configs with a power: section)."""
    if metric not in METRICS:
        raise GpusimError(f"metric {metric!r}: expected one of {', '.join(METRICS)}")
    wl = workload if isinstance(workload, Workload) else load_workload(workload)
    configs = [os.fspath(c) for c in ([configs] if isinstance(configs, str | os.PathLike) else configs)]
    if not configs:
        raise GpusimError("no config to sweep")
    base = {c: load_config(c) for c in configs}
    fields = _resolve_overrides(overrides or {})
    schedulers = list(warp_schedulers or [None])
    for s in schedulers:
        if s not in (None, *SCHEDULERS):
            raise ConfigError(f"warp scheduler {s!r} is not one of {', '.join(SCHEDULERS)}", field="scheduler.policy")
    groups = [[n if n in (grid or {}) else _zip_field(n, group) for n in group] for group in zipped]
    points = make_points(wl, configs, grid=grid or {}, overrides=fields, params=params or {},
                         warp_schedulers=schedulers, zipped=groups)
    labels = {p.index: _label(base[p.config].name, p, len(schedulers) > 1) for p in points}
    loaded: dict[tuple, Config | ConfigError] = {}
    rows: list[dict[str, Any]] = []
    bar = Progress(len(points)) if progress else None

    def finish(point: Point, cfg: Config | None, outcome: dict[str, Any], cached: bool) -> None:
        policy = point.warp_scheduler or (cfg or base[point.config]).scheduler.policy
        row = make_row(point, workload=wl.name, config=base[point.config].name,
                       config_hash=cfg.hash() if cfg else None, config_file=os.path.abspath(base[point.config].source),
                       label=labels[point.index],
                       warp_scheduler=policy, seed=seed, outcome=outcome, cached=cached, verify=verify)
        rows.append(row)
        if bar is not None:
            bar.update(cached=cached, failed=row["status"] != "ok")
        if on_point is not None:
            on_point(row)

    try:
        pending: list[tuple[Point, Config, str | None]] = []
        for p in points:
            cfg = _config(loaded, p)
            if isinstance(cfg, ConfigError):
                finish(p, None, failure(cfg), cached=False)
                continue
            key = None
            if cache is not None:
                key = cache.key(workload=wl.name, workload_folder=wl.folder, params=p.params,
                                config_hash=cfg.hash(), seed=seed, warp_scheduler=cfg.scheduler.policy)
                hit = cache.get(key)
                if hit is not None:
                    finish(p, cfg, hit, cached=True)
                    continue
            pending.append((p, cfg, key))
        ref = _reference(wl)
        tasks = [Task(ref, cfg, p.params, seed) for p, cfg, _ in pending]
        with contextlib.closing((executor or LocalExecutor()).run(run_task, tasks)) as outcomes:
            for i, outcome in outcomes:
                p, cfg, key = pending[i]
                if key is not None and "error" not in outcome:
                    cache.put(key, outcome)
                finish(p, cfg, outcome, cached=False)
    finally:
        if bar is not None:
            bar.close()
    return SweepResult.build(wl.name, wl.defaults, list(fields), rows,
                             {"gpusim_version": __version__, "code_version": code_version(), "seed": seed,
                              "verify": verify, **({"zipped": groups} if groups else {})},
                             problem=wl.problem, tie_pct=tie_pct, metric=metric)


def _resolve_overrides(overrides: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name, values in overrides.items():
        dotted = resolve_field(name)
        if dotted in out:
            raise ConfigError(f"overridden twice (also as {name!r})", field=dotted)
        out[dotted] = list(values)
    return out


def _zip_field(name: str, group: Sequence[str]) -> str:
    """A --zip name that is not a parameter: the config field it names (resolved as --config-set's)."""
    try:
        return resolve_field(name)
    except ConfigError as exc:
        raise GpusimError(f"--zip {','.join(group)}: {name}: not a swept parameter, and {exc.reason}") from None


def _config(loaded: dict[tuple, Config | ConfigError], p: Point) -> Config | ConfigError:
    """The point's Config (overrides and warp scheduler applied), or the ConfigError that rejects them;
    loaded once per combination."""
    key = (p.config, tuple(p.overrides.items()), p.warp_scheduler)
    if key not in loaded:
        ov = dict(p.overrides)
        if p.warp_scheduler is not None:
            ov["scheduler.policy"] = p.warp_scheduler
        try:
            loaded[key] = load_config(p.config, overrides=ov or None)
        except ConfigError as exc:
            loaded[key] = exc
    return loaded[key]


def _label(config: str, p: Point, with_scheduler: bool) -> str:
    """`a100`, `a100 sm_count=54`, `a100 sm_count=54 lrr`: the config and what was changed in it."""
    parts = [config, *(f"{k.rpartition('.')[2]}={v}" for k, v in p.overrides.items())]
    return " ".join(parts + ([p.warp_scheduler] if with_scheduler else []))


def _reference(wl: Workload) -> str:
    """How a worker finds the workload: by name when it is a built-in, else by its folder's path."""
    found = find_workload(wl.name)
    return wl.name if found is not None and found.resolve() == wl.folder else str(wl.folder)


__all__ = ["CacheWarning", "DaskExecutor", "LocalExecutor", "Point", "ResultCache", "SweepResult", "parse_values",
           "sweep"]
