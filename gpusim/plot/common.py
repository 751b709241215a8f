"""What every chart shares: a Figure on the Agg canvas (no pyplot, so no global state), a note line under
the axes, and grouped bars."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

NOTE_GID = "note"


def new_figure(width: float, height: float) -> Figure:
    """A Figure of `width` x `height` inches with its own Agg canvas and constrained layout."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def add_note(fig: Figure, lines: Sequence[str]) -> None:
    """Small text at the figure's bottom left (points left out of the chart, and why), with room made for
    it below the axes; nothing if empty."""
    if not lines:
        return
    size = 7
    height = (len(lines) * size * 1.3 + 4) / (fig.get_figheight() * 72)  # points over the figure's height
    fig.get_layout_engine().set(rect=(0, height, 1, 1 - height))
    fig.text(0.005, 0.005, "\n".join(lines), fontsize=size, color="0.35", ha="left", va="bottom", gid=NOTE_GID)


def grouped_bars(ax: Axes, categories: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]],
                 *, value_format: str | None = None) -> None:
    """One group of bars per category, one bar per series in each group (in `series` order, each series
    one colour, labelled for the legend). A None value draws an empty (NaN-high) bar marked "n/a";
    `value_format` (e.g. "{:.0f}%") writes each value above its bar."""
    x = np.arange(len(categories))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        offset = x - 0.4 + width * (i + 0.5)
        bars = ax.bar(offset, [np.nan if v is None else v for v in values], width, label=label)
        if value_format:
            ax.bar_label(bars, ["" if v is None else value_format.format(v) for v in values], fontsize=7,
                         rotation=90 if len(series) > 3 else 0, padding=2)
        for xo, v in zip(offset, values, strict=True):
            if v is None:
                ax.text(xo, 0, "n/a", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, categories)


def point_ticks(ax: Axes, x: Sequence[float], labels: Sequence[str]) -> None:
    """Tick labels under bars, slanted when there are more than three of them."""
    slant = len(labels) > 3
    ax.set_xticks(x, labels, rotation=25 if slant else 0, ha="right" if slant else "center")


def configs_of(names: Sequence[str]) -> str:
    """The distinct config names, in first-seen order: "a100" or "a100, gtx980"."""
    return ", ".join(dict.fromkeys(names))
