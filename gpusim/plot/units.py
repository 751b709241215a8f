"""Execution-unit utilisation: one group of bars per unit (and the issue slots), one bar per kernel or
sweep point."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from gpusim.plot.common import add_note, configs_of, grouped_bars, new_figure
from gpusim.plot.io import KernelPoint
from gpusim.timing.decode import PORTS

ISSUE = "issue\nslots"  # (two lines: one would run into its neighbour's label)


def units_figure(points: Sequence[KernelPoint], *, notes: Sequence[str] = ()) -> Figure:
    """Bars of `unit_utilisation_pct` per unit (PORTS order, then any other unit the points name) and of
    `issue_slot_utilisation_pct`, one bar per point. `notes` go under the chart."""
    util = [p.metric("unit_utilisation_pct") for p in points]
    units = list(PORTS) + sorted({u for d in util for u in d} - set(PORTS))
    series = [(p.label, [d.get(u) or 0.0 for u in units] + [p.metric("issue_slot_utilisation_pct")])
              for p, d in zip(points, util, strict=True)]
    fig = new_figure(min(13.0, max(8.0, 4 + 0.2 * len(points) * len(units))), 4.8)
    ax = fig.subplots()
    grouped_bars(ax, units + [ISSUE], series)
    ax.set_xlabel("execution unit (pipe)")
    ax.set_ylabel("utilisation (% of peak, active cycles)")
    ax.set_ylim(0, 105)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="kernel")
    ax.set_title(f"Execution-unit utilisation on {configs_of([p.config for p in points])}")
    add_note(fig, notes)
    return fig
