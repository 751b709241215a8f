"""Speed of light (Nsight Compute's "GPU Speed Of Light Throughput"): for each kernel, how close its
compute side and its memory side came to their peaks, then the units behind each: the issue slots and the
busiest pipes, the L1/shared data path, L2 and DRAM. The 60% line is Nsight's: below it on both sides,
the kernel is latency-bound."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from gpusim.config import Config
from gpusim.plot.common import add_note, configs_of, grouped_bars, new_figure
from gpusim.plot.io import KernelPoint
from gpusim.plot.roofline import level_bytes
from gpusim.stats.bottleneck import THROUGHPUT_PCT

PIPES = ("fp32", "int", "fp64", "sfu", "ldst", "tensor")


def sol_values(point: KernelPoint, cfg: Config) -> dict[str, float]:
    """The bars of one kernel, % of peak: compute and memory throughput, then the issue slots, each pipe
    that was busy, the L1/shared data path (bytes over banks x width per SM per cycle), L2 busy, DRAM
    bandwidth and DRAM busy."""
    k = point.kernel
    util = k.get("unit_utilisation_pct") or {}
    path = cfg.shared_memory.banks * cfg.shared_memory.bank_width_bytes * k["sms"] * k["cycles"]
    out = {"compute (SM)": k["compute_throughput_pct"], "memory": k["memory_throughput_pct"],
           "issue slots": k["issue_slot_utilisation_pct"]}
    out.update({p: util.get(p) or 0.0 for p in PIPES if util.get(p)})
    out.update({"L1/shared": 100.0 * level_bytes(point, cfg)["L1"] / path if path else 0.0,
                "L2": k["l2_busy_pct"], "DRAM bandwidth": k["dram_bandwidth_pct"], "DRAM busy": k["dram_busy_pct"]})
    return out


def sol_figure(points: Sequence[KernelPoint], configs: Sequence[Config], *, notes: Sequence[str] = ()) -> Figure:
    """Grouped bars, one group per throughput (the two summaries first), one bar per kernel, each value
    written above its bar; the 60% line marked (gid `sol_threshold`)."""
    values = [sol_values(p, c) for p, c in zip(points, configs, strict=True)]
    categories = list(dict.fromkeys(c for v in values for c in v))
    series = [(p.label, [v.get(c, 0.0) for c in categories]) for p, v in zip(points, values, strict=True)]
    fig = new_figure(min(15.0, max(10.0, 4.0 + 0.75 * len(categories) * max(1.0, 0.6 * len(points)))), 5)
    ax = fig.subplots()
    grouped_bars(ax, [c.replace(" ", "\n") for c in categories], series, value_format="{:.0f}")
    ax.tick_params(axis="x", labelsize=8)
    ax.axhline(THROUGHPUT_PCT, color="0.3", ls="--", lw=1, gid="sol_threshold")
    ax.text(len(categories) - 0.5, THROUGHPUT_PCT + 1, f"{THROUGHPUT_PCT:.0f}%: below it on both sides, "
            "latency-bound", ha="right", va="bottom", fontsize=7, color="0.3")
    ax.axvline(1.5, color="0.8", lw=1)  # the two summaries | the units behind them
    ax.set_ylim(0, 110)
    ax.set_ylabel("% of peak")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="kernel")
    ax.set_title(f"Speed of light on {configs_of([c.name for c in configs])}")
    add_note(fig, notes)
    return fig
