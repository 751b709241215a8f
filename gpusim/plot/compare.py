"""Designs compared over problem sizes (`gpusim compare`): the crossover chart, time against size on log-log
axes with one line per design (and, where copies are counted, a dashed line of its time without them),
extrapolated points hollow and crossovers marked, beside a bar chart of each design's latency for one
element; the explanation (bus, bandwidth, latency, divergence) under both. `step_figure` draws a
multi-GPU step's time against its gradient bytes, per node."""

from __future__ import annotations

import math
import textwrap

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from gpusim.analysis.compare import Comparison, StepComparison, explain
from gpusim.plot.common import add_note, new_figure

US = 1e6


def compare_figure(comparison: Comparison) -> Figure:
    """Two axes: the crossover chart (lines gid `time:<config>`, extrapolated points gid
    `extrapolated:<config>`, crossovers gid `crossover`) and the one-element latency bars (in us)."""
    fig = new_figure(13, 5.2)
    times, bars = fig.subplots(1, 2, width_ratios=(2.2, 1))
    _crossover_axes(times, comparison)
    _latency_axes(bars, comparison)
    transfers = "with" if comparison.include_transfers else "without"
    fig.suptitle(f"{comparison.workload} on {', '.join(comparison.configs)}, {transfers} host-device copies")
    notes = [f"hollow markers: extrapolated linearly in waves past {comparison.max_simulated:,} simulated "
             "elements"] if any(p.extrapolated for p in comparison.points) else []
    add_note(fig, notes + textwrap.wrap(explain(comparison), 190))
    return fig


def step_figure(step: StepComparison) -> Figure:
    """A data-parallel step's time (lines gid `step:<config>`) and its communication (dashed, gid
    `communication:<config>`) against the gradient bytes, per node."""
    fig = new_figure(9, 5.6)
    ax = fig.subplots()
    for config in step.configs:
        series = step.series(config)
        line, = ax.plot([p.size for p in series], [p.seconds for p in series], marker="o", label=config,
                        gid=f"step:{config}")
        ax.plot([p.size for p in series], [p.copy_seconds for p in series], ls="--", color=line.get_color(),
                label=f"{config}: all-reduce", gid=f"communication:{config}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient bytes")
    ax.set_ylabel("time (s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.suptitle(f"a data-parallel step on {step.gpus} GPUs: NVLink vs PCIe")
    add_note(fig, textwrap.wrap(step.explain(), 150))
    return fig


def _crossover_axes(ax: Axes, c: Comparison) -> None:
    for config in c.configs:
        series = c.series(config)
        line, = ax.plot([p.size for p in series], [p.seconds for p in series], marker="o", label=config,
                        gid=f"time:{config}")
        if c.include_transfers and any(p.kernel_only_seconds != p.seconds for p in series):
            ax.plot([p.size for p in series], [p.kernel_only_seconds for p in series], ls="--",
                    color=line.get_color(), label=f"{config} without copies", gid=f"without_copies:{config}")
        far = [p for p in series if p.extrapolated]
        if far:
            ax.plot([p.size for p in far], [p.seconds for p in far], ls="none", marker="o", markersize=8,
                    markerfacecolor="white", color=line.get_color(), gid=f"extrapolated:{config}")
    seconds = {(p.config, p.size): p.seconds for p in c.points}
    for i, x in enumerate(c.crossovers):
        y = _time_at(c, seconds, x.faster_below, x.size)
        ax.plot([x.size], [y], marker="X", markersize=11, color="k", ls="none", gid="crossover")
        ax.annotate(f"{x.faster_below} | {x.faster_above}: {c.size_name} = {x.size:,.0f}", (x.size, y),
                    textcoords="offset points",
                    xytext=(14, -28 - 16 * i), fontsize=8, arrowprops={"arrowstyle": "-", "color": "0.4"})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("problem size n (elements)" if c.size_name == "n" else c.size_name)
    ax.set_ylabel("time (s)")
    ax.set_title("time vs problem size (X: crossover)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(title="design", fontsize=8)


def _time_at(c: Comparison, seconds: dict, config: str, size: float) -> float:
    """The design's time at `size`, on the log-log line between the sizes around it."""
    below = max(s for s in c.sizes if s <= size)
    above = min(s for s in c.sizes if s >= size)
    if below == above:
        return seconds[(config, below)]
    t = (math.log(size) - math.log(below)) / (math.log(above) - math.log(below))
    return math.exp(math.log(seconds[(config, below)]) * (1 - t) + math.log(seconds[(config, above)]) * t)


def _latency_axes(ax: Axes, c: Comparison) -> None:
    values = [p.seconds * US for p in c.latency]
    bars = ax.bar(range(len(values)), values, color=[f"C{i}" for i in range(len(values))], gid="latency")
    ax.bar_label(bars, [f"{v:.2f}" for v in values], fontsize=8, padding=2)
    ax.set_xticks(range(len(values)), [p.config for p in c.latency])
    ax.set_ylabel("time (us)")
    ax.set_title("latency of one element (n = 1)")
    ax.set_ylim(0, max(values) * 1.15)
