"""A self-contained HTML report of one simulated kernel (`gpusim report RESULT.json`): the launch, the
verdict with its evidence, the figures an Nsight Compute user looks for first, the warp states in
cycles per issued instruction, the charts as inline SVG (warp states, units, memory, roofline,
occupancy, block timeline) and, when the result carries it, the per-line source view.

One file, nothing fetched: no network access, no script, the styles inline, so it opens the same from
a laptop's disk, an e-mail attachment or a CI artifact."""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.plot.io import SAMPLED_RUN, as_result, require_kernel, result_config, result_points
from gpusim.plot.memory import memory_figure
from gpusim.plot.occupancy import kernel_resources, occupancy_figure
from gpusim.plot.roofline import roofline_figure
from gpusim.plot.sol import sol_figure
from gpusim.plot.stalls import stalls_figure
from gpusim.plot.timeline import timeline_figure
from gpusim.plot.units import units_figure
from gpusim.stats.files import write_atomic
from gpusim.stats.metrics import throughput_source
from gpusim.stats.peaks import kernel_warnings
from gpusim.workloads.verify import verified_text

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1100px;
       padding: 1.2em 1.5em 3em; color: #1d232b; background: #fff; }
h1 { font-size: 1.55em; margin: 0.2em 0 0.1em; } h2 { font-size: 1.2em; margin: 1.8em 0 0.5em;
  border-bottom: 1px solid #d5dbe3; padding-bottom: 0.2em; }
.sub { color: #5a6573; margin: 0 0 1em; }
.verdict { border-left: 6px solid #c0392b; background: #fbeeec; padding: 0.7em 1em; border-radius: 4px; }
.verdict b { font-size: 1.15em; } .verdict ul { margin: 0.4em 0 0; }
.warn { border-left: 6px solid #b7791f; background: #fdf6e3; padding: 0.5em 1em; margin-top: 0.6em;
        border-radius: 4px; }
.ok { color: #1e7d32; } .bad { color: #b3261e; }
table { border-collapse: collapse; margin: 0.3em 0; font-variant-numeric: tabular-nums; }
td, th { padding: 0.22em 0.8em 0.22em 0; text-align: left; vertical-align: top; }
th { color: #5a6573; font-weight: 600; } td.n { text-align: right; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(330px, 1fr)); gap: 0.4em 2em; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 0 1.5em; }
figure { margin: 1em 0; } figure svg, figure img { max-width: 100%; height: auto; }
figcaption { color: #5a6573; font-size: 0.9em; }
.bar { display: inline-block; height: 0.75em; background: #4e79a7; vertical-align: middle; }
pre.src { font: 12.5px/1.35 ui-monospace, Menlo, Consolas, monospace; overflow-x: auto; }
.note { color: #5a6573; font-size: 0.9em; }
"""


def report_html(result: Any, *, cfg: Config | None = None) -> str:
    """The HTML report of `result` (a SimResult, a sampled run's result, or the dict `gpusim run --json`
    wrote of either) as one string: the figures the terminal prints of it (a sampled run: its estimate
    and verification, and the metrics of what was simulated, said to be of it). `cfg` is the config it
    ran on (default: the result's own, else the one it names with its overrides, checked against its hash)."""
    r = as_result(result)
    kernel = require_kernel(r)
    cfg = result_config(r, cfg or getattr(result, "cfg", None))
    name = r.get("workload") or "kernel"
    params = " ".join(f"{k}={v}" for k, v in (r.get("params") or {}).items())
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>gpusim: {_e(name)} on {_e(r.get('config'))}</title>", f"<style>{STYLE}</style></head><body>",
        f"<h1>{_e(name)} <span class=sub>{_e(params)}</span></h1>",
        f'<p class=sub>{_e(_launch_line(r))}</p>',
        _sampled(r.get("sampled")),
        _verdict(r), _warnings(kernel_warnings(kernel, cfg.derived()["peak_fp32_gflops"])),
        "<h2>Summary</h2>", _metrics_of(r), _summary(r, kernel),
        "<h2>Warp states</h2>", _warp_states(kernel),
        "<h2>Charts</h2>", _charts(r, cfg),
    ]
    source = r.get("source")
    if source:
        parts += ["<h2>Source</h2>", _source(source)]
    parts += ["<h2>Occupancy</h2>", _occupancy(r, kernel),
              f'<p class=note>gpusim {_e(r.get("gpusim_version"))}, config {_e(r.get("config"))} '
              f'(hash {_e(r.get("config_hash"))}), {_e(r.get("scheduler"))} warp scheduler, seed '
              f'{_e(r.get("seed"))}; simulated in {float(r.get("wall_seconds") or 0):.2f} s.</p>',
              "</body></html>"]
    return "\n".join(parts) + "\n"


def write_report(result: Any, path: str | Path, *, cfg: Config | None = None, before: str = "") -> None:
    """Write `report_html(result)` to `path` atomically; `before`, HTML put first in its body (gpusim exec's
    program section)."""
    html = report_html(result, cfg=cfg)
    if before:
        html = html.replace("</head><body>", "</head><body>\n" + before, 1)
    write_atomic(path, html)


# -- sections ------------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _launch_line(r: dict[str, Any]) -> str:
    launch = r.get("launch") or {}
    grid, block = launch.get("grid") or [], launch.get("block") or []
    v = r.get("verified")
    said = {True: "verified against the numpy reference", False: "values DIFFER from the numpy reference"}
    checked = (r.get("verification") or {}).get("message")
    verdict = f"{'verified' if v else 'NOT verified'}: {checked}" if checked and v is not None else \
        said.get(v, verified_text(v))
    return (f"{r.get('config')} · grid ({','.join(map(str, grid))}) x block ({','.join(map(str, block))}) · "
            f"{verdict}")


def _sampled(s: dict[str, Any] | None) -> str:
    """A sampled run's estimate, as the terminal prints it: cycles, the bound, the time, what was simulated."""
    if not s:
        return ""
    sampling = s.get("sampling") or {}
    cycles, conf = s.get("cycles") or 0, s.get("confidence") or 0.0
    runs = sampling.get("runs") or []
    cut = "; ".join(f"{x.get('blocks', 0):,} blocks, " + ("loops whole" if x.get("loop_cap") is None
                                                          else f"loops cut at {x['loop_cap']}") for x in runs)
    sim, est = sampling.get("warp_instructions_simulated") or 0, sampling.get("warp_instructions_estimated") or 0
    items = [
        ("estimate", f"{cycles:,} cycles ± {conf:.1%} ({s.get('cycles_low') or 0:,} – {s.get('cycles_high') or 0:,}) "
                     f"= {(s.get('kernel_seconds') or 0) * 1e6:,.3f} µs"),
        ("sampled", f"{len(runs)} run{'s' if len(runs) != 1 else ''} of the first blocks ({cut}) of "
                    f"{sampling.get('grid_blocks', 0):,} blocks"),
        ("warp instructions", f"{sim:,} simulated of about {est:,} ({sim / max(est, 1):.2%})"),
        ("reason", _e(sampling.get("reason"))),
    ]
    return "<h2>Sampled estimate</h2>" + _rows([(k, _e(v) if k != "reason" else v) for k, v in items])


def _metrics_of(r: dict[str, Any]) -> str:
    """For a sampled run: whether its metrics are the whole kernel's (estimated) or the largest sampled run's."""
    s = r.get("sampled")
    if not s:
        return ""
    if s.get("metrics_of") != SAMPLED_RUN:
        return ("<p class=note>The figures below are the whole kernel's, estimated from the sampled runs (each "
                "metric's bound is in the JSON's <code>bounds</code>).</p>")
    k = r.get("kernel") or {}
    return (f"<p class=note>The figures below are those of {SAMPLED_RUN} ({k.get('blocks', 0):,} blocks, "
            f"{k.get('cycles', 0):,} cycles of its own), not of the whole kernel: the kernel's time is the "
            "estimate above.</p>")


def _verdict(r: dict[str, Any]) -> str:
    v = r.get("verdict") or {}
    if not v:
        return ""
    evidence = "".join(f"<li>{_e(x)}</li>" for x in v.get("evidence") or [])
    return (f'<div class=verdict><b>{_e(v.get("verdict"))}</b>: {_e(v.get("summary"))}'
            + (f"<ul>{evidence}</ul>" if evidence else "") + "</div>")


def _warnings(warnings: list) -> str:
    """The figures above the config's peak, each with why (gpusim.stats.peaks)."""
    if not warnings:
        return ""
    return ("<div class=warn><b>Above the peak</b><ul>" + "".join(f"<li>{_e(w)}</li>" for w in warnings)
            + "</ul></div>")


def _rows(items: list[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in items) + "</table>"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _summary(r: dict[str, Any], k: dict[str, Any]) -> str:
    """The figures Nsight Compute's Speed of Light and its memory and occupancy sections open with."""
    clock = k.get("clock_mhz") or 0
    s = r.get("sampled")
    duration = (f"{k['cycles']:,} cycles = {k['kernel_seconds'] * 1e6:.3f} µs at {clock:g} MHz" if not s else
                f"{s['cycles']:,} cycles ± {s['confidence']:.1%} = {s['kernel_seconds'] * 1e6:,.3f} µs at {clock:g} "
                f"MHz (the sampled estimate)")
    speed = [
        ("duration", duration),
        ("launch overhead", f"{k.get('launch_overhead_cycles', 0):,} cycles (the host's, not the kernel's)"),
        ("compute throughput", _pct(k.get("compute_throughput_pct")) + f" ({throughput_source(k, 'compute')}, "
                               "the busiest of the math pipes and the issue slots)"),
        ("memory throughput", _pct(k.get("memory_throughput_pct")) + f" ({throughput_source(k, 'memory')}, the "
                              "busiest of DRAM bandwidth, DRAM busy and L2 busy)"),
        ("IPC", f"{k.get('ipc', 0):.3f} per active SM cycle"),
        ("issue slots busy", _pct(k.get("issue_slot_utilisation_pct"))),
    ]
    memory = [
        ("DRAM", f"{k.get('dram_bytes_read', 0):,} B read, {k.get('dram_bytes_written', 0):,} B written; "
                 f"{k.get('dram_bandwidth_gbps', 0):.1f} GB/s = {_pct(k.get('dram_bandwidth_pct'))} of "
                 f"{k.get('peak_dram_bandwidth_gbps', 0):g} GB/s"),
        ("L1", f"{_pct(k.get('l1_hit_rate_pct'))} sector hit rate, {k.get('l1_tag_lookups', 0):,} tag lookups"),
        ("L2", f"{_pct(k.get('l2_hit_rate_pct'))} hit rate, {_pct(k.get('l2_busy_pct'))} busy"),
        ("shared memory", f"{k.get('shared_requests', 0):,} requests, {k.get('shared_bank_conflicts', 0):,} "
                          "bank conflicts"),
        ("SIMT efficiency", f"{100 * (k.get('simt_efficiency') or 0):.1f}% "
                            f"({k.get('divergent_branches', 0):,} divergent branches)"),
    ]
    if k.get("achieved_gflops") is not None:
        memory.append(("FP32", f"{k['achieved_gflops']:.1f} GFLOP/s = {_pct(k.get('achieved_gflops_pct'))} of peak"))
    return f'<div class=grid>{_rows(speed)}{_rows(memory)}</div>'


def _warp_states(k: dict[str, Any]) -> str:
    """Each state in warp-cycles per issued instruction (Nsight's "Warp State Statistics"): a kernel
    whose warps wait 96 cycles an instruction and one that waits 14 look different here, where a
    100 %-stacked bar would draw them alike."""
    states = k.get("warp_states") or {}
    issued = k.get("warp_instructions") or 0
    total = sum(states.values()) or 1
    top = max(states.values(), default=0) or 1
    rows = []
    for s, cycles in sorted(states.items(), key=lambda kv: -kv[1]):
        if not cycles:
            continue
        per = cycles / issued if issued else 0.0
        rows.append(f"<tr><th>{_e(s)}</th><td class=n>{per:.2f}</td><td class=n>{100 * cycles / total:.1f}%</td>"
                    f'<td><span class=bar style="width:{240 * cycles / top:.0f}px"></span></td></tr>')
    head = ("<tr><th>state</th><th>cycles per issued instruction</th><th>share</th><th></th></tr>")
    per_instr = k.get("warp_cycles_per_issued_instruction")
    lead = (f"<p>{per_instr:.1f} warp-cycles per issued instruction, {issued:,} warp instructions.</p>"
            if per_instr is not None else "")
    return lead + "<table>" + head + "".join(rows) + "</table>"


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # (the XML declaration and DOCTYPE do not belong inside HTML)
    return re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)  # (matplotlib's RDF credits)


def _png(fig: Figure) -> str:
    """The figure as an inline PNG (a data: URI, nothing fetched): for charts of thousands of marks, whose
    SVG would be megabytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return f'<img alt="" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


RASTER_ABOVE = 1000  # a timeline of more blocks than this is embedded as PNG, not SVG


def _charts(r: dict[str, Any], cfg: Config) -> str:
    point = result_points([r])
    block, regs, smem = kernel_resources(r)
    charts: list[tuple[str, Callable[[], Figure]]] = [
        ("Speed of light: compute and memory against their peaks, and the units behind them",
         lambda: sol_figure(point, [cfg])),
        ("Warp states: warp-cycles per issued instruction", lambda: stalls_figure(point)),
        ("Units: how busy each execution unit class was", lambda: units_figure(point)),
        ("Memory: bytes through L1, L2 and DRAM", lambda: memory_figure(point, [cfg])),
        ("Hierarchical roofline: the kernel at its L1, L2 and DRAM intensities",
         lambda: roofline_figure(cfg, point, intensity="hierarchical")),
        ("Occupancy: warps per SM against block size, registers and shared memory",
         lambda: occupancy_figure(cfg, block, regs, smem, name=r.get("workload"))),
        ("Blocks on SMs over time", lambda: timeline_figure(r)),
    ]
    out = []
    for caption, make in charts:
        try:
            fig = make()
        except GpusimError as exc:  # (a chart the result has no data for: said, not fatal)
            out.append(f"<p class=note>{_e(caption)}: not drawn ({_e(exc)})</p>")
            continue
        big = caption.startswith("Blocks on SMs") and len(r.get("timeline") or []) > RASTER_ABOVE
        out.append(f"<figure>{_png(fig) if big else _svg(fig)}<figcaption>{_e(caption)}</figcaption></figure>")
    return "<div class=charts>" + "\n".join(out) + "</div>"


SOURCE_COLUMNS = (("warp_instructions", "warp instr."), ("samples_pct", "% samples"), ("top_stall", "top stall"),
                  ("global_requests", "global req."), ("global_sectors", "sectors"), ("shared_requests", "shared req."),
                  ("shared_wavefronts", "wavefronts"))


def _source(lines: list[dict[str, Any]]) -> str:
    """The source view (`gpusim run --source` records, docs/stats.md): per line its instructions, share of
    the warp-state samples and top stall, and memory requests, beside the line's text; a new file starts a
    new table."""
    cols = [(k, label) for k, label in SOURCE_COLUMNS if any(x.get(k) for x in lines)]
    head = "".join(f"<th>{_e(label)}</th>" for _, label in cols)
    out, last = [], None
    for x in lines:
        if x.get("file") != last:
            if last is not None:
                out.append("</table>")
            last = x.get("file")
            out.append(f"<p class=note>{_e(Path(str(last)).name)}</p><table class=src><tr><th>line</th>{head}"
                       "<th>source</th></tr>")
        cells = "".join(f"<td class=n>{_fmt(x.get(k))}</td>" for k, _ in cols)
        out.append(f"<tr><td class=n>{_e(x.get('line'))}</td>{cells}<td><code>{_e(x.get('text'))}</code></td></tr>")
    return "".join(out) + "</table>"


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.1f}"
    return f"{v:,}" if isinstance(v, int) else _e(v)


def _occupancy(r: dict[str, Any], k: dict[str, Any]) -> str:
    t = r.get("theoretical_occupancy") or {}
    items = [
        ("theoretical", f"{100 * (t.get('occupancy') or 0):.1f}% ({t.get('active_warps_per_sm', '?')} of "
                        f"{t.get('max_warps_per_sm', '?')} warps per SM), limited by {_e(t.get('limiter'))}"),
        ("achieved", f"{100 * (k.get('achieved_occupancy') or 0):.1f}% "
                     f"({k.get('achieved_warps_per_sm', 0):.1f} warps per SM on average)"),
        ("per block", f"{t.get('block_size', '?')} threads, {t.get('regs_per_thread', '?')} registers per thread, "
                      f"{t.get('smem_per_block', 0):,} B of shared memory"),
        ("blocks per SM", ", ".join(f"{k_}: {v}" for k_, v in (t.get("limits") or {}).items())),
    ]
    return _rows(items)
