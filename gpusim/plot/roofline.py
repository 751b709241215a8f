"""The roofline of one config (FP32 peak, DRAM and L2 bandwidth roofs, ridge points marked) on log-log
axes, with each simulated kernel placed by its arithmetic intensity and achieved GFLOP/s."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure

from gpusim.analysis import arithmetic_intensity, roofline
from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.plot.common import add_note, new_figure
from gpusim.plot.io import KernelPoint

INTENSITIES = {"dram": "flops / DRAM bytes", "moved": "flops / bytes_moved"}


def kernel_intensity(point: KernelPoint, intensity: str = "dram") -> float | None:
    """FLOP per byte: flops over the bytes the DRAM read and wrote ("dram"), or over the workload's
    declared `bytes_moved` ("moved"). None where flops or bytes are missing or zero."""
    if intensity not in INTENSITIES:
        raise GpusimError(f"unknown intensity {intensity!r} (choose {' or '.join(INTENSITIES)})")
    k = point.kernel
    if intensity == "dram":
        nbytes = (k.get("dram_bytes_read") or 0) + (k.get("dram_bytes_written") or 0)
    else:
        nbytes = k.get("bytes_moved")
    return arithmetic_intensity(k.get("flops"), nbytes)


def roofline_figure(cfg: Config, points: Sequence[KernelPoint], *, intensity: str = "dram",
                    notes: Sequence[str] = ()) -> Figure:
    """Roofs of `cfg` (lines with gids `fp32_roof`, `dram_roof`, `l2_roof`; ridge markers `dram_ridge`,
    `l2_ridge`) and one marker per kernel (gid `kernel`, labelled). Kernels without flops or bytes are
    left out and named in a note, after `notes`."""
    roof = roofline(cfg)
    placed, notes = [], list(notes)
    for p in points:
        ai = kernel_intensity(p, intensity)
        gflops = p.kernel.get("achieved_gflops")
        if ai is None or not gflops:
            notes.append(f"not placed: {p.label} (no flops declared, or no bytes)")
        else:
            placed.append((p, ai, gflops))
    ais = [ai for _, ai, _ in placed]
    lo = min(ais + [roof.l2_ridge, roof.dram_ridge]) / 8
    hi = max(ais + [roof.l2_ridge, roof.dram_ridge]) * 8
    peak, dram, l2 = roof.peak_fp32_gflops, roof.dram_bandwidth_gbps, roof.l2_bandwidth_gbps

    fig = new_figure(8.5, 5.8)
    ax = fig.subplots()
    ax.plot([lo, roof.dram_ridge], [dram * lo, peak], color="tab:blue", lw=2, gid="dram_roof",
            label=f"DRAM {dram:,.0f} GB/s")
    ax.plot([lo, roof.l2_ridge], [l2 * lo, peak], color="tab:green", lw=1.5, ls="--", gid="l2_roof",
            label=f"L2 {l2:,.0f} GB/s")
    ax.plot([min(roof.l2_ridge, roof.dram_ridge), hi], [peak, peak], color="tab:red", lw=2, gid="fp32_roof",
            label=f"FP32 peak {peak:,.0f} GFLOP/s")
    # the left ridge labelled to its left, the right one to its right, so the two labels never overlap
    ridges = sorted([("l2_ridge", roof.l2_ridge, "tab:green"), ("dram_ridge", roof.dram_ridge, "tab:blue")],
                    key=lambda r: r[1])
    for (gid, ridge, colour), side in zip(ridges, ("right", "left"), strict=True):
        ax.plot([ridge], [peak], "D", color=colour, gid=gid)
        ax.annotate(f"ridge {ridge:.3g} FLOP/B", (ridge, peak), xytext=(4 if side == "left" else -4, -14),
                    textcoords="offset points", ha=side, fontsize=8, color=colour)
    for p, ai, gflops in placed:
        ax.plot([ai], [gflops], "o", markersize=7, gid="kernel", label=p.label)
        ax.annotate(p.label, (ai, gflops), xytext=(6, 4), textcoords="offset points", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ys = [gflops for _, _, gflops in placed] + [dram * lo]
    ax.set_ylim(min(ys) / 3, peak * 3)
    ax.set_xlabel(f"arithmetic intensity (FLOP/byte: {INTENSITIES[intensity]})")
    ax.set_ylabel("performance (GFLOP/s)")
    ax.grid(which="both", alpha=0.25)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"Roofline of {cfg.name}: FP32 {peak:,.0f} GFLOP/s, DRAM {dram:,.0f} GB/s, L2 {l2:,.0f} GB/s")
    add_note(fig, notes)
    return fig
