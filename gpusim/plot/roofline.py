"""The roofline of one config (FP32 peak, DRAM and L2 bandwidth roofs, ridge points marked) on log-log
axes, with each simulated kernel placed by its arithmetic intensity and achieved GFLOP/s. The
hierarchical roofline (Nsight Compute's) adds the L1 roof and places each kernel three times, by its
flops over the bytes at L1, at L2 and at DRAM: the distances to each roof say which level limits it."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.figure import Figure

from gpusim.analysis import arithmetic_intensity, roofline
from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.plot.common import add_note, new_figure
from gpusim.plot.io import KernelPoint

INTENSITIES = {"dram": "flops / DRAM bytes", "moved": "flops / bytes_moved",
               "hierarchical": "flops / bytes at L1, L2 and DRAM"}
LEVELS = {"L1": "^", "L2": "s", "DRAM": "o"}  # memory level -> its kernel marker


def level_bytes(point: KernelPoint, cfg: Config) -> dict[str, float]:
    """Bytes through each memory level: L1 (its global sectors and the shared-memory wavefronts on the
    same data path), L2 (sectors read and written), DRAM (bytes read and written)."""
    k = point.kernel
    sectors = k.get("global_sectors")
    if sectors is None:  # (a result from before the metric existed)
        sectors = (k.get("l1_hit_sectors") or 0) + (k.get("l1_miss_sectors") or 0) + (k.get("l2_write_sectors") or 0)
    wavefront = cfg.shared_memory.banks * cfg.shared_memory.bank_width_bytes
    return {"L1": sectors * cfg.l1.sector_size_bytes + (k.get("shared_wavefronts") or 0) * wavefront,
            "L2": ((k.get("l2_read_sectors") or 0) + (k.get("l2_write_sectors") or 0)) * cfg.l2.sector_size_bytes,
            "DRAM": (k.get("dram_bytes_read") or 0) + (k.get("dram_bytes_written") or 0)}


def kernel_intensity(point: KernelPoint, intensity: str = "dram") -> float | None:
    """FLOP per byte: flops over the bytes the DRAM read and wrote ("dram"), or over the workload's
    declared `bytes_moved` ("moved"). None where flops or bytes are missing or zero."""
    if intensity not in INTENSITIES or intensity == "hierarchical":
        raise GpusimError(f"unknown intensity {intensity!r} (choose dram or moved)")
    k = point.kernel
    if intensity == "dram":
        nbytes = (k.get("dram_bytes_read") or 0) + (k.get("dram_bytes_written") or 0)
    else:
        nbytes = k.get("bytes_moved")
    return arithmetic_intensity(k.get("flops"), nbytes)


def tensor_peaks_gflops(cfg: Config) -> dict[str, float]:
    """The tensor-core roofs per input precision (GFLOP/s; s8: GOP/s) from `units.tensor`: FMA per cycle
    per sub-partition x sub-partitions x SMs x 2 x clock (a100 f16: 256 x 4 x 108 x 2 x 1.41 GHz = 312
    TFLOP/s, the whitepaper's); none without a tensor unit."""
    t = cfg.units.get("tensor")
    if t is None:
        return {}
    per_cycle = cfg.sm.subpartitions * cfg.chip.sm_count * 2 * cfg.chip.clock_mhz / 1000
    return {p: t.fma_per_cycle(p) * per_cycle for p in ("f16", "bf16", "tf32", "s8")}


def roofline_figure(cfg: Config, points: Sequence[KernelPoint], *, intensity: str = "dram",
                    notes: Sequence[str] = ()) -> Figure:
    """Roofs of `cfg` (lines with gids `fp32_roof`, `dram_roof`, `l2_roof`, `tensor_<precision>_roof` where
    the config has tensor cores (from the DRAM roof to the right edge), and `l1_roof` when
    hierarchical; ridge markers `dram_ridge`, `l2_ridge`) and one marker per kernel (gid `kernel`,
    labelled), or with `intensity="hierarchical"` three per kernel (gids `kernel_L1`, `kernel_L2`,
    `kernel_DRAM`) joined by a thin line. Kernels without flops or bytes are left out and named in a note,
    after `notes`."""
    if intensity not in INTENSITIES:
        raise GpusimError(f"unknown intensity {intensity!r} (choose {', '.join(INTENSITIES)})")
    hierarchical = intensity == "hierarchical"
    roof = roofline(cfg)
    placed, notes = [], list(notes)
    for p in points:
        gflops = p.kernel.get("achieved_gflops")
        if hierarchical:
            ais = {lv: arithmetic_intensity(p.kernel.get("flops"), b) for lv, b in level_bytes(p, cfg).items()}
            ais = {lv: ai for lv, ai in ais.items() if ai is not None}
        else:
            ai = kernel_intensity(p, intensity)
            ais = {"DRAM": ai} if ai is not None else {}
        if not ais or not gflops:
            notes.append(f"not placed: {p.label} (no flops declared, or no bytes)")
        else:
            placed.append((p, ais, gflops))
    xs = [ai for _, ais, _ in placed for ai in ais.values()]
    ridges = [roof.l2_ridge, roof.dram_ridge] + ([roof.l1_ridge] if hierarchical else [])
    lo, hi = min(xs + ridges) / 8, max(xs + ridges) * 8
    peak, dram, l2 = roof.peak_fp32_gflops, roof.dram_bandwidth_gbps, roof.l2_bandwidth_gbps

    fig = new_figure(11.0, 5.8)
    ax = fig.subplots()
    ax.plot([lo, roof.dram_ridge], [dram * lo, peak], color="tab:blue", lw=2, gid="dram_roof",
            label=f"DRAM {dram:,.0f} GB/s")
    ax.plot([lo, roof.l2_ridge], [l2 * lo, peak], color="tab:green", lw=1.5, ls="--", gid="l2_roof",
            label=f"L2 {l2:,.0f} GB/s")
    if hierarchical:
        l1 = roof.l1_bandwidth_gbps
        ax.plot([lo, roof.l1_ridge], [l1 * lo, peak], color="tab:purple", lw=1.5, ls=":", gid="l1_roof",
                label=f"L1 {l1:,.0f} GB/s")
    ax.plot([min(ridges), hi], [peak, peak], color="tab:red", lw=2, gid="fp32_roof",
            label=f"FP32 peak {peak:,.0f} GFLOP/s")
    tensor = tensor_peaks_gflops(cfg)
    for (prec, top), colour in zip(tensor.items(), ("tab:orange", "tab:brown", "tab:olive", "tab:cyan"),
                                   strict=False):
        ax.plot([top / dram, hi], [top, top], color=colour, lw=1.2, ls="-.", gid=f"tensor_{prec}_roof",
                label=f"tensor {prec} peak {top:,.0f} G{'OP' if prec == 's8' else 'FLOP'}/s")
    # the left ridge labelled to its left, the right one to its right, so the two labels never overlap
    marks = sorted([("l2_ridge", roof.l2_ridge, "tab:green"), ("dram_ridge", roof.dram_ridge, "tab:blue")],
                   key=lambda r: r[1])
    for (gid, ridge, colour), side in zip(marks, ("right", "left"), strict=True):
        ax.plot([ridge], [peak], "D", color=colour, gid=gid)
        ax.annotate(f"ridge {ridge:.3g} FLOP/B", (ridge, peak), xytext=(4 if side == "left" else -4, -14),
                    textcoords="offset points", ha=side, fontsize=8, color=colour)
    for p, ais, gflops in placed:
        if not hierarchical:
            ax.plot([ais["DRAM"]], [gflops], "o", markersize=7, gid="kernel", label=p.label)
            ax.annotate(p.label, (ais["DRAM"], gflops), xytext=(6, 4), textcoords="offset points", fontsize=8)
            continue
        levels = [lv for lv in LEVELS if lv in ais]
        (line,) = ax.plot([ais[lv] for lv in levels], [gflops] * len(levels), "-", lw=0.8, alpha=0.6,
                          label=p.label)
        for lv in levels:
            ax.plot([ais[lv]], [gflops], LEVELS[lv], markersize=7, color=line.get_color(), gid=f"kernel_{lv}")
        right, left = max(ais.values()), min(ais.values())
        if math.log(right / lo) > 0.7 * math.log(hi / lo):  # (near the right edge: the label goes left)
            ax.annotate(p.label, (left, gflops), xytext=(-6, 4), textcoords="offset points", fontsize=8, ha="right")
        else:
            ax.annotate(p.label, (right, gflops), xytext=(6, 4), textcoords="offset points", fontsize=8)
    if hierarchical:  # which marker is which level
        for lv, marker in LEVELS.items():
            ax.plot([], [], marker, color="0.4", label=f"{lv} intensity")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ys = [gflops for _, _, gflops in placed] + [dram * lo]
    ax.set_ylim(min(ys) / 3, max([peak, *tensor.values()]) * 3)
    ax.set_xlabel(f"arithmetic intensity (FLOP/byte: {INTENSITIES[intensity]})")
    ax.set_ylabel("performance (GFLOP/s)")
    ax.grid(which="both", alpha=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)  # (outside: no label under it)
    kind = "Hierarchical roofline" if hierarchical else "Roofline"
    ax.set_title(f"{kind} of {cfg.name}: FP32 {peak:,.0f} GFLOP/s, DRAM {dram:,.0f} GB/s, L2 {l2:,.0f} GB/s")
    add_note(fig, notes)
    return fig
