"""Warp states (Nsight Compute's stall reasons) as stacked bars: one bar per kernel or sweep point, each
state's share of the resident warp-cycles stacked to 100%."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from gpusim.plot.common import add_note, configs_of, new_figure, point_ticks
from gpusim.plot.io import KernelPoint
from gpusim.timing.decode import WARP_STATES

# One colour per state, the same in every chart.
STATE_COLOURS = {s: colormaps["tab20"](i) for i, s in enumerate(WARP_STATES)}


def stalls_figure(points: Sequence[KernelPoint], *, notes: Sequence[str] = ()) -> Figure:
    """Stacked bars of `warp_states_pct` per point, states in WARP_STATES order from the bottom; states
    at 0% in every point are left out. `notes` go under the chart."""
    shares = [p.metric("warp_states_pct") for p in points]
    states = [s for s in WARP_STATES if any(sh.get(s) for sh in shares)]
    states += sorted({s for sh in shares for s in sh if sh[s] and s not in states})
    fig = new_figure(max(6.5, 3.5 + 0.9 * len(points)), 5)
    ax = fig.subplots()
    x = np.arange(len(points))
    bottom = np.zeros(len(points))
    for s in states:
        heights = np.array([sh.get(s) or 0.0 for sh in shares])
        ax.bar(x, heights, 0.7, bottom=bottom, label=s, color=STATE_COLOURS.get(s))
        bottom += heights
    point_ticks(ax, x, [p.label for p in points])
    ax.set_xlabel("kernel")
    ax.set_ylabel("share of resident warp-cycles (%)")
    ax.set_ylim(0, 100)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], title="warp state", loc="upper left", bbox_to_anchor=(1.01, 1),
              fontsize=8)
    ax.set_title(f"Warp states (stall reasons) on {configs_of([p.config for p in points])}")
    add_note(fig, notes)
    return fig
