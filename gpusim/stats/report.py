"""`SimResult`: one simulated kernel's metrics (per kernel, per SM, per block), its bottleneck verdict and
its provenance, with three views: `to_dict()` (JSON), `rows()` / `to_csv()` (tidy CSV) and
`summary_table()` (the terminal).

CSV layout (long format, one observation per row; columns CSV_COLUMNS):

    workload, config, scope, sm, block, metric, value, unit

- scope "run":    seed, verified (1/0), wall_seconds: about the simulation itself;
- scope "param":  one row per workload size parameter (metric = its name);
- scope "kernel": one row per kernel metric (`kernel_metrics`; nested ones as `unit_utilisation_pct.fp32`,
                  `warp_states.long_scoreboard`, `warp_states_pct.long_scoreboard`);
- scope "sm":     one row per SM and metric (`sm_metrics`), `sm` set;
- scope "block":  start, end and cycles of each block, `sm` and `block` set.

`sm` and `block` are empty where they do not apply, and so is `value` for a metric that does not exist
for this run (a hit rate with no accesses, GFLOP/s without declared flops). With pandas:
`df = pd.read_csv(f); df[df.scope == "kernel"].set_index("metric").value`.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from typing import Any

from gpusim.config.loader import config_overrides
from gpusim.stats.bottleneck import Verdict, diagnose
from gpusim.stats.metrics import KERNEL_METRICS, SM_METRICS, flatten, kernel_metrics, sm_metrics, timeline_rows, unit_of
from gpusim.stats.peaks import PeakWarning, kernel_warnings
from gpusim.stats.power import KernelPower, kernel_power
from gpusim.stats.source import line_records, pc_records
from gpusim.timing.counters import KernelTiming
from gpusim.version import __version__
from gpusim.workloads.verify import verified_text

CSV_COLUMNS = ("workload", "config", "scope", "sm", "block", "metric", "value", "unit")
LABEL = 19  # width of the summary table's label column


def _metric(name: str, kind: type) -> property:
    """A SimResult field reading `kernel[name]` as `kind`."""
    return property(lambda self: kind(self.kernel[name]), doc=f"kernel[{name!r}] as {kind.__name__}")


@dataclass
class SimResult:
    """What `gpusim.simulate` returns. `cfg`, `run` (the WorkloadRun: outputs, verification, functional
    stats) and `timing` (the raw KernelTiming) are kept; `kernel`, `sms` and `timeline` are the metrics,
    `verdict` the bottleneck, `provenance` what produced it (gpusim version, config name and hash,
    workload, params, launch, seed, scheduler)."""

    cfg: Any
    run: Any
    timing: KernelTiming
    wall_seconds: float
    kernel: dict[str, Any]
    sms: list[dict[str, Any]]
    timeline: list[dict[str, int]]
    verdict: Verdict
    provenance: dict[str, Any]
    source: list[dict[str, Any]] | None = None  # per source line (simulate(per_pc=True)), else None
    pcs: list[dict[str, Any]] | None = None  # per instruction, likewise
    # A sampled run's whole-kernel estimate (gpusim.analysis.sampling, docs/sampling.md): `kernel`,
    # `sms` and `verdict` are then estimated from the sampled runs, `bounds` holds each numeric kernel
    # metric's interval (flattened names, as `rows()` spells them: `warp_states_pct.long_scoreboard`)
    # and `sampling` what was simulated and why. None for a full simulation.
    bounds: dict[str, tuple[float, float]] | None = None
    sampling: dict[str, Any] | None = None
    power: KernelPower | None = None  # energy and power (gpusim.stats.power), where the config has a power model

    @property
    def estimated(self) -> bool:
        """Whether the metrics are a sampled run's whole-kernel estimate (see `bounds`)."""
        return self.bounds is not None

    @classmethod
    def build(cls, cfg, run, timing: KernelTiming, *, wall_seconds: float = 0.0) -> SimResult:
        """Compute the metrics and the verdict. `cfg` (a Config) and `run` (a WorkloadRun) may be None
        for a bare KernelTiming: the metrics that need them (peak GFLOP/s, the functional counters,
        flops, bytes moved) are then None."""
        stats = getattr(getattr(run, "result", None), "stats", None)
        issue_width = cfg.scheduler.issue_width if cfg is not None else 1
        peak = cfg.derived()["peak_fp32_gflops"] if cfg is not None else None
        kernel = kernel_metrics(timing, stats=stats, flops=getattr(run, "flops", None),
                                bytes_moved=getattr(run, "bytes_moved", None), issue_width=issue_width,
                                peak_fp32_gflops=peak)
        power = kernel_power(cfg, timing, stats)
        if power is not None:
            kernel.update(power.metrics())
            flops = kernel.get("flops")
            kernel["gflops_per_watt"] = flops / power.energy_j / 1e9 if flops and power.energy_j else None
        launch = getattr(run, "launch", None)
        provenance = {
            "gpusim_version": __version__,
            "config": cfg.name if cfg is not None else None,
            "config_hash": cfg.hash() if cfg is not None else None,
            "config_file": os.path.abspath(cfg.source) if cfg is not None and cfg.source else None,
            "config_overrides": config_overrides(cfg) if cfg is not None else {},
            "workload": getattr(run, "workload", None),
            "params": dict(getattr(run, "params", {}) or {}),
            "launch": {"grid": list(launch.grid), "block": list(launch.block)} if launch is not None else None,
            "seed": getattr(run, "seed", None),
            "scheduler": cfg.scheduler.policy if cfg is not None else None,
        }
        pcs = source = None
        if getattr(stats, "per_pc", None) is not None and timing.pc_states is not None:
            pcs = pc_records(run.result.program, stats.per_pc, timing.pc_states, cfg)
            source = line_records(pcs)
        return cls(cfg, run, timing, wall_seconds, kernel, sm_metrics(timing, issue_width=issue_width),
                   timeline_rows(timing), diagnose(kernel), provenance, source, pcs, power=power)

    def __repr__(self) -> str:
        p = self.provenance
        return (f"SimResult(workload={p['workload']!r}, config={p['config']!r}, params={p['params']!r}, "
                f"cycles={self.cycles}, verified={self.verified}, verdict={self.verdict.kind!r})")

    # -- the headline numbers --
    @property
    def cycles(self) -> int:
        return self.kernel["cycles"]

    @property
    def kernel_seconds(self) -> float:
        return self.kernel["kernel_seconds"]

    @property
    def total_seconds(self) -> float:
        return self.kernel["total_seconds"]

    @property
    def verified(self) -> bool | None:
        """The run's `verified` (gpusim.workloads.verify): True, False, or None where nothing checked it."""
        return getattr(self.run, "verified", None)

    @property
    def warnings(self) -> list[PeakWarning]:
        """The figures above the config's peak, each with why (gpusim.stats.peaks)."""
        peak = self.cfg.derived()["peak_fp32_gflops"] if self.cfg is not None else None
        return kernel_warnings(self.kernel, peak)

    # the main metrics as typed fields (`kernel` has them all, by the names of docs/stats.md)
    warp_instructions = _metric("warp_instructions", int)
    ipc = _metric("ipc", float)
    achieved_occupancy = _metric("achieved_occupancy", float)
    dram_bandwidth_gbps = _metric("dram_bandwidth_gbps", float)
    memory_throughput_pct = _metric("memory_throughput_pct", float)
    compute_throughput_pct = _metric("compute_throughput_pct", float)

    def to_frame(self):
        """The tidy rows (`rows()`: one per metric, with its scope, SM, block and unit in columns) as a
        pandas DataFrame; pandas is not a dependency of gpusim, so it must be installed."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("SimResult.to_frame() needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows(), columns=list(CSV_COLUMNS))

    # -- views --
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: provenance at the top level (as `gpusim run --functional` writes it), `verified`,
        `stats` (the functional executor's counters), `theoretical_occupancy`, `kernel` (the metrics),
        `verdict`, `warnings` (figures above the config's peak and why: gpusim.stats.peaks), `sms` (one
        dict per SM), `timeline` (one dict per block) and, from a per_pc run,
        `source` and `pcs` (the source view's records, per line and per instruction)."""
        d: dict[str, Any] = {"mode": "timing"}
        d.update(self.run.summary() if self.run is not None else {})
        d.update(self.provenance)
        d.update({
            "wall_seconds": self.wall_seconds,
            "exec_seconds": getattr(self.run, "exec_seconds", None),
            "theoretical_occupancy": self.timing.theoretical_occupancy,
            "kernel": self.kernel,
            "verdict": self.verdict.to_dict(),
            "warnings": [w.to_dict() for w in self.warnings],
            "sms": self.sms,
            "timeline": self.timeline,
        })
        if self.source is not None:
            d["source"], d["pcs"] = self.source, self.pcs
        if self.bounds is not None:
            d["mode"] = "sampled"
            d["bounds"] = {k: list(v) for k, v in self.bounds.items()}
        if self.sampling is not None:
            d["sampling"] = self.sampling
        return d

    def rows(self) -> list[dict[str, Any]]:
        """Tidy long-format rows (dicts with the keys CSV_COLUMNS); see the module docstring."""
        base = {"workload": self.provenance["workload"], "config": self.provenance["config"]}

        def row(scope, metric, value, unit, sm=None, block=None):
            return {**base, "scope": scope, "sm": sm, "block": block, "metric": metric, "value": value,
                    "unit": unit}

        out = [row("run", "seed", self.provenance["seed"], ""),
               row("run", "verified", None if self.verified is None else int(self.verified), "bool"),
               row("run", "wall_seconds", self.wall_seconds, "s")]
        out += [row("param", k, v, "") for k, v in self.provenance["params"].items()]
        out += [row("kernel", k, v, unit_of(k)) for k, v in flatten(self.kernel)]
        for r in self.sms:
            out += [row("sm", k, v, unit_of(k, SM_METRICS), sm=r["sm"]) for k, v in r.items() if k != "sm"]
        for b in self.timeline:
            out += [row("block", k, b[k], "cycles", sm=b["sm"], block=b["block"]) for k in ("start", "end", "cycles")]
        return out

    def to_csv_rows(self) -> list[list[Any]]:
        """The header (CSV_COLUMNS) then one list per row, None as an empty cell: ready for csv.writer."""
        return [list(CSV_COLUMNS)] + [["" if r[c] is None else r[c] for c in CSV_COLUMNS] for r in self.rows()]

    def to_csv(self) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(self.to_csv_rows())
        return buf.getvalue()

    def summary_table(self) -> str:
        """A fixed-width table for the terminal: the run, the kernel's metrics, the warp states and the
        verdict."""
        k, p = self.kernel, self.provenance
        st = getattr(getattr(self.run, "result", None), "stats", None)
        rows: list[tuple[str, str]] = []
        add = rows.append
        if p["workload"] is not None:
            add(("workload", str(p["workload"])))
            add(("config", f"{p['config']} (hash {p['config_hash']}), {p['scheduler']} scheduler"))
            add(("params", ", ".join(f"{a}={b}" for a, b in p["params"].items()) or "-"))
            g, b = p["launch"]["grid"], p["launch"]["block"]
            add(("launch", f"grid ({g[0]},{g[1]},{g[2]}) x block ({b[0]},{b[1]},{b[2]}), {k['blocks']:,} blocks, "
                           f"{k['warps']:,} warps on {k['sms_active']} of {k['sms']} SMs"))
            add(("verified", verified_text(self.verified)))
        us = 1e6
        add(("cycles", f"{k['cycles']:,} = {k['kernel_seconds'] * us:.3f} us at {k['clock_mhz']:g} MHz "
                       f"(+ launch overhead {k['launch_overhead_cycles']:,} cycles: {k['total_seconds'] * us:.3f} us)"))
        add(("warp instructions", f"{k['warp_instructions']:,}"))
        if k["thread_instructions"] is not None:
            add(("thread instructions", f"{k['thread_instructions']:,}"))
        add(("IPC", f"{k['ipc']:.3f} per active SM cycle (mean over SMs {k['ipc_sm_mean']:.3f}; "
                    f"{k['ipc_elapsed']:.3f} per elapsed cycle over all SMs)"))
        add(("per scheduler", f"{k['issued_per_scheduler']:.3f} issued, {k['eligible_per_scheduler']:.3f} eligible, "
                              f"{k['active_warps_per_scheduler']:.2f} active warps per cycle"))
        theo = k["theoretical_occupancy"]
        theo = f"{theo:.1%} theoretical ({k['theoretical_warps_per_sm']} warps/SM); " if theo is not None else ""
        add(("occupancy", f"{theo}{k['achieved_occupancy']:.1%} achieved ({k['achieved_warps_per_sm']:.1f} warps/SM)"))
        if k["simt_efficiency"] is not None:
            add(("SIMT efficiency", f"{k['simt_efficiency']:.1%} ({k['divergent_branches']:,} divergent branches)"))
        busy = sorted(((u, v) for u, v in k["unit_utilisation_pct"].items() if v >= 0.05), key=lambda x: -x[1])
        add(("units busy", ", ".join(f"{u} {v:.1f}%" for u, v in busy) or "-"))
        add(("L1", f"{_rate(k['l1_hit_rate_pct'])} sector hit rate ({k['l1_hit_sectors']:,} hit, "
                   f"{k['l1_miss_sectors']:,} missed; {k['l1_tag_lookups']:,} tag lookups)"))
        add(("L2", f"{_rate(k['l2_hit_rate_pct'])} read hit rate ({k['l2_read_sectors']:,} sectors read, "
                   f"{k['l2_write_sectors']:,} written); {k['l2_busy_pct']:.1f}% busy"))
        if k["global_requests"]:
            add(("global accesses", f"{k['global_requests']:,} requests, {k['global_sectors_per_request']:.2f} "
                                    f"sectors/request; excessive (uncoalesced): {k['global_excessive_sectors']:,} of "
                                    f"{k['global_sectors']:,} sectors ({k['global_excessive_sectors_pct']:.1f}%)"))
        add(("DRAM", f"{k['dram_bytes_read']:,} B read, {k['dram_bytes_written']:,} B written: "
                     f"achieved {k['dram_bandwidth_gbps']:.1f} GB/s = {k['dram_bandwidth_pct']:.1f}% of the "
                     f"{k['peak_dram_bandwidth_gbps']:.0f} GB/s peak; controllers busy {k['dram_busy_pct']:.1f}% "
                     "of the time"))
        if k["useful_bandwidth_gbps"] is not None:
            # The workload's own bytes over the kernel's time: not DRAM traffic (writes may stay in L2,
            # reads may hit in it), so it is not compared with DRAM's peak here.
            add(("workload bytes", f"{k['bytes_moved']:,} B (bytes_moved) in the kernel's time: "
                                   f"{k['useful_bandwidth_gbps']:.1f} GB/s"))
        if k["achieved_gflops"] is not None:
            of = f" = {k['achieved_gflops_pct']:.2f}% of FP32 peak" if k["achieved_gflops_pct"] is not None else ""
            add(("GFLOP/s", f"{k['achieved_gflops']:.1f}{of} ({k['flops']:,} flop)"))
        if k["shared_requests"]:
            add(("shared memory", f"{k['shared_requests']:,} requests, {k['shared_wavefronts']:,} wavefronts "
                                  f"({k['shared_wavefronts_per_request']:.2f}/request), "
                                  f"{k['shared_bank_conflicts']:,} bank conflicts"))
        if st is not None:
            add(("global memory", f"{st.global_bytes_read:,} B read, {st.global_bytes_written:,} B written "
                                  "(by the threads)"))
        if self.power is not None:
            add(("energy", power_line(k)))
            add(("power by unit", breakdown_line(k)))
        for w in self.warnings:
            add(("above peak", str(w)))
        add(("wall time", f"{self.wall_seconds:.3f} s"))
        lines = [f"{a:<{LABEL}}  {b}" for a, b in rows]

        lines.append("")
        lines.append(f"warp states: % of {sum(k['warp_states'].values()):,} warp-cycles "
                     f"({k['warp_cycles_per_issued_instruction'] or 0:.1f} per issued instruction)")
        for name, cyc in sorted(k["warp_states"].items(), key=lambda x: -x[1]):
            if not cyc:
                continue
            share = k["warp_states_pct"][name]
            bar = "#" * round(share / 2.5)
            lines.append(f"{name:<{LABEL}}  {share:5.1f}%  {cyc:>14,}  {bar}")

        v = self.verdict
        lines.append("")
        lines.append(f"{'bottleneck':<{LABEL}}  {v.kind}: {v.summary}")
        lines += [f"{'':<{LABEL}}  - {e}" for e in v.evidence]
        return "\n".join(lines)


def power_line(k: dict[str, Any]) -> str:
    """The summary's energy line: joules, time, average power and what the power cap did."""
    line = (f"{_si(k['energy_j'], 'J')} in {k['power_kernel_seconds'] * 1e6:.3f} us: "
            f"{k['average_power_w']:.1f} W average")
    if k["power_limited"]:
        line += (f" (power-limited at {k['power_limit_w']:g} W: clock {k['clock_mhz']:g} -> "
                 f"{k['power_clock_mhz']:.0f} MHz, {k['power_voltage_mv']:.0f} mV; "
                 f"{k['unconstrained_power_w']:.1f} W at {k['clock_mhz']:g} MHz)")
    else:
        line += f" of the {k['power_limit_w']:g} W limit"
    if k.get("gflops_per_watt") is not None:
        line += f"; {k['gflops_per_watt']:.2f} GFLOP/s per W"
    return line


def breakdown_line(k: dict[str, Any], top: int = 6) -> str:
    """The summary's power-by-unit line: the largest parts of power_breakdown_w, then the rest summed."""
    parts = sorted(k["power_breakdown_w"].items(), key=lambda x: -x[1])
    rest = sum(v for _, v in parts[top:])
    text = ", ".join(f"{u} {v:.1f} W" for u, v in parts[:top])
    return text + (f", other {rest:.1f} W" if rest else "")


def _si(x: float, unit: str) -> str:
    """x with an SI prefix (1.23 mJ)."""
    for scale, prefix in ((1.0, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n")):
        if abs(x) >= scale:
            return f"{x / scale:.3f} {prefix}{unit}"
    return f"{x / 1e-12:.3f} p{unit}"


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}%"


__all__ = ["CSV_COLUMNS", "KERNEL_METRICS", "SimResult"]
