"""The bottleneck verdict: what limits a kernel, decided from its metrics (`kernel_metrics`), with the
numbers that decided it. The verdict is the kernel's own, from its own duration, as Nsight Compute
reports it: the host's launch overhead belongs to the program around the kernel (a program of many
short kernels gets the launch-overhead verdict: `gpusim.system.ProgramReport.verdict`); a kernel
shorter than its launch says so in its evidence.

The rules, tried in this order (the first that holds is the verdict; docs/stats.md explains them):

1. uncoalesced             global accesses fetch at least twice the sectors their bytes need
                           (Nsight's "uncoalesced global accesses": half the sectors excessive or more),
                           and memory throughput is at least compute throughput.
2. memory-bandwidth-bound  memory throughput (the largest of DRAM bandwidth, DRAM busy and L2 busy, % of
                           peak) >= 60% and at least the compute throughput.
3. bank-conflicts          shared-memory wavefronts >= 2x the conflict-free ideal, and warps spend
                           >= 25% of their cycles in mio_throttle + short_scoreboard.
4. divergence              SIMT efficiency < 0.6 and at least one divergent branch.
5. compute-bound           compute throughput (the busiest math pipe, or the issue slots) >= 60%.
6. latency-bound           otherwise: no unit is near its peak, so the warps cannot hide the latency
                           they wait on (too few warps, or too little independent work per warp).

60% is Nsight Compute's own threshold (its Speed Of Light rule calls throughput below 60% of peak a
sign of latency issues).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpusim.stats.metrics import MATH_UNITS

UNCOALESCED = "uncoalesced"
MEMORY_BOUND = "memory-bandwidth-bound"
BANK_CONFLICTS = "bank-conflicts"
DIVERGENCE = "divergence"
COMPUTE_BOUND = "compute-bound"
LATENCY_BOUND = "latency-bound"
VERDICTS = (UNCOALESCED, MEMORY_BOUND, BANK_CONFLICTS, DIVERGENCE, COMPUTE_BOUND, LATENCY_BOUND)

THROUGHPUT_PCT = 60.0  # memory or compute throughput at or above this share of peak is the limit
EXCESSIVE_SECTORS_PCT = 50.0  # excessive global sectors at or above this share: uncoalesced (2x the ideal)
CONFLICT_FACTOR = 2.0  # shared wavefronts / ideal wavefronts at or above this is a bank-conflict problem
SHARED_STALL_PCT = 25.0  # ... when mio_throttle + short_scoreboard take at least this share of warp-cycles
SIMT_THRESHOLD = 0.6  # SIMT efficiency below this (with divergent branches) is a divergence problem
LOW_OCCUPANCY = 0.5  # achieved occupancy below this: "too few warps" in a latency-bound verdict


@dataclass(frozen=True)
class Verdict:
    """`kind` is one of VERDICTS; `summary` one sentence; `evidence` the deciding numbers as readable
    lines; `numbers` the same numbers by metric name."""

    kind: str
    summary: str
    evidence: list[str] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.kind, "summary": self.summary, "evidence": list(self.evidence),
                "numbers": dict(self.numbers)}

    def __str__(self) -> str:
        return f"{self.kind}: {self.summary}"


def _top_stall(states_pct: dict[str, float]) -> tuple[str, float]:
    stalls = {k: v for k, v in states_pct.items() if k != "selected"}
    if not stalls:
        return "none", 0.0
    name = max(stalls, key=lambda k: stalls[k])
    return name, stalls[name]


def _busiest_math(util: dict[str, float]) -> tuple[str, float]:
    math = {u: util.get(u, 0.0) for u in MATH_UNITS}
    name = max(math, key=lambda u: math[u])
    return name, math[name]


def diagnose(m: dict[str, Any]) -> Verdict:
    """The verdict for kernel metrics `m` (a `kernel_metrics` dict); a kernel shorter than its launch
    overhead gets a last evidence line that says so."""
    v = _diagnose(m)
    cycles, overhead = m["cycles"], m["launch_overhead_cycles"]
    if overhead > cycles:
        v.evidence.append(f"the kernel ({cycles:,} cycles, {m['kernel_seconds'] * 1e6:.3f} us) is shorter than "
                          f"its {overhead:,}-cycle ({overhead / m['clock_mhz']:.3f} us) launch: in a program of "
                          "such kernels the launches set the pace (`gpusim program` reports it)")
        v.numbers["launch_overhead_cycles"] = overhead
    return v


def _diagnose(m: dict[str, Any]) -> Verdict:
    mem, comp = m["memory_throughput_pct"], m["compute_throughput_pct"]
    states = m["warp_states_pct"]
    top, top_pct = _top_stall(states)
    unit, unit_pct = _busiest_math(m["unit_utilisation_pct"])
    shared_stall = states.get("mio_throttle", 0.0) + states.get("short_scoreboard", 0.0)
    factor = m.get("shared_conflict_factor") or 0.0
    simt = m.get("simt_efficiency")
    divergent = m.get("divergent_branches") or 0

    excess_pct = m.get("global_excessive_sectors_pct") or 0.0
    if excess_pct >= EXCESSIVE_SECTORS_PCT and mem >= comp:
        sectors, ideal = m["global_sectors"], m["global_ideal_sectors"]
        return Verdict(
            UNCOALESCED,
            f"global accesses fetch {sectors / ideal:.1f}x the sectors their bytes need ({excess_pct:.0f}% of them "
            "excessive): make neighbouring threads access neighbouring addresses (or stage through shared memory)",
            [f"{m['global_sectors']:,} global sectors for {m['global_ideal_sectors']:,} ideal: "
             f"{m['global_excessive_sectors']:,} excessive ({excess_pct:.1f}% >= {EXCESSIVE_SECTORS_PCT:.0f}%)",
             f"{m['global_sectors_per_request']:.1f} sectors per request ({m['global_requests']:,} requests)",
             f"memory throughput {mem:.1f}% >= compute throughput {comp:.1f}%; top stall: {top} {top_pct:.1f}%"],
            {"global_sectors": sectors, "global_ideal_sectors": ideal,
             "global_excessive_sectors_pct": excess_pct,
             "global_sectors_per_request": m["global_sectors_per_request"],
             "memory_throughput_pct": mem, "compute_throughput_pct": comp})

    mem_numbers = {"memory_throughput_pct": mem, "dram_bandwidth_pct": m["dram_bandwidth_pct"],
                   "dram_busy_pct": m["dram_busy_pct"], "l2_busy_pct": m["l2_busy_pct"],
                   "dram_bandwidth_gbps": m["dram_bandwidth_gbps"], "compute_throughput_pct": comp}
    if mem >= THROUGHPUT_PCT and mem >= comp:
        if m["l2_busy_pct"] >= max(m["dram_bandwidth_pct"], m["dram_busy_pct"]):
            where = f"L2 is busy {mem:.0f}% of the time"
        elif m["dram_busy_pct"] >= m["dram_bandwidth_pct"]:
            where = (f"DRAM is busy {mem:.0f}% of the time ({m['dram_bandwidth_gbps']:.0f} GB/s, "
                     f"{m['dram_bandwidth_pct']:.0f}% of its peak bandwidth)")
        else:
            where = f"DRAM moves {mem:.0f}% of its peak bandwidth ({m['dram_bandwidth_gbps']:.0f} GB/s)"
        return Verdict(
            MEMORY_BOUND,
            f"{where}, at least {THROUGHPUT_PCT:.0f}%: move fewer bytes (reuse through shared memory or L1, "
            "coalesce, compress)",
            [f"memory throughput {mem:.1f}% >= {THROUGHPUT_PCT:.0f}% and >= compute throughput {comp:.1f}%",
             f"DRAM {m['dram_bandwidth_gbps']:.1f} GB/s = {m['dram_bandwidth_pct']:.1f}% of "
             f"{m['peak_dram_bandwidth_gbps']:.0f} GB/s peak; DRAM busy {m['dram_busy_pct']:.1f}%; "
             f"L2 busy {m['l2_busy_pct']:.1f}%",
             f"top stall: {top} {top_pct:.1f}% of warp-cycles"],
            mem_numbers)

    if factor >= CONFLICT_FACTOR and shared_stall >= SHARED_STALL_PCT:
        return Verdict(
            BANK_CONFLICTS,
            f"shared-memory accesses need {factor:.1f}x the conflict-free wavefronts and warps wait on them "
            f"{shared_stall:.0f}% of the time: pad or swizzle the shared arrays",
            [f"{m['shared_wavefronts']:,} shared wavefronts vs {m['shared_ideal_wavefronts']:,} ideal "
             f"({factor:.2f}x >= {CONFLICT_FACTOR:.0f}x; {m['shared_bank_conflicts']:,} bank conflicts, "
             f"{m['shared_wavefronts_per_request']:.2f} wavefronts per request)",
             f"mio_throttle {states.get('mio_throttle', 0.0):.1f}% + short_scoreboard "
             f"{states.get('short_scoreboard', 0.0):.1f}% = {shared_stall:.1f}% of warp-cycles "
             f">= {SHARED_STALL_PCT:.0f}%"],
            {"shared_conflict_factor": factor, "shared_bank_conflicts": m["shared_bank_conflicts"],
             "shared_wavefronts_per_request": m["shared_wavefronts_per_request"],
             "mio_throttle_pct": states.get("mio_throttle", 0.0),
             "short_scoreboard_pct": states.get("short_scoreboard", 0.0)})

    if simt is not None and simt < SIMT_THRESHOLD and divergent > 0:
        return Verdict(
            DIVERGENCE,
            f"only {simt:.0%} of the lanes of an issued instruction do work ({divergent:,} divergent branches): "
            "make neighbouring threads take the same path",
            [f"SIMT efficiency {simt:.3f} < {SIMT_THRESHOLD} "
             f"({m['active_threads_per_warp']:.1f} active threads per warp instruction)",
             f"{divergent:,} divergent branches",
             f"busiest math pipe {unit} {unit_pct:.1f}%, issue slots {m['issue_slot_utilisation_pct']:.1f}%"],
            {"simt_efficiency": simt, "divergent_branches": divergent,
             "active_threads_per_warp": m["active_threads_per_warp"], "compute_throughput_pct": comp})

    if comp >= THROUGHPUT_PCT:
        issue = m["issue_slot_utilisation_pct"]
        what = f"the {unit} pipe" if unit_pct >= issue else "instruction issue"
        return Verdict(
            COMPUTE_BOUND,
            f"{what} runs at {comp:.0f}% of its peak (at least {THROUGHPUT_PCT:.0f}%): do less arithmetic "
            "or use a faster unit (fewer instructions, lower precision, tensor cores)",
            [f"compute throughput {comp:.1f}% >= {THROUGHPUT_PCT:.0f}% (memory throughput {mem:.1f}%)",
             f"busiest math pipe {unit} {unit_pct:.1f}%; issue slots {issue:.1f}% busy "
             f"(IPC {m['ipc']:.2f} per SM)",
             f"selected {states.get('selected', 0.0):.1f}%, math_pipe_throttle "
             f"{states.get('math_pipe_throttle', 0.0):.1f}% of warp-cycles"],
            {"compute_throughput_pct": comp, "busiest_unit": unit, "busiest_unit_pct": unit_pct,
             "issue_slot_utilisation_pct": issue, "memory_throughput_pct": mem, "ipc": m["ipc"]})

    occ = m["achieved_occupancy"]
    few = occ < LOW_OCCUPANCY
    why = (f"too few warps ({m['achieved_warps_per_sm']:.1f} per SM, {occ:.0%} achieved occupancy) to hide "
           f"the latency they wait on ({top})" if few else
           f"the warps wait on {top} ({top_pct:.0f}% of warp-cycles) with too little independent work to hide it")
    return Verdict(
        LATENCY_BOUND,
        f"no unit is near its peak: {why}",
        [f"compute throughput {comp:.1f}% and memory throughput {mem:.1f}% both < {THROUGHPUT_PCT:.0f}%",
         f"top stall: {top} {top_pct:.1f}% of warp-cycles",
         f"achieved occupancy {occ:.1%} ({m['achieved_warps_per_sm']:.1f} warps per SM; theoretical "
         f"{(m['theoretical_occupancy'] or 0.0):.1%})",
         f"{m['eligible_per_scheduler']:.2f} eligible and {m['issued_per_scheduler']:.2f} issued warps per "
         "scheduler per cycle"],
        {"compute_throughput_pct": comp, "memory_throughput_pct": mem, "top_stall": top, "top_stall_pct": top_pct,
         "achieved_occupancy": occ, "eligible_per_scheduler": m["eligible_per_scheduler"],
         "issued_per_scheduler": m["issued_per_scheduler"]})
