"""Metrics from the timing model's raw counters (`KernelTiming`, `SMCounters`), named after their Nsight
Compute equivalents (see docs/stats.md, which gives every metric's formula).

Conventions: names ending in `_pct` are percentages (0-100); `occupancy` and `simt_efficiency` are
fractions (0-1) like the occupancy calculator's; a ratio whose denominator is zero (a hit rate with no
accesses, a rate with no flops declared) is None. All functions are pure: they read the counters and
never the configuration, so a hand-built `KernelTiming` gives the same metrics a simulation would.
"""

from __future__ import annotations

from typing import Any

from gpusim.timing.counters import KernelTiming, SMCounters
from gpusim.timing.decode import PORTS, WARP_STATES

MATH_UNITS = ("fp32", "int", "fp64", "sfu", "tensor")  # the ports whose saturation means compute-bound
# memory_throughput_pct is the largest of these (metric -> what it measures, as reports name it)
MEMORY_THROUGHPUT_PARTS = {"dram_bandwidth_pct": "DRAM bandwidth", "dram_busy_pct": "DRAM busy",
                           "l2_busy_pct": "L2 busy"}

# Nsight Compute names of the units' pipes (sm__pipe_<name>_cycles_active / sm__inst_executed_pipe_<name>).
UNIT_PIPES = {"fp32": "fma", "int": "alu", "fp64": "fp64", "sfu": "xu", "ldst": "lsu", "branch": "cbu",
              "sync": "cbu", "tensor": "tensor"}

# metric -> (unit, Nsight Compute equivalent). Keys of the nested dicts appear as `name.key` (e.g.
# `unit_utilisation_pct.fp32`, `warp_states_pct.long_scoreboard`); their unit is the entry's.
KERNEL_METRICS: dict[str, tuple[str, str]] = {
    "cycles": ("cycles", "gpc__cycles_elapsed.max"),
    "clock_mhz": ("MHz", "gpc__cycles_elapsed.avg.per_second"),
    "kernel_seconds": ("s", "gpu__time_duration.sum"),
    "launch_overhead_cycles": ("cycles", "(host launch overhead; not in gpu__time_duration)"),
    "total_seconds": ("s", "(gpu__time_duration.sum + launch overhead)"),
    "sms": ("SMs", "device__attribute_multiprocessor_count"),
    "sms_active": ("SMs", "(SMs that ran at least one block)"),
    "blocks": ("blocks", "launch__grid_size"),
    "warps": ("warps", "(launch__grid_size * ceil(launch__block_size / 32))"),
    "warp_instructions": ("instructions", "smsp__inst_executed.sum"),
    "thread_instructions": ("instructions", "smsp__thread_inst_executed.sum"),
    "ipc": ("instructions/cycle", "sm__inst_executed.avg.per_cycle_active"),
    "ipc_sm_mean": ("instructions/cycle", "(mean over active SMs of sm__inst_executed.per_cycle_active)"),
    "ipc_elapsed": ("instructions/cycle", "sm__inst_executed.avg.per_cycle_elapsed"),
    "issued_per_scheduler": ("warps/cycle", "smsp__issue_active.avg.per_cycle_active"),
    "eligible_per_scheduler": ("warps/cycle", "smsp__warps_eligible.avg.per_cycle_active"),
    "active_warps_per_scheduler": ("warps/cycle", "smsp__warps_active.avg.per_cycle_active"),
    "issue_slot_utilisation_pct": ("%", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    "theoretical_occupancy": ("fraction", "sm__maximum_warps_per_active_cycle_pct / 100"),
    "theoretical_warps_per_sm": ("warps", "sm__maximum_warps_avg_per_active_cycle"),
    "achieved_occupancy": ("fraction", "sm__warps_active.avg.pct_of_peak_sustained_active / 100"),
    "achieved_warps_per_sm": ("warps", "sm__warps_active.avg.per_cycle_active"),
    "simt_efficiency": ("fraction", "smsp__thread_inst_executed_per_inst_executed.ratio / 32"),
    "active_threads_per_warp": ("threads", "smsp__thread_inst_executed_per_inst_executed.ratio"),
    "divergent_branches": ("branches", "smsp__sass_branch_targets_threads_divergent.sum"),
    "unit_utilisation_pct": ("%", "sm__pipe_<pipe>_cycles_active.avg.pct_of_peak_sustained_active"),
    "compute_throughput_pct": ("%", "sm__throughput.avg.pct_of_peak_sustained_elapsed (Compute Throughput)"),
    "l1_tag_lookups": ("lookups", "(L1 tag lookups: one per cache line a global warp access touches; Nsight's "
                                  "l1tex__t_requests counts warp requests, global_requests here)"),
    "l1_hit_sectors": ("sectors", "l1tex__t_sectors_pipe_lsu_mem_global_lookup_hit.sum"),
    "l1_miss_sectors": ("sectors", "l1tex__t_sectors_pipe_lsu_mem_global_lookup_miss.sum"),
    "l1_hit_rate_pct": ("%", "l1tex__t_sector_hit_rate.pct"),
    "l1_mshr_full_cycles": ("cycles", "(cycles a miss waited for a free MSHR)"),
    "global_requests": ("requests", "smsp__inst_executed_op_global_{ld,st,atom,red}.sum (warp instructions)"),
    "global_sectors": ("sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum + lts__t_sectors_op_write.sum"),
    "global_sectors_per_request": ("sectors/request", "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global"),
    "global_ideal_sectors": ("sectors", "(Source Counters: the 32-byte sectors the accessed bytes fill, packed)"),
    "global_excessive_sectors": ("sectors", "(Source Counters: excessive sectors of uncoalesced global accesses)"),
    "global_excessive_sectors_pct": ("%", "(excessive / all global sectors)"),
    "l2_read_sectors": ("sectors", "lts__t_sectors_op_read.sum"),
    "l2_write_sectors": ("sectors", "lts__t_sectors_op_write.sum"),
    "l2_atomic_operations": ("operations", "lts__t_requests_op_atom.sum (per lane)"),
    "l2_hit_rate_pct": ("%", "lts__t_sector_op_read_hit_rate.pct"),
    "l2_busy_pct": ("%", "lts__t_sectors.avg.pct_of_peak_sustained_elapsed"),
    "dram_bytes_read": ("bytes", "dram__bytes_read.sum"),
    "dram_bytes_written": ("bytes", "dram__bytes_write.sum"),
    "dram_bandwidth_gbps": ("GB/s", "dram__bytes.sum.per_second"),
    "peak_dram_bandwidth_gbps": ("GB/s", "(the config's dram.bandwidth_gbps)"),
    "dram_bandwidth_pct": ("%", "dram__bytes.sum.pct_of_peak_sustained_elapsed"),
    "dram_busy_pct": ("%", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "memory_throughput_pct": ("%", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    "shared_requests": ("requests", "smsp__inst_executed_op_shared_ld.sum + smsp__inst_executed_op_shared_st.sum "
                                    "(+ shfl)"),
    "shared_wavefronts": ("wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
    "shared_ideal_wavefronts": ("wavefronts", "(Source Counters: ideal shared wavefronts)"),
    "shared_bank_conflicts": ("wavefronts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
    "shared_wavefronts_per_request": ("wavefronts/request",
                                      "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum / shared requests"),
    "shared_conflict_factor": ("ratio", "(wavefronts / ideal wavefronts)"),
    "shared_pipe_utilisation_pct": ("%", "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_active"),
    "warp_cycles": ("warp-cycles", "smsp__warps_active.sum"),
    "warp_cycles_per_issued_instruction": ("cycles", "smsp__average_warp_latency_per_inst_issued.ratio"),
    "warp_states": ("warp-cycles", "smsp__pcsamp_warps_issue_stalled_<state> (sampled there, counted here)"),
    "warp_states_pct": ("%", "smsp__pcsamp_warps_issue_stalled_<state> / all samples"),
    "flops": ("flop", "(the workload's flops: expression)"),
    "achieved_gflops": ("GFLOP/s", "(flops / gpu__time_duration)"),
    "achieved_gflops_pct": ("%", "(of the config's peak_fp32_gflops)"),
    "bytes_moved": ("bytes", "(the workload's bytes_moved: expression)"),
    "useful_bandwidth_gbps": ("GB/s", "(bytes_moved / gpu__time_duration: effective bandwidth)"),
    "useful_bandwidth_pct": ("%", "(of peak_dram_bandwidth_gbps)"),
}

# the power model's kernel metrics (gpusim.stats.power), after KERNEL_METRICS' in a result's `kernel` where
# the config has a power: section
POWER_METRICS: dict[str, tuple[str, str]] = {
    "energy_j": ("J", "(the power model: the kernel's energy at power_clock_mhz)"),
    "average_power_w": ("W", "(the power model: energy_j / power_kernel_seconds; nvidia-smi power.draw)"),
    "unconstrained_power_w": ("W", "(the power model: the kernel's power at clock_mhz, before the cap)"),
    "power_limit_w": ("W", "(the config's power.tdp_w; nvidia-smi power.limit)"),
    "power_limited": ("bool", "(1 when the power cap lowered the clock; nvidia-smi "
                              "clocks_throttle_reasons.sw_power_cap)"),
    "power_clock_mhz": ("MHz", "(the clock the power cap leaves: clock_mhz when not limited)"),
    "power_voltage_mv": ("mV", "(the core voltage at power_clock_mhz on the config's DVFS curve)"),
    "power_kernel_seconds": ("s", "(cycles / power_clock_mhz: the kernel's time at the capped clock)"),
    "energy_breakdown_j": ("J", "(energy_j by unit: dynamic per unit, static, memory background, constant)"),
    "power_breakdown_w": ("W", "(energy_breakdown_j / power_kernel_seconds)"),
    "gflops_per_watt": ("GFLOP/s/W", "(flops / energy_j: performance per watt)"),
}

SM_METRICS: dict[str, tuple[str, str]] = {
    "sm": ("index", "(SM index)"),
    "gpc": ("index", "(GPC index)"),
    "blocks": ("blocks", "sm__ctas_launched.sum"),
    "warps": ("warps", "sm__warps_launched.sum"),
    "max_warps_resident": ("warps", "(peak resident warps)"),
    "active_cycles": ("cycles", "sm__cycles_active.sum"),
    "issued": ("instructions", "sm__inst_executed.sum"),
    "ipc": ("instructions/cycle", "sm__inst_executed.per_cycle_active"),
    "issued_per_scheduler": ("warps/cycle", "smsp__issue_active.avg.per_cycle_active"),
    "eligible_per_scheduler": ("warps/cycle", "smsp__warps_eligible.avg.per_cycle_active"),
    "achieved_occupancy": ("fraction", "sm__warps_active.pct_of_peak_sustained_active / 100"),
    "warp_cycles": ("warp-cycles", "smsp__warps_active.sum"),
    "l1_hit_rate_pct": ("%", "l1tex__t_sector_hit_rate.pct"),
    "l1_hit_sectors": ("sectors", "l1tex__t_sectors_lookup_hit.sum"),
    "l1_miss_sectors": ("sectors", "l1tex__t_sectors_lookup_miss.sum"),
    "shared_wavefronts": ("wavefronts", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
    "shared_bank_conflicts": ("wavefronts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
    "unit_utilisation_pct": ("%", "sm__pipe_<pipe>_cycles_active.pct_of_peak_sustained_active"),
    "warp_states_pct": ("%", "smsp__pcsamp_warps_issue_stalled_<state> / all samples"),
}


def ratio(num: float, den: float, default: float | None = None) -> float | None:
    return num / den if den else default


def pct(num: float, den: float, default: float | None = None) -> float | None:
    return 100.0 * num / den if den else default


def _sum(sms: list[SMCounters], attr: str) -> int:
    return sum(getattr(s, attr) for s in sms)


def warp_state_totals(timing: KernelTiming) -> dict[str, int]:
    """Warp-cycles per state over the kernel, in WARP_STATES order (summed from the SMs)."""
    out = dict.fromkeys(WARP_STATES, 0)
    for s in timing.sms:
        for k, v in s.warp_states.items():
            out[k] = out.get(k, 0) + v
    return out


def _units(timing: KernelTiming) -> tuple[str, ...]:
    names = list(PORTS)
    for s in timing.sms:
        names += [u for u in s.unit_busy if u not in names]
    return tuple(names)


def kernel_metrics(timing: KernelTiming, *, stats: Any = None, flops: float | None = None,
                   bytes_moved: float | None = None, issue_width: int = 1,
                   peak_fp32_gflops: float | None = None) -> dict[str, Any]:
    """The kernel's metrics (keys of KERNEL_METRICS, in that order). `stats` is the functional executor's
    ExecStats (thread instructions, SIMT efficiency, divergent branches; None leaves them None);
    `flops` and `bytes_moved` are the workload's declarations (None or 0: not declared)."""
    sms = timing.sms
    cycles = timing.cycles
    seconds = cycles / (timing.clock_mhz * 1e6)
    issued = _sum(sms, "issued")
    active = _sum(sms, "active_cycles")
    sched = _sum(sms, "scheduler_active_cycles")
    warp_cycles = _sum(sms, "warp_cycles")
    occ = timing.theoretical_occupancy or {}
    max_warps = occ.get("max_warps_per_sm") or max((s.max_warps_resident for s in sms), default=0) or 1
    running = [s for s in sms if s.active_cycles]

    busy = {u: sum(s.unit_busy.get(u, 0) for s in sms) for u in _units(timing)}
    util = {u: pct(b, sched, 0.0) for u, b in busy.items()}
    issue_pct = pct(issued, sched * issue_width, 0.0)
    math = [util[u] for u in MATH_UNITS if u in util]

    memory = _memory_metrics(timing, stats, seconds)
    peak_gbps = memory["peak_dram_bandwidth_gbps"]

    wave, ideal = _sum(sms, "shared_wavefronts"), _sum(sms, "shared_ideal_wavefronts")
    sreq = _sum(sms, "shared_requests")
    states = warp_state_totals(timing)
    state_total = sum(states.values())

    simt = threads = divergent = None
    if stats is not None:
        simt = stats.simt_efficiency
        threads = stats.thread_instructions
        divergent = stats.divergent_branches
    flops = flops or None
    bytes_moved = bytes_moved or None
    gflops = flops / seconds / 1e9 if flops and seconds else None
    useful = bytes_moved / seconds / 1e9 if bytes_moved and seconds else None

    return {
        "cycles": cycles,
        "clock_mhz": timing.clock_mhz,
        "kernel_seconds": seconds,
        "launch_overhead_cycles": timing.launch_overhead_cycles,
        "total_seconds": (cycles + timing.launch_overhead_cycles) / (timing.clock_mhz * 1e6),
        "sms": len(sms),
        "sms_active": len(running),
        "blocks": _sum(sms, "blocks"),
        "warps": _sum(sms, "warps"),
        "warp_instructions": issued,
        "thread_instructions": threads,
        "ipc": ratio(issued, active, 0.0),
        "ipc_sm_mean": sum(s.issued / s.active_cycles for s in running) / len(running) if running else 0.0,
        "ipc_elapsed": ratio(issued, cycles * len(sms), 0.0),
        "issued_per_scheduler": ratio(issued, sched, 0.0),
        "eligible_per_scheduler": ratio(_sum(sms, "eligible_sum"), sched, 0.0),
        "active_warps_per_scheduler": ratio(warp_cycles, sched, 0.0),
        "issue_slot_utilisation_pct": issue_pct,
        "theoretical_occupancy": occ.get("occupancy"),
        "theoretical_warps_per_sm": occ.get("active_warps_per_sm"),
        "achieved_occupancy": ratio(warp_cycles, active * max_warps, 0.0),
        "achieved_warps_per_sm": ratio(warp_cycles, active, 0.0),
        "simt_efficiency": simt,
        "active_threads_per_warp": ratio(threads, stats.warp_instructions) if stats is not None else None,
        "divergent_branches": divergent,
        "unit_utilisation_pct": util,
        "compute_throughput_pct": max([*math, issue_pct]),
        **memory,
        "shared_requests": sreq,
        "shared_wavefronts": wave,
        "shared_ideal_wavefronts": ideal,
        "shared_bank_conflicts": wave - ideal,
        "shared_wavefronts_per_request": ratio(wave, sreq),
        "shared_conflict_factor": ratio(wave, ideal),
        "shared_pipe_utilisation_pct": pct(wave, active, 0.0),
        "warp_cycles": warp_cycles,
        "warp_cycles_per_issued_instruction": ratio(state_total, issued),
        "warp_states": states,
        "warp_states_pct": {k: pct(v, state_total, 0.0) for k, v in states.items()},
        "flops": flops,
        "achieved_gflops": gflops,
        "achieved_gflops_pct": pct(gflops, peak_fp32_gflops) if gflops is not None and peak_fp32_gflops else None,
        "bytes_moved": bytes_moved,
        "useful_bandwidth_gbps": useful,
        "useful_bandwidth_pct": pct(useful, peak_gbps) if useful is not None else None,
    }


def _memory_metrics(timing: KernelTiming, stats: Any, seconds: float) -> dict[str, Any]:
    """kernel_metrics' rows of the memory system, L1 to DRAM (in KERNEL_METRICS order)."""
    sms, cycles = timing.sms, timing.cycles
    l1_hit, l1_miss = _sum(sms, "l1_hit_sectors"), _sum(sms, "l1_miss_sectors")
    l2, dram = timing.l2, timing.dram
    l2_hit, l2_miss = l2.get("hit_sectors", 0), l2.get("miss_sectors", 0)
    l2_busy = pct(l2.get("busy_cycles", 0), l2.get("slices", 0) * cycles, 0.0)
    rd, wr = dram.get("bytes_read", 0), dram.get("bytes_written", 0)
    peak_bpc = dram.get("peak_bytes_per_cycle", 0.0)
    dram_pct = pct(rd + wr, peak_bpc * cycles, 0.0)
    # busy cycles are summed over the channels (each controller's buses), so the share is per channel
    dram_busy = pct(dram.get("busy_cycles", 0), dram.get("channels", dram.get("controllers", 0)) * cycles, 0.0)
    requests = ideal_sectors = None
    if stats is not None:
        requests = stats.global_requests
        # a lower bound: each request's bytes packed into whole sectors, over all requests together
        ideal_sectors = -(-stats.global_bytes_read // 32) + -(-stats.global_bytes_written // 32)
    global_sectors = l1_hit + l1_miss + l2.get("write_sectors", 0)
    excessive = max(0, global_sectors - ideal_sectors) if ideal_sectors is not None else None
    return {
        "l1_tag_lookups": _sum(sms, "l1_requests"),
        "l1_hit_sectors": l1_hit,
        "l1_miss_sectors": l1_miss,
        "l1_hit_rate_pct": pct(l1_hit, l1_hit + l1_miss),
        "l1_mshr_full_cycles": _sum(sms, "l1_mshr_full_cycles"),
        "global_requests": requests,
        "global_sectors": global_sectors,
        "global_sectors_per_request": ratio(global_sectors, requests) if requests else None,
        "global_ideal_sectors": ideal_sectors,
        "global_excessive_sectors": excessive,
        "global_excessive_sectors_pct": pct(excessive, global_sectors, 0.0) if excessive is not None else None,
        "l2_read_sectors": l2_hit + l2_miss,
        "l2_write_sectors": l2.get("write_sectors", 0),
        "l2_atomic_operations": l2.get("atomic_operations", 0),
        "l2_hit_rate_pct": pct(l2_hit, l2_hit + l2_miss),
        "l2_busy_pct": l2_busy,
        "dram_bytes_read": rd,
        "dram_bytes_written": wr,
        "dram_bandwidth_gbps": (rd + wr) / seconds / 1e9 if seconds else 0.0,
        "peak_dram_bandwidth_gbps": peak_bpc * timing.clock_mhz / 1000.0,
        "dram_bandwidth_pct": dram_pct,
        "dram_busy_pct": dram_busy,
        "memory_throughput_pct": max(dram_pct, dram_busy, l2_busy),  # MEMORY_THROUGHPUT_PARTS
    }


def throughput_source(kernel: dict[str, Any], which: str) -> str:
    """What produced a kernel's `compute_throughput_pct` (`which` "compute": the busiest math pipe, as
    "fp32 pipe", or "issue slots") or `memory_throughput_pct` ("memory": "DRAM bandwidth", "DRAM busy" or
    "L2 busy"), read from the metrics that the throughput is the largest of."""
    if which == "memory":
        parts = {label: kernel.get(m) for m, label in MEMORY_THROUGHPUT_PARTS.items()}
    else:
        util = kernel.get("unit_utilisation_pct") or {}
        parts = {f"{u} pipe": util.get(u) for u in MATH_UNITS if u in util}
        parts["issue slots"] = kernel.get("issue_slot_utilisation_pct")
    known = {label: v for label, v in parts.items() if v is not None}
    return max(known, key=lambda label: known[label]) if known else "n/a"


def sm_metrics(timing: KernelTiming, *, issue_width: int = 1) -> list[dict[str, Any]]:
    """One flat row per SM (keys of SM_METRICS; the nested dicts flattened to `unit_utilisation_pct.fp32`,
    `warp_states_pct.long_scoreboard`)."""
    occ = timing.theoretical_occupancy or {}
    max_warps = occ.get("max_warps_per_sm") or max((s.max_warps_resident for s in timing.sms), default=0) or 1
    units = _units(timing)
    rows = []
    for s in timing.sms:
        states = {k: s.warp_states.get(k, 0) for k in WARP_STATES}
        total = sum(states.values())
        row: dict[str, Any] = {
            "sm": s.sm,
            "gpc": s.gpc,
            "blocks": s.blocks,
            "warps": s.warps,
            "max_warps_resident": s.max_warps_resident,
            "active_cycles": s.active_cycles,
            "issued": s.issued,
            "ipc": ratio(s.issued, s.active_cycles, 0.0),
            "issued_per_scheduler": ratio(s.issued, s.scheduler_active_cycles, 0.0),
            "eligible_per_scheduler": ratio(s.eligible_sum, s.scheduler_active_cycles, 0.0),
            "achieved_occupancy": ratio(s.warp_cycles, s.active_cycles * max_warps, 0.0),
            "warp_cycles": s.warp_cycles,
            "l1_hit_rate_pct": pct(s.l1_hit_sectors, s.l1_hit_sectors + s.l1_miss_sectors),
            "l1_hit_sectors": s.l1_hit_sectors,
            "l1_miss_sectors": s.l1_miss_sectors,
            "shared_wavefronts": s.shared_wavefronts,
            "shared_bank_conflicts": s.shared_wavefronts - s.shared_ideal_wavefronts,
        }
        for u in units:
            row[f"unit_utilisation_pct.{u}"] = pct(s.unit_busy.get(u, 0), s.scheduler_active_cycles, 0.0)
        for k, v in states.items():
            row[f"warp_states_pct.{k}"] = pct(v, total, 0.0)
        rows.append(row)
    return rows


def timeline_rows(timing: KernelTiming) -> list[dict[str, int]]:
    """One row per block: block, sm, start and end cycle, and its duration."""
    return [{"block": b, "sm": sm, "start": start, "end": end, "cycles": end - start}
            for b, sm, start, end in timing.timeline]


def flatten(metrics: dict[str, Any]) -> list[tuple[str, Any]]:
    """(name, value) pairs with nested dicts spelled `name.key`."""
    out = []
    for k, v in metrics.items():
        if isinstance(v, dict):
            out += [(f"{k}.{kk}", vv) for kk, vv in v.items()]
        else:
            out.append((k, v))
    return out


def unit_of(name: str, table: dict[str, tuple[str, str]] | None = None) -> str:
    """The unit of a (possibly flattened, `name.key`) metric (of KERNEL_METRICS and POWER_METRICS by
    default)."""
    table = {**KERNEL_METRICS, **POWER_METRICS} if table is None else table
    entry = table.get(name) or table.get(name.split(".", 1)[0])
    return entry[0] if entry else ""
