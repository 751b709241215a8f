"""Simulated against reference figures (`gpusim validate --chart`), in the style of Accel-Sim's correlation
plots: log-log axes, the y = x line with a band of the tolerance either side, one marker style per kind
of figure (latency, throughput, bandwidth, ...), each point labelled with its figure."""

from __future__ import annotations

from matplotlib.figure import Figure

from gpusim.plot.common import new_figure

MARKERS = "osD^vP*Xh<>p"


def correlation_figure(validations: list, tolerance_pct: float = 15.0) -> Figure:
    """One axes per config validated (`gpusim.analysis.validate.Validation`); points gid `<config>:<figure>`,
    the y = x line gid `y=x`."""
    fig = new_figure(6.5 * len(validations), 6.2)
    axes = fig.subplots(1, len(validations), squeeze=False)[0]
    for ax, v in zip(axes, validations, strict=True):
        rows = [r for r in v.rows if r.simulated > 0 and r.reference > 0]
        kinds = sorted({r.kind for r in rows})
        lo = min([min(r.simulated, r.reference) for r in rows] or [1.0]) / 2
        hi = max([max(r.simulated, r.reference) for r in rows] or [10.0]) * 2
        ax.plot([lo, hi], [lo, hi], color="black", lw=1, gid="y=x", label="y = x")
        band = tolerance_pct / 100
        ax.fill_between([lo, hi], [lo * (1 - band), hi * (1 - band)], [lo * (1 + band), hi * (1 + band)],
                        color="0.85", label=f"±{tolerance_pct:g} %")
        for i, kind in enumerate(kinds):
            pts = [r for r in rows if r.kind == kind]
            ax.scatter([r.reference for r in pts], [r.simulated for r in pts], marker=MARKERS[i % len(MARKERS)],
                       label=kind, zorder=3, edgecolors=["red" if r.status == "FAIL" else "none" for r in pts])
            for r in pts:
                ax.annotate(r.figure, (r.reference, r.simulated), fontsize=6, xytext=(3, 2),
                            textcoords="offset points", gid=f"{v.config}:{r.figure}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_xlabel("reference (published or measured)")
        ax.set_ylabel("simulated (gpusim)")
        within = sum(r.within for r in v.rows)
        ax.set_title(f"{v.config}: {within} of {len(v.rows)} figures within ±{tolerance_pct:g} %")
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=7, loc="upper left")
    return fig


def kernel_correlation_figure(kv, band_pct: float = 30.0) -> Figure:
    """Whole kernels, measured (x) against simulated (y) time in us (`gpusim validate --kernels --chart`;
    a `gpusim.analysis.kernel_validation.KernelValidation`): one axes per front end, log-log, the y = x line
    (gid `y=x`) and a band of +-`band_pct` %, one marker per kernel, sizes joined; sampled points carry their
    bound as an error bar; each point's annotation gid is `<front end>:<workload>:<size>`. The title gives the
    front end's MAPE and Pearson r of log times."""
    front_ends = kv.front_ends() or ["sasm"]
    summaries = kv.summaries()
    fig = new_figure(6.2 * len(front_ends), 6.0)
    axes = fig.subplots(1, len(front_ends), squeeze=False)[0]
    rows_all = [r for r in kv.rows if r.measured_us > 0 and r.simulated_us > 0]
    lo = min([min(r.measured_us, r.simulated_us) for r in rows_all] or [1.0]) / 1.6
    hi = max([max(r.measured_us, r.simulated_us) for r in rows_all] or [10.0]) * 1.6
    kernels = sorted({r.kernel for r in rows_all})
    for ax, fe in zip(axes, front_ends, strict=True):
        ax.plot([lo, hi], [lo, hi], color="black", lw=1, gid="y=x", label="y = x")
        b = band_pct / 100
        ax.fill_between([lo, hi], [lo * (1 - b), hi * (1 - b)], [lo * (1 + b), hi * (1 + b)], color="0.9",
                        label=f"±{band_pct:g} %")
        for i, k in enumerate(kernels):
            pts = sorted((r for r in rows_all if r.front_end == fe and r.kernel == k), key=lambda r: r.measured_us)
            if not pts:
                continue
            yerr = [r.simulated_us * r.bound_pct / 100 if r.mode == "sampled" else 0.0 for r in pts]
            ax.errorbar([r.measured_us for r in pts], [r.simulated_us for r in pts], yerr=yerr,
                        marker=MARKERS[i % len(MARKERS)], ms=6, lw=0.8, capsize=2, label=k, zorder=3)
            for r in pts:
                ax.annotate(f"{r.error_pct:+.0f}%", (r.measured_us, r.simulated_us), fontsize=6, xytext=(4, -8),
                            textcoords="offset points", gid=f"{fe}:{r.workload}:{r.size}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_xlabel(f"measured on the {kv.config.upper()} (us, launch included)")
        ax.set_ylabel("simulated by gpusim (us, launch included)")
        s = summaries.get(fe, {})
        if s.get("pairs"):
            ax.set_title(f"{kv.config} {fe}: {s['pairs']} pairs, MAPE {s['mape_pct']:.1f} %, "
                         f"r = {s['pearson_log']:.3f}", fontsize=9)
        ax.grid(True, which="both", lw=0.3)
        ax.legend(fontsize=6, loc="upper left")
    return fig
