"""The raw counters a kernel's simulation leaves behind, gathered from every component once the
kernel has finished. `gpusim.stats` turns them into metrics, a report and a verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusim.timing.decode import PORTS, WARP_STATES


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

    @property
    def warp_instructions(self) -> int:
        return sum(s.issued for s in self.sms)

    @classmethod
    def collect(cls, cfg, occ, engine, sms, slices, dram, mix) -> KernelTiming:
        end = max(engine.end, 1)
        mix.flush()
        per_sm = []
        totals = dict.fromkeys(WARP_STATES, 0)
        for sm in sms:
            states = [0] * len(WARP_STATES)
            busy = [0] * len(PORTS)
            sched_active = eligible = issued = 0
            for sp in sm.sps:
                sp.tally(int(mix.issued[sp.gid]), mix.busy[sp.gid].tolist())
                if sp.warps:  # still resident: cannot happen once the kernel is done
                    sp.active_cycles += end - sp._busy_since
                states = [a + b for a, b in zip(states, sp.states, strict=False)]
                busy = [a + b for a, b in zip(busy, sp.pipes.busy, strict=False)]
                sched_active += sp.active_cycles
                eligible += sp.eligible_sum
                issued += sp.issued
            ws = dict(zip(WARP_STATES, states, strict=False))
            for k, v in ws.items():
                totals[k] += v
            per_sm.append(SMCounters(
                sm=sm.index, gpc=sm.gpc, issued=issued,
                active_cycles=max((sp.active_cycles for sp in sm.sps), default=0),
                scheduler_active_cycles=sched_active, eligible_sum=eligible, warp_cycles=sm.warp_cycles,
                warp_states=ws, unit_busy=dict(zip(PORTS, busy, strict=True)), blocks=sm.blocks_run,
                warps=sm.warps_run,
                max_warps_resident=sm.max_warps_resident, l1_requests=sm.l1.requests,
                l1_hit_sectors=sm.l1.hits, l1_miss_sectors=sm.l1.misses,
                l1_mshr_full_cycles=sm.l1.mshr_full_cycles, shared_requests=sm.smem.requests,
                shared_wavefronts=sm.smem.wavefronts, shared_ideal_wavefronts=sm.smem.ideal_wavefronts))
        l2 = {
            "hit_sectors": sum(s.hits for s in slices),
            "miss_sectors": sum(s.misses for s in slices),
            "write_sectors": sum(s.writes for s in slices),
            "atomic_operations": sum(s.atomics for s in slices),
            "busy_cycles": sum(s.busy_cycles for s in slices),
            "queue_cycles": sum(s.queue_cycles for s in slices),
            "requests": sum(s.requests for s in slices),
            "slices": len(slices),
            # the kernel's written sectors still dirty in a write-back L2 when it ends (DRAM sees them
            # later); not the foreign lines of a warm start
            "dirty_bytes_at_end": sum(sl.kernel_dirty_sectors() for sl in slices) * cfg.l2.sector_size_bytes,
            "sector_bytes": cfg.l2.sector_size_bytes,
        }
        ctrl = dram.controllers
        dr = {
            "bytes_read": dram.bytes_read,
            "bytes_written": dram.bytes_written,
            "busy_cycles": sum(c.busy_cycles for c in ctrl),
            "queue_cycles": sum(c.queue_cycles for c in ctrl),
            "requests": sum(c.requests for c in ctrl),
            "controllers": len(ctrl),
            "peak_bytes_per_cycle": dram.peak_bytes_per_cycle,
        }
        overhead = round(cfg.launch.kernel_launch_overhead_ns * cfg.chip.clock_mhz / 1000.0)
        return cls(cycles=end, launch_overhead_cycles=overhead, clock_mhz=cfg.chip.clock_mhz,
                   subpartitions=cfg.sm.subpartitions, theoretical_occupancy=occ.to_dict(), sms=per_sm,
                   timeline=sorted(engine.timeline), l2=l2, dram=dr, warp_states=totals)
