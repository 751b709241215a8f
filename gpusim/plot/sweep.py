"""Sweep charts from a sweep table: a metric against what the sweep varied, one line (or bar) per
combination of the other varied columns; a heatmap when two numeric columns vary and nothing else.

The metric is by default what ranks the points (gpusim.stats.ranking: cycles at one clock, the kernel's
time where the clocks differ). The x axis is the first column that varies (`SweepTable.axes`): a workload
parameter (`block` first, then `grid`, then the others in column order), else a config override
(`override.chip.clock_mhz`, `override.dram.bandwidth_gbps`), drawn as lines; else the config or the warp
scheduler, names drawn as groups of bars. Rows whose status is not "ok" are skipped and counted in a note
under the chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from gpusim.errors import GpusimError
from gpusim.plot.common import add_note, configs_of, grouped_bars, new_figure
from gpusim.plot.io import OVERRIDE, SweepTable
from gpusim.stats.metrics import unit_of
from gpusim.stats.ranking import ENERGY, ranked_by

AXIS_NAMES = {"block": "block size (threads)", "grid": "grid size (blocks)"}


def sweep_figure(table: SweepTable, metric: str | None = None) -> Figure:
    """Lines over a numeric column (one per combination of the other varied columns), bars over names
    (configs, warp schedulers), or, for two numeric columns and nothing else varied, a heatmap (x: the
    first, y: the second). `metric` None or "time": what ranks the points by time (cycles, or
    kernel_seconds where the clocks differ); "energy": energy_j; else a column's name."""
    # the vocabulary's words (--metric time|energy): what ranks the points by time, or their energy
    metric = {"time": None, "energy": ENERGY}.get(metric, metric) or ranked_by(table.ok_rows)
    table.require(metric)
    rows = [r for r in table.ok_rows if r.get(metric) is not None]
    if not rows:
        raise GpusimError(f"{table.path}: no successful point has a value of {metric!r}")
    vary = table.axes()
    if not vary:
        raise GpusimError(f"{table.path}: nothing varies between the points (parameters: "
                          f"{', '.join(table.params) or 'none'}; no config override, config or warp scheduler)")
    workloads = configs_of([str(r.get("workload") or "?") for r in rows])
    configs = configs_of([str(r["config"]) for r in rows])
    notes = [f"{table.errors} point(s) with status error skipped"] if table.errors else []
    fig = new_figure(8.5, 5.2)
    ax = fig.subplots()
    x = vary[0]
    numeric = [c for c in vary if all(isinstance(r.get(c), int | float) for r in rows)]
    if len(vary) == 2 and numeric == vary:
        _heatmap(fig, ax, rows, x, vary[1], metric)
        ax.set_title(f"{metric} over {_short(x)} x {_short(vary[1])}: {workloads} on {configs}")
    else:
        series = {key: [r for r in rows if _key(r, vary[1:]) == key] for key in dict.fromkeys(_key(r, vary[1:])
                                                                                              for r in rows)}
        if len(series) == 1 and not vary[1:]:
            series = {configs if "config" != x else workloads: rows}
        title = ", ".join(_short(c) for c in vary[1:]) or ("config" if x != "config" else "workload")
        if x in numeric:
            _lines(ax, series, x, metric, title)
        else:
            _bars(ax, series, x, metric, title)
        ax.set_ylabel(_quantity(metric))
        ax.set_title(f"{metric} vs {_short(x)}: {workloads} on {configs}")
    ax.set_xlabel(_axis_name(x))
    add_note(fig, notes)
    return fig


def _short(column: str) -> str:
    """`override.chip.clock_mhz` -> `clock_mhz`: a column as its last name."""
    return column.rpartition(".")[2] if column.startswith(OVERRIDE) else column


def _axis_name(column: str) -> str:
    return AXIS_NAMES.get(column) or (column[len(OVERRIDE):] if column.startswith(OVERRIDE) else column)


def _key(row: dict[str, Any], columns: Sequence[str]) -> str:
    """A row's series: its values in `columns` (a config or scheduler by its name, others as name=value)."""
    return " ".join(str(row.get(c)) if c in ("config", "warp_scheduler") else f"{_short(c)}={row.get(c)}"
                    for c in columns)


def _quantity(metric: str) -> str:
    unit = unit_of(metric)
    return f"{metric} ({unit})" if unit and unit != metric else metric


def _tick(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _lines(ax, series: dict[str, list[dict[str, Any]]], x: str, metric: str, title: str) -> None:
    rows = [r for rs in series.values() for r in rs]
    for key, rs in series.items():
        xs, ys = zip(*sorted((r[x], r[metric]) for r in rs), strict=True)
        ax.plot(xs, ys, marker="o", label=key)
    xs = sorted({r[x] for r in rows})
    if all(isinstance(v, int | float) for v in xs) and xs[0] > 0 and xs[-1] / xs[0] >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [_tick(v) for v in xs])
    _from_zero(ax, rows, metric)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title=title)


def _bars(ax, series: dict[str, list[dict[str, Any]]], x: str, metric: str, title: str) -> None:
    """One group of bars per name on x (in the sweep's order), one bar per series in each."""
    rows = [r for rs in series.values() for r in rs]
    names = list(dict.fromkeys(str(r[x]) for r in rows))
    values = [(key, [next((r[metric] for r in rs if str(r[x]) == n), None) for n in names])
              for key, rs in series.items()]
    grouped_bars(ax, names, values, value_format="{:.4g}")
    _from_zero(ax, rows, metric)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, title=title)


def _from_zero(ax, rows: Sequence[dict[str, Any]], metric: str) -> None:
    # The y axis starts at zero, so a 0.3 % spread looks like one (an axis fitted to the data's range
    # would draw it as a cliff).
    if min(r[metric] for r in rows) >= 0:
        ax.set_ylim(bottom=0, top=max(r[metric] for r in rows) * 1.08 or 1)


def _heatmap(fig: Figure, ax, rows: Sequence[dict[str, Any]], x: str, y: str, metric: str) -> None:
    xs, ys = sorted({r[x] for r in rows}), sorted({r[y] for r in rows})
    grid = np.full((len(ys), len(xs)), np.nan)
    for r in rows:
        grid[ys.index(r[y]), xs.index(r[x])] = r[metric]
    # The colour scale starts at zero for a quantity that cannot be negative, for the same reason as the
    # line chart's axis: a scale fitted to the data's range paints a 0.3 % spread from end to end.
    low = 0 if np.nanmin(grid) >= 0 else None
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis", vmin=low)
    ax.set_xticks(range(len(xs)), [_tick(v) for v in xs])
    ax.set_yticks(range(len(ys)), [_tick(v) for v in ys])
    ax.set_ylabel(AXIS_NAMES.get(y, y))
    middle = (np.nanmax(grid) + (low if low is not None else np.nanmin(grid))) / 2
    for (i, j), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(j, i, f"{v:.4g}", ha="center", va="center", fontsize=7, color="w" if v < middle else "k")
    fig.colorbar(image, ax=ax, label=_quantity(metric))
