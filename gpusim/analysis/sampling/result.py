"""`SampledResult`: what `simulate_sampled` returns, with its JSON (`to_dict`) and terminal (`summary_table`)
views. A sampled run's whole-kernel metrics, verdict and their bounds live in `result` (a SimResult with
`bounds` and `sampling` set), so that the terminal, the JSON and the HTML report read one object."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpusim.analysis.sampling.model import CONFIDENCE_FLOOR, Estimate
from gpusim.analysis.sampling.run import SampleRun
from gpusim.config import Config
from gpusim.stats.report import LABEL, SimResult

# the whole-kernel figures a sampled run's JSON lists with their bounds under `whole_kernel` (all numeric
# metrics are in `bounds`)
HEADLINE = ("cycles", "warp_instructions", "ipc", "achieved_occupancy", "l1_hit_rate_pct", "l2_hit_rate_pct",
            "dram_bytes_read", "dram_bytes_written", "dram_bandwidth_gbps", "dram_busy_pct", "l2_busy_pct",
            "memory_throughput_pct", "compute_throughput_pct")


@dataclass
class SampledResult:
    """What `simulate_sampled` returns. `mode` is "sampled" (an estimate: `cycles` +- `confidence`; `result`
    the whole kernel's SimResult estimated from the sample, with each metric's bounds; `detail` the
    SimResult of the largest sampled run, its values not verified) or "full" (a full simulation, `full`
    and `result` its SimResult, `cycles` exact); `reason` says why, `steps` how the sample grew."""

    workload: str
    cfg: Config
    params: dict[str, Any]
    launch: Any
    seed: int
    requested: str
    mode: str
    reason: str
    cycles: int
    confidence: float
    wall_seconds: float
    grid_blocks: int
    blocks_per_wave: int
    bound: float | None = None  # the bound asked for (relative)
    estimate: Estimate | None = None
    runs: list[SampleRun] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # the plans, in order, and why each was taken
    representative: list[dict[str, int]] = field(default_factory=list)
    loop_trips: dict[int, int] = field(default_factory=dict)
    warp_instructions_estimated: int = 0
    verification: dict[str, Any] = field(default_factory=dict)  # `check_blocks`: the whole blocks' outputs
    roofs: dict[str, float] = field(default_factory=dict)  # least cycles of the kernel's work per unit at its peak
    detail: SimResult | None = None
    full: SimResult | None = None
    result: SimResult | None = None

    @property
    def sampled(self) -> bool:
        return self.mode == "sampled"

    @property
    def bound_met(self) -> bool:
        return self.bound is None or self.confidence <= self.bound + 1e-12

    @property
    def waves(self) -> float:
        return self.grid_blocks / self.blocks_per_wave if self.blocks_per_wave else 0.0

    @property
    def warp_instructions_simulated(self) -> int:
        """Warp instructions simulated in detail: the sampled runs, and the whole kernel if it ran."""
        whole = int(self.full.kernel["warp_instructions"]) if self.full is not None else 0
        return whole + sum(r.warp_instructions for r in self.runs)

    @property
    def kernel_seconds(self) -> float:
        return self.cycles / (self.cfg.chip.clock_mhz * 1e6)

    def whole_kernel(self) -> dict[str, dict[str, float | None]]:
        """The headline whole-kernel figures with their bounds: {metric: {"value", "low", "high"}} (the
        value alone, low = high, for a full run)."""
        r = self.result
        if r is None:
            return {}
        out = {}
        for k in HEADLINE:
            v = r.kernel.get(k)
            lo, hi = (r.bounds or {}).get(k, (v, v))
            out[k] = {"value": v, "low": lo, "high": hi}
        for group in ("warp_states_pct", "unit_utilisation_pct"):
            for name, v in r.kernel.get(group, {}).items():
                lo, hi = (r.bounds or {}).get(f"{group}.{name}", (v, v))
                out[f"{group}.{name}"] = {"value": v, "low": lo, "high": hi}
        return out

    def sampling_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {
            "requested": self.requested, "decision": self.mode, "reason": self.reason,
            "bound_target": self.bound, "bound_met": self.bound_met if self.sampled else None,
            "cycles": self.cycles, "confidence": self.confidence,
            "cycles_low": self.cycles if self.full is not None or not e else e.low,
            "cycles_high": self.cycles if self.full is not None or not e else e.high,
            "sampled_estimate": ({"cycles": e.cycles, "confidence": e.confidence} if e and self.full is not None
                                 else None),
            "grid_blocks": self.grid_blocks, "blocks_per_wave": self.blocks_per_wave, "waves": self.waves,
            "runs": [r.to_dict() for r in self.runs], "steps": list(self.steps),
            "representative_blocks": self.representative,
            "loop_trips": {str(k): v for k, v in self.loop_trips.items()},
            "warp_instructions_simulated": self.warp_instructions_simulated,
            "warp_instructions_estimated": self.warp_instructions_estimated,
            "model": ({"kind": e.model, "per_wave_cycles": e.per_wave, "offset_cycles": e.offset,
                       "cycles_per_warp_instruction": e.beta, "waves_extrapolated": e.waves_extrapolated,
                       "cold_per_wave_cycles": e.cold_per_wave, "l2_fill_waves": e.fill_waves}
                      if e else None),
            "bounds_cycles": dict(e.bounds) if e else {},
            "roofs_cycles": dict(self.roofs),
            "floor_cycles": e.floor if e else None, "floor_roof": e.floor_roof if e else None,
            "floored_from": e.floored_from if e else None,
            "wall_seconds": self.wall_seconds,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready. A full run: its SimResult's dict plus `sampling`. A sampled one: the whole
        kernel's estimated SimResult dict (`kernel`, `verdict`, `sms`; `mode` "sampled", `bounds` per
        metric; `timeline` empty) plus `cycles` (the estimate), `confidence`, `cycles_low` /
        `cycles_high`, `kernel_seconds`, `whole_kernel` (the headline figures with their bounds),
        `verified` and `verification` (the whole blocks' check), `sampling` (what was simulated, the
        model, each term of the bound) and `detail` (the largest sampled run's metrics; its values are
        not the kernel's)."""
        if self.full is not None:
            d = self.full.to_dict()
            d["confidence"] = 0.0
            d["sampling"] = self.sampling_dict()
            return d
        d = self.result.to_dict() if self.result is not None else {}
        d.update({
            "mode": "sampled", "verified": self.verification.get("verified"),
            "verification": dict(self.verification),
            "cycles": self.cycles, "confidence": self.confidence,
            "cycles_low": self.estimate.low, "cycles_high": self.estimate.high,
            "kernel_seconds": self.kernel_seconds, "wall_seconds": self.wall_seconds,
            "whole_kernel": self.whole_kernel(),
            "sampling": self.sampling_dict(),
            "detail": self.detail.to_dict() if self.detail is not None else None,
        })
        return d

    def summary_lines(self) -> list[str]:
        """What was sampled and the estimate, as `label  text` lines for the terminal."""
        rows: list[tuple[str, str]] = []
        if not self.sampled:
            rows.append(("sampling", f"full simulation ({self.reason})"))
            rows.append(("wall time", f"{self.wall_seconds:.3f} s"))
            return [f"{a:<{LABEL}}  {b}" for a, b in rows]
        e = self.estimate
        us = self.kernel_seconds * 1e6
        rows.append(("workload", f"{self.workload} ({', '.join(f'{k}={v}' for k, v in self.params.items())})"))
        rows.append(("config", f"{self.cfg.name} (hash {self.cfg.hash()}), {self.cfg.scheduler.policy} scheduler"))
        rows.append(("estimate", f"{self.cycles:,} cycles +- {self.confidence:.1%} ({e.low:,} - {e.high:,}) "
                                 f"= {us:,.3f} us at {self.cfg.chip.clock_mhz:g} MHz"))
        if self.bound is not None:
            rows.append(("bound asked", f"{self.bound:.1%}: " + ("met" if self.bound_met else "NOT met")))
        rows.append(("sampled", self._sampled_line()))
        for i, s in enumerate(self.steps):
            rows.append(("plan" if i == 0 else "", s))
        sim, est = self.warp_instructions_simulated, self.warp_instructions_estimated
        if self.verification:
            v = self.verification
            rows.append(("verified", ("yes: " if v["verified"] else "not: ") + v["message"]))
        rows.append(("warp instructions", f"{sim:,} simulated of about {est:,} ({sim / max(est, 1):.2%})"))
        rows.append(("model", _model_line(e)))
        if e.floor:
            said = f"; the extrapolation said {e.floored_from:,}: raised to it" if e.floored_from is not None else ""
            rows.append(("hardware floor", f"{e.floor:,.0f} cycles ({e.floor_roof}; "
                                           + ", ".join(f"{k} {v:,.0f}" for k, v in self.roofs.items()) + f"){said}"))
        if e.bounds:
            rows.append(("error bound", ", ".join(f"{k} {v / self.cycles:.2%}" for k, v in e.bounds.items())
                         + f" (at least {CONFIDENCE_FLOOR:.0%} in all)"))
        rows.append(("reason", self.reason))
        rows.append(("wall time", f"{self.wall_seconds:.3f} s"))
        return [f"{a:<{LABEL}}  {b}" for a, b in rows]

    def _sampled_line(self) -> str:
        longest = max(self.loop_trips.values(), default=0)
        parts = []
        for r in self.runs:
            cut = "loops whole" if r.loop_cap is None else f"loops cut at {r.loop_cap}"
            warm = "" if r.warm_l2 is None else f", warm L2 ({r.warm_l2:.0%} dirty)"
            parts.append(f"{r.blocks:,} blocks, {cut}{warm}")
        loop = f"; longest loop {longest + 1:,} iterations" if longest else ""
        return (f"{len(self.runs)} run{'s' if len(self.runs) > 1 else ''} of the first blocks ({'; '.join(parts)}) of "
                f"{self.grid_blocks:,} ({self.blocks_per_wave:,} a wave: {self.waves:,.1f} waves{loop})")

    def summary_table(self) -> str:
        """The terminal's view: a full run's table, or the whole kernel's estimated table (its metrics
        with their bounds below) and what was sampled."""
        if self.full is not None:
            return self.full.summary_table() + "\n\n" + "\n".join(self.summary_lines())
        head = self.result.summary_table() + "\n\n" if self.result is not None else ""
        return head + "\n".join(self._bound_lines() + self.summary_lines())

    def _bound_lines(self) -> list[str]:
        wk = self.whole_kernel()
        if not wk:
            return []
        lines = [f"{'whole kernel':<{LABEL}}  estimated from the sample (value, and its bound):"]
        for k, v in wk.items():
            if v["value"] is None or (k.startswith(("warp_states_pct", "unit_utilisation_pct")) and v["value"] < 0.05):
                continue
            lines.append(f"{'':<{LABEL}}  {k} {_num(v['value'])} ({_num(v['low'])} - {_num(v['high'])})")
        return lines + [""]


def _num(x) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _model_line(e: Estimate) -> str:
    if e.model == "waves" and e.fill_waves is not None:
        return (f"per wave: {e.cold_per_wave:,.0f} cycles from a cold L2, {e.per_wave:,.0f} from a full one (the "
                f"kernel's data fills the L2 around wave {e.fill_waves:,.1f}), {e.offset:,.0f} of ramp and drain; "
                f"{e.waves_extrapolated:,.2f} waves extrapolated")
    if e.model == "waves":
        return (f"per wave: {e.per_wave:,.0f} cycles a wave of whole blocks (its steady state), {e.offset:,.0f} of "
                f"ramp and drain; {e.waves_extrapolated:,.2f} waves extrapolated")
    if e.model == "sms":
        return "a subset of the SMs: the run on the most of them, each SM's whole history"
    return f"loops: {e.beta:.4g} cycles per further warp instruction"


__all__ = ["HEADLINE", "SampledResult"]
