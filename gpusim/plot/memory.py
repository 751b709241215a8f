"""Memory-hierarchy traffic: bytes through L1 (global accesses), L2 and DRAM, and the L1 and L2 hit
rates, one bar per kernel or sweep point in each group.

L1 bytes = (hit + miss sectors) x `l1.sector_size_bytes`; L2 bytes = (read + written sectors) x
`l2.sector_size_bytes`; DRAM bytes = read + written, as the memory controllers count them."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.plot.common import add_note, configs_of, grouped_bars, new_figure
from gpusim.plot.io import KernelPoint

LEVELS = ("L1", "L2", "DRAM")
CACHES = ("L1", "L2")


def traffic_bytes(point: KernelPoint, cfg: Config) -> tuple[int, int, int]:
    """(L1, L2, DRAM) bytes of one kernel on `cfg` (the config it ran on, for the sector sizes)."""
    m = point.metric
    l1 = (m("l1_hit_sectors") + m("l1_miss_sectors")) * cfg.l1.sector_size_bytes
    l2 = (m("l2_read_sectors") + m("l2_write_sectors")) * cfg.l2.sector_size_bytes
    return l1, l2, m("dram_bytes_read") + m("dram_bytes_written")


def memory_figure(points: Sequence[KernelPoint], configs: Sequence[Config], *,
                  notes: Sequence[str] = ()) -> Figure:
    """Two panels: traffic per level (bytes) and hit rate per cache (%). `configs[i]` is the config
    `points[i]` ran on. `notes` go under the chart."""
    if len(configs) != len(points):
        raise GpusimError(f"memory chart: {len(points)} kernels but {len(configs)} configs")
    fig = new_figure(max(9.0, 5 + 0.7 * len(points)), 4.6)
    traffic, rates = fig.subplots(1, 2, width_ratios=[3, 2])
    grouped_bars(traffic, LEVELS, [(p.label, traffic_bytes(p, c)) for p, c in zip(points, configs, strict=True)])
    traffic.yaxis.set_major_formatter(EngFormatter(unit="B"))
    traffic.set_xlabel("memory level")
    traffic.set_ylabel("traffic (bytes)")
    traffic.set_title("traffic per level")
    grouped_bars(rates, CACHES, [(p.label, [p.metric("l1_hit_rate_pct"), p.metric("l2_hit_rate_pct")])
                                 for p in points], value_format="{:.0f}%")
    rates.set_xlabel("cache")
    rates.set_ylabel("sector hit rate (%)")
    rates.set_ylim(0, 105)
    rates.set_title("hit rates (L2: reads)")
    for ax in (traffic, rates):
        ax.grid(axis="y", alpha=0.3)
    rates.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="kernel")
    fig.suptitle(f"Memory hierarchy on {configs_of([c.name for c in configs])}")
    add_note(fig, notes)
    return fig
