"""Hand-built counters for the stats tests: a KernelTiming with round numbers whose every metric is
worked out by hand in test_metrics.py."""

from __future__ import annotations

from gpusim.functional.stats import ExecStats
from gpusim.timing import KernelTiming, SMCounters
from gpusim.timing.decode import PORTS, WARP_STATES


def sm(index: int, **kw) -> SMCounters:
    """An SMCounters with everything zero unless given; `warp_states`/`unit_busy` may be partial."""
    states = dict.fromkeys(WARP_STATES, 0) | kw.pop("warp_states", {})
    busy = dict.fromkeys(PORTS, 0) | kw.pop("unit_busy", {})
    fields = dict(sm=index, gpc=index % 2, issued=0, active_cycles=0, scheduler_active_cycles=0, eligible_sum=0,
                  warp_cycles=sum(states.values()), warp_states=states, unit_busy=busy, blocks=0, warps=0,
                  max_warps_resident=0, l1_requests=0, l1_hit_sectors=0, l1_miss_sectors=0, l1_mshr_full_cycles=0,
                  shared_requests=0, shared_wavefronts=0, shared_ideal_wavefronts=0)
    fields.update(kw)
    return SMCounters(**fields)


def base_sms() -> list[SMCounters]:
    """SM 0 and SM 1 ran blocks, SM 2 stayed idle."""
    return [
        sm(0, issued=400, active_cycles=1000, scheduler_active_cycles=4000, eligible_sum=1200,
           warp_states={"selected": 400, "long_scoreboard": 5000, "wait": 1600, "math_pipe_throttle": 1000},
           unit_busy={"fp32": 800, "int": 400, "ldst": 200}, blocks=2, warps=8, max_warps_resident=8,
           l1_requests=50, l1_hit_sectors=30, l1_miss_sectors=70, l1_mshr_full_cycles=5,
           shared_requests=10, shared_wavefronts=40, shared_ideal_wavefronts=10),
        sm(1, issued=100, active_cycles=500, scheduler_active_cycles=1000, eligible_sum=150,
           warp_states={"selected": 100, "long_scoreboard": 1500, "drain": 400},
           unit_busy={"fp32": 100, "int": 100}, blocks=1, warps=4, max_warps_resident=4,
           l1_requests=10, l1_hit_sectors=10, l1_miss_sectors=10),
        sm(2),
    ]


def timing(sms: list[SMCounters] | None = None, **kw) -> KernelTiming:
    """1000 cycles at 1000 MHz (1 cycle = 1 ns), 200 cycles of launch overhead, three blocks; L2 of 4
    slices, DRAM of 2 controllers with a peak of 8 bytes/cycle (8 GB/s). `l2`/`dram` entries in `kw` are
    merged into the defaults."""
    l2 = {"hit_sectors": 30, "miss_sectors": 70, "write_sectors": 20, "atomic_operations": 0, "busy_cycles": 800,
          "queue_cycles": 0, "requests": 60, "slices": 4, "sector_bytes": 32} | kw.pop("l2", {})
    dram = {"bytes_read": 2240, "bytes_written": 640, "busy_cycles": 1500, "queue_cycles": 0, "requests": 90,
            "controllers": 2, "peak_bytes_per_cycle": 8.0} | kw.pop("dram", {})
    fields = dict(cycles=1000, launch_overhead_cycles=200, clock_mhz=1000.0, subpartitions=4,
                  theoretical_occupancy={"occupancy": 0.5, "active_warps_per_sm": 32, "max_warps_per_sm": 64},
                  sms=base_sms() if sms is None else sms, timeline=[(0, 0, 0, 600), (1, 0, 100, 1000), (2, 1, 0, 500)],
                  l2=l2, dram=dram)
    fields.update(kw)
    return KernelTiming(**fields)


def quiet_memory() -> dict:
    """kw for timing(): DRAM and L2 nearly idle (5% busy)."""
    return {"dram": {"bytes_read": 320, "bytes_written": 0, "busy_cycles": 100},
            "l2": {"busy_cycles": 200}}


def exec_stats(warp_instructions: int = 500, simt: float = 1.0, divergent: int = 0) -> ExecStats:
    return ExecStats(blocks=3, warps=12, threads=384, warp_instructions=warp_instructions,
                     thread_instructions=round(warp_instructions * 32 * simt), divergent_branches=divergent)
