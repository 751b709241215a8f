"""The raw counters a kernel's simulation leaves behind, gathered from every component once the
kernel has finished. `gpusim.stats` turns them into metrics, a report and a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpusim.config.vocab import PORTS, STATE, WARP_STATES
from gpusim.timing.l2 import kernel_dirty_sectors


@dataclass
class SMCounters:
    sm: int
    gpc: int
    issued: int
    active_cycles: int  # cycles with at least one resident warp (max over its sub-partitions)
    scheduler_active_cycles: int  # summed over sub-partitions
    eligible_sum: int  # eligible warps, summed over scheduler cycles
    warp_cycles: int  # resident warp-cycles
    warp_states: dict[str, int]
    unit_busy: dict[str, int]  # busy cycles summed over sub-partitions
    blocks: int
    warps: int
    max_warps_resident: int
    l1_requests: int
    l1_hit_sectors: int
    l1_miss_sectors: int
    l1_mshr_full_cycles: int
    shared_requests: int
    shared_wavefronts: int
    shared_ideal_wavefronts: int


@dataclass
class KernelTiming:
    cycles: int  # first block dispatched (cycle 0) to last block retired
    launch_overhead_cycles: int
    clock_mhz: float
    subpartitions: int
    theoretical_occupancy: dict
    sms: list[SMCounters]
    timeline: list[tuple[int, int, int, int]]  # (block, sm, start, end)
    l2: dict[str, float]
    dram: dict[str, float]
    warp_states: dict[str, int] = field(default_factory=dict)
    # (pcs, warp states) warp-cycles charged to the instruction each warp waited on, `selected` its issues
    # (per_pc runs; None otherwise). A plain attribute, not a field: a KernelTiming's fields are its
    # frozen statistics (tests/timing/test_full_stats.py), the same with per_pc on or off.
    pc_states = None
    # (entries, 6) SM 0's issue log when asked for (`GPU.run(issue_log=N)`; gpusim.timing.subpartition.log),
    # and how many entries did not fit
    issue_log = None
    issue_log_dropped = 0
    # the counters as they stood after given numbers of blocks retired, when asked for
    # (`GPU.run(snapshots=...)`: a list of KernelTimings or None)
    snapshots = None

    @property
    def warp_instructions(self) -> int:
        return sum(s.issued for s in self.sms)

    @classmethod
    def collect(cls, cfg, occ, M) -> KernelTiming:
        """The counters of every unit of a finished kernel's machine (gpusim/timing/sm.py `Machine`)."""
        end = max(int(M.gte.end[0]), 1)
        P, S, l1, smem, l2, d = M.P, M.sms, M.l1, M.smem, M.l2, M.dram
        nsp = S.nsp
        states = P.states.copy()
        states[:, STATE["selected"]] = P.issued
        active = P.active_cycles + np.where(P.nw > 0, end - P.busy_since, 0)  # (none are still resident)
        per_sm = []
        totals = dict.fromkeys(WARP_STATES, 0)
        for s in range(S.t.size):
            g = slice(s * nsp, (s + 1) * nsp)
            ws = dict(zip(WARP_STATES, states[g].sum(axis=0).tolist(), strict=True))
            for k, v in ws.items():
                totals[k] += v
            per_sm.append(SMCounters(
                sm=s, gpc=s % cfg.chip.gpcs, issued=int(P.issued[g].sum()),
                active_cycles=int(active[g].max(initial=0)),
                scheduler_active_cycles=int(active[g].sum()), eligible_sum=int(P.eligible_sum[g].sum()),
                warp_cycles=int(S.warp_cycles[s]), warp_states=ws,
                unit_busy=dict(zip(PORTS, P.busy[g].sum(axis=0).tolist(), strict=True)),
                blocks=int(S.blocks_run[s]), warps=int(S.warps_run[s]),
                max_warps_resident=int(S.max_warps_resident[s]), l1_requests=int(l1.requests[s]),
                l1_hit_sectors=int(l1.hits[s]), l1_miss_sectors=int(l1.misses[s]),
                l1_mshr_full_cycles=int(l1.mshr_full_cycles[s]), shared_requests=int(smem.requests[s]),
                shared_wavefronts=int(smem.wavefronts[s]), shared_ideal_wavefronts=int(smem.ideal_wavefronts[s])))
        l2d = {
            "hit_sectors": int(l2.hits.sum()),
            "miss_sectors": int(l2.misses.sum()),
            "write_sectors": int(l2.writes.sum()),
            "atomic_operations": int(l2.atomics.sum()),
            "busy_cycles": _fsum(l2.port.busy_cycles),
            "queue_cycles": _fsum(l2.port.queue_cycles),
            "requests": int(l2.port.requests.sum()),
            "slices": int(l2.slices),
            "far_sectors": int(l2.far.sum()),  # a near partition lacked them; its far home was asked
            # the kernel's written sectors still dirty in a write-back L2 when it ends (DRAM sees them
            # later); not the foreign lines of a warm start
            "dirty_bytes_at_end": kernel_dirty_sectors(l2) * cfg.l2.sector_size_bytes,
            "sector_bytes": cfg.l2.sector_size_bytes,
        }
        dr = {
            "bytes_read": int(d.bytes_read.sum()),
            "bytes_written": int(d.bytes_written.sum()),
            "busy_cycles": _fsum(d.channel.busy_cycles),
            "queue_cycles": _fsum(d.channel.queue_cycles),
            "requests": int(d.channel.requests.sum()),
            "controllers": int(d.controllers),
            "channels": int(d.controllers * d.per_controller),  # (busy_cycles are summed over these)
            "row_hits": int(d.row_hits.sum()),
            "row_misses": int(d.row_misses.sum()),
            "row_conflicts": int(d.row_conflicts.sum()),
            "peak_bytes_per_cycle": d.peak_bytes_per_cycle,
        }
        n = int(M.gte.ntimeline[0])
        timeline = sorted(tuple(r) for r in M.gte.timeline[:n].tolist())
        overhead = round(cfg.launch.kernel_launch_overhead_ns * cfg.chip.clock_mhz / 1000.0)
        timing = cls(cycles=end, launch_overhead_cycles=overhead, clock_mhz=cfg.chip.clock_mhz,
                     subpartitions=cfg.sm.subpartitions, theoretical_occupancy=occ.to_dict(), sms=per_sm,
                     timeline=timeline, l2=l2d, dram=dr, warp_states=totals)
        if P.per_pc:
            timing.pc_states = P.pc_states.copy()
        if P.log.shape[0]:
            n = int(P.nlog[0])
            timing.issue_log = P.log[:min(n, P.log.shape[0])].copy()
            timing.issue_log_dropped = max(0, n - P.log.shape[0])
        return timing


def _fsum(a: np.ndarray) -> float:
    """Sum in index order, as Python's sum() of the units' counters did (float addition is not
    associative; numpy's pairwise sum would differ in the last bits)."""
    total = 0
    for x in a.tolist():
        total += x
    return total
