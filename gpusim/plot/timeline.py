"""Blocks on SMs over time, from a result's per-block timeline: one bar per block (y: its SM, split into
the slots of the blocks resident together; x: cycles), coloured by wave, with the last dispatch and the
kernel's end marked so the tail (SMs idle while the last blocks finish) shows.

A block's wave is how many blocks ran before it in its slot of its SM: the first blocks an SM takes are
wave 1, the blocks that replace them wave 2, and so on. Slots are the trace's: a block takes the lowest
slot of its SM free at its start."""

from __future__ import annotations

from typing import Any

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gpusim.errors import GpusimError
from gpusim.plot.common import new_figure
from gpusim.plot.io import as_result, require_kernel, source_of
from gpusim.stats.trace import _slots

LEGEND_WAVES = 10  # waves named in the legend (colours repeat after tab10's ten)


def block_waves(timeline: list[dict[str, int]]) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """(block -> slot, block -> wave from 0, SM -> number of slots) for timeline rows {block, sm, start, end}."""
    slots = _slots([(b["block"], b["sm"], b["start"], b["end"]) for b in timeline])
    used: dict[tuple[int, int], int] = {}
    waves: dict[int, int] = {}
    for b in sorted(timeline, key=lambda b: (b["start"], b["block"])):
        key = (b["sm"], slots[b["block"]])
        waves[b["block"]] = used.get(key, 0)
        used[key] = waves[b["block"]] + 1
    nslots: dict[int, int] = {}
    for (sm, slot) in used:
        nslots[sm] = max(nslots.get(sm, 0), slot + 1)
    return slots, waves, nslots


def timeline_figure(result: Any) -> Figure:
    """The block timeline of a result (a SimResult or its dict): bars in one BarContainer in timeline
    order, a dashed line at the kernel's end (gid `kernel_end`) and a dotted one at the last block's
    dispatch (gid `last_dispatch`)."""
    r = as_result(result)
    kernel, timeline = require_kernel(r), r.get("timeline")
    if not timeline:
        raise GpusimError(f"{source_of(r)}: no per-block timeline")
    slots, waves, nslots = block_waves(timeline)
    colours = colormaps["tab10"]
    fig = new_figure(11, 0.035 * kernel["sms"] + 3)
    ax = fig.subplots()
    ax.barh([b["sm"] + slots[b["block"]] / nslots[b["sm"]] for b in timeline],
            [b["end"] - b["start"] for b in timeline], height=[0.9 / nslots[b["sm"]] for b in timeline],
            left=[b["start"] for b in timeline], align="edge",
            color=[colours(waves[b["block"]] % 10) for b in timeline], linewidth=0)
    cycles, last = kernel["cycles"], max(b["start"] for b in timeline)
    ax.axvline(cycles, color="k", ls="--", lw=1.2, gid="kernel_end")
    ax.axvline(last, color="tab:red", ls=":", lw=1.5, gid="last_dispatch")
    nwaves = max(waves.values()) + 1
    handles = [Patch(color=colours(w % 10), label=f"wave {w + 1}") for w in range(min(nwaves, LEGEND_WAVES))]
    handles += [ax.lines[0], ax.lines[1]]
    ax.lines[0].set_label(f"kernel end: {cycles:,} cycles")
    ax.lines[1].set_label(f"last block dispatched: cycle {last:,}")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_xlim(0, cycles * 1.02)
    ax.set_ylim(0, kernel["sms"])
    ax.set_xlabel("time (cycles)")
    ax.set_ylabel("SM (index)")
    ax.set_title(f"Blocks on SMs: {r.get('workload')} on {r.get('config')}: {len(timeline):,} blocks in {nwaves} "
                 f"wave{'s' if nwaves > 1 else ''} on {kernel['sms_active']} of {kernel['sms']} SMs, "
                 f"{cycles:,} cycles")
    return fig
