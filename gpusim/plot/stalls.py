"""Warp states (Nsight Compute's stall reasons) as stacked bars, one bar per kernel or sweep point: by
default each state's warp-cycles per issued instruction (Nsight's "Warp State Statistics"), so a kernel
whose warps wait 96 cycles an instruction stands taller than one that waits 14; with `scale="pct"`,
each state's share of the resident warp-cycles, stacked to 100%."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from gpusim.errors import GpusimError
from gpusim.plot.common import add_note, configs_of, new_figure, point_ticks
from gpusim.plot.io import KernelPoint
from gpusim.timing.decode import WARP_STATES

# One colour per state, the same in every chart.
STATE_COLOURS = {s: colormaps["tab20"](i) for i, s in enumerate(WARP_STATES)}


SCALES = ("cycles", "pct")


def stalls_figure(points: Sequence[KernelPoint], *, scale: str = "cycles", notes: Sequence[str] = ()) -> Figure:
    """Stacked bars per point, states in WARP_STATES order from the bottom: warp-cycles per issued
    instruction (`scale="cycles"`: `warp_states` / `warp_instructions`) or `warp_states_pct`
    (`scale="pct"`); states at 0 in every point are left out. `notes` go under the chart."""
    if scale not in SCALES:
        raise GpusimError(f"unknown stall scale {scale!r} (choose {' or '.join(SCALES)})")
    if scale == "pct":
        shares = [p.metric("warp_states_pct") for p in points]
    else:
        shares = []
        for p in points:
            issued = p.metric("warp_instructions") or 0
            shares.append({s: (v / issued if issued else 0.0) for s, v in p.metric("warp_states").items()})
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
    if scale == "cycles":  # the total above each bar: cycles a warp spends per instruction it issues
        for xi, total in zip(x, bottom, strict=True):
            ax.text(xi, total, f"{total:.1f}", ha="center", va="bottom", fontsize=8)
    point_ticks(ax, x, [p.label for p in points])
    ax.set_xlabel("kernel")
    if scale == "pct":
        ax.set_ylabel("share of resident warp-cycles (%)")
        ax.set_ylim(0, 100)
    else:
        ax.set_ylabel("warp-cycles per issued instruction")
        ax.set_ylim(0, max(bottom.max(initial=0.0), 1.0) * 1.12)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], title="warp state", loc="upper left", bbox_to_anchor=(1.01, 1),
              fontsize=8)
    ax.set_title(f"Warp states (stall reasons) on {configs_of([p.config for p in points])}")
    add_note(fig, notes)
    return fig
