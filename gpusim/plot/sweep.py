"""Sweep charts from a sweep table: a metric (cycles by default) against the swept parameter, one line
per config label; a heatmap when two parameters vary under a single label.

The x axis is the parameter column that varies (`block` first, then `grid`, then the others in column
order). Where further parameters vary, each of their combinations gets its own line. Rows whose status is
not "ok" are skipped and counted in a note under the chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from gpusim.errors import GpusimError
from gpusim.plot.common import add_note, configs_of, new_figure
from gpusim.plot.io import SweepTable
from gpusim.stats.metrics import unit_of

AXIS_NAMES = {"block": "block size (threads)", "grid": "grid size (blocks)"}


def sweep_figure(table: SweepTable, metric: str = "cycles") -> Figure:
    """Lines (one per label and combination of the other varying parameters) or, for two varying
    parameters and one label, a heatmap (x: the first, y: the second)."""
    table.require(metric)
    rows = [r for r in table.ok_rows if r.get(metric) is not None]
    if not rows:
        raise GpusimError(f"{table.path}: no successful point has a value of {metric!r}")
    vary = table.varying()
    if not vary:
        raise GpusimError(f"{table.path}: no parameter column varies (parameters: {', '.join(table.params) or 'none'})")
    labels = list(dict.fromkeys(str(r.get("label") or r["config"]) for r in rows))
    workloads = configs_of([str(r.get("workload") or "?") for r in rows])
    notes = [f"{table.errors} point(s) with status error skipped"] if table.errors else []
    fig = new_figure(8.5, 5.2)
    ax = fig.subplots()
    x = vary[0]
    if len(vary) == 2 and len(labels) == 1:
        _heatmap(fig, ax, rows, x, vary[1], metric)
        ax.set_title(f"{metric} over {x} x {vary[1]}: {workloads} on {labels[0]}")
    else:
        _lines(ax, rows, x, vary[1:], metric)
        ax.set_ylabel(_quantity(metric))
        ax.set_title(f"{metric} vs {x}: {workloads} on {configs_of([str(r['config']) for r in rows])}")
    ax.set_xlabel(AXIS_NAMES.get(x, x))
    add_note(fig, notes)
    return fig


def _quantity(metric: str) -> str:
    unit = unit_of(metric)
    return f"{metric} ({unit})" if unit and unit != metric else metric


def _tick(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _lines(ax, rows: Sequence[dict[str, Any]], x: str, others: Sequence[str], metric: str) -> None:
    series: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        key = " ".join([str(r.get("label") or r["config"])] + [f"{c}={r.get(c)}" for c in others])
        series.setdefault(key, []).append((r[x], r[metric]))
    for key, xy in series.items():
        xs, ys = zip(*sorted(xy), strict=True)
        ax.plot(xs, ys, marker="o", label=key)
    xs = sorted({r[x] for r in rows})
    if all(isinstance(v, int | float) for v in xs) and xs[0] > 0 and xs[-1] / xs[0] >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [_tick(v) for v in xs])
    # The y axis starts at zero, so a 0.3 % spread looks like one (an axis fitted to the data's range
    # would draw it as a cliff).
    if min(r[metric] for r in rows) >= 0:
        ax.set_ylim(bottom=0, top=max(r[metric] for r in rows) * 1.08 or 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title="config")


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
