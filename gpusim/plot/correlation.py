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
