"""`simulate_cpu`: a workload on a CPU config (one with a `cpu:` section): the functional executor runs it
with the CPU's SIMD width as its warp (values verified against the workload's reference), the mapping
(`mapping.py`) orders each hardware thread's SIMD-group instructions, the caches (`caches.py`), the branch
predictor (`branch.py`) and the interval model (`core.py`) turn them into cycles per core; the kernel
takes the slowest core's cycles, or its DRAM traffic at the channels' sustained bandwidth if longer."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusim.config.schema import Config
from gpusim.cpu import branch, caches, core
from gpusim.cpu.energy import CpuActivity, CpuEnergy, cpu_energy
from gpusim.cpu.kernel import FP, FP64, SFU, analyse
from gpusim.cpu.mapping import Trace, run_traced
from gpusim.errors import ConfigError
from gpusim.workloads import load_workload
from gpusim.workloads.loader import Workload


@dataclass(frozen=True, slots=True)
class CpuResult:
    """One kernel on a CPU: its seconds (launch excluded), the slowest core's cycles, the DRAM bound,
    and where the time went (summed over hardware threads, in cycles)."""

    config: str
    workload: str
    params: dict[str, Any]
    cycles: float
    seconds: float
    core_seconds: float
    dram_seconds: float
    dram_bytes: float
    dram_read_bytes: float  # lines DRAM served (fills of store misses included)
    written_bytes: float  # distinct lines written
    footprint_bytes: float  # distinct lines touched
    instructions: int
    blocks: int
    threads_used: int
    mispredictions: int
    levels: dict[str, int]  # global line accesses served by L1, L2, LLC, DRAM
    prefetched: int
    breakdown: dict[str, float]  # base, branch, memory, chain cycles summed over threads
    verified: bool
    energy: CpuEnergy | None = None  # the package's and DIMMs' energy (a config with cpu_power:), else None

    @property
    def energy_j(self) -> float | None:
        return None if self.energy is None else self.energy.energy_j

    @property
    def average_power_w(self) -> float | None:
        return None if self.energy is None else self.energy.average_power_w

    @property
    def bound(self) -> str:
        return "dram" if self.dram_seconds > self.core_seconds else "core"


_RUNS: dict[tuple, CpuResult] = {}


def dram_bandwidth(cpu) -> float:
    """Sustained DRAM bytes per second: the channels' peak times the streaming efficiency."""
    return cpu.dram_channels * cpu.dram_channel_gbps * 1e9 * cpu.dram_efficiency


def cpu_spec(cfg: Config):
    if cfg.cpu is None:
        raise ConfigError(f"config {cfg.name!r} has no cpu: section: the CPU model times CPU configs only "
                          f"(cpu_8core, cpu_64core)")
    return cfg.cpu


def simulate_cpu(workload: Workload | str, cfg: Config, **params: Any) -> CpuResult:
    """Run and time `workload` at `params` on CPU config `cfg` (kept for the session, per config and
    parameters)."""
    cpu = cpu_spec(cfg)
    wl = workload if isinstance(workload, Workload) else load_workload(workload)
    p = wl.params(params)
    key = (str(wl.folder), hashlib.sha256(json.dumps(cfg.to_dict(), sort_keys=True).encode()).hexdigest(),
           tuple(sorted(p.items())))
    if key in _RUNS:
        return _RUNS[key]
    info = analyse(wl.program)
    executor = run_traced(lambda program, launch, c: Trace(info, cpu.cores, cpu.smt_threads, launch.num_blocks,
                                                           cpu.line_bytes))
    run = wl.run(p, cfg, executor=executor)
    run.check()
    result = _time(cfg, wl.name, p, executor.trace, run.launch.num_blocks)
    _RUNS[key] = result
    return result


def _time(cfg: Config, name: str, params: dict, trace: Trace, blocks: int) -> CpuResult:
    cpu = cfg.cpu
    H = trace.threads
    lat = core.latencies(cpu, cfg.chip.clock_mhz)
    threads = np.arange(H)
    active = np.minimum(trace.used, H)
    on_core = np.bincount(trace.core_of(threads[:active]), minlength=cpu.cores)
    if trace.lines:
        h, seq, pcs, line, _ = (np.concatenate(a) for a in zip(*trace.lines, strict=True))
        sharing = np.maximum(on_core[trace.core_of(threads)], 1)  # per thread: threads on its core
        level, prefetched = caches.classify(h, seq, pcs, line, threads_on_core=sharing, cpu=cpu,
                                            active_threads=int(active))
    else:
        level, prefetched = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    if trace.branches:
        bh, bs, bp, bt = (np.concatenate(a) for a in zip(*trace.branches, strict=True))
        missed = branch.mispredictions(bh, bs, bp, bt, trace.info.target, H)
    else:
        missed = np.zeros(H, dtype=np.int64)
    parts = core.thread_cycles(cpu, trace, level, prefetched, missed, lat)
    cycles = float(core.core_cycles(parts, trace).max())
    clock = cfg.chip.clock_mhz * 1e6
    reads, written, footprint = core.dram_traffic(cpu, trace, level)
    dbytes = core.dram_bytes(cpu, reads, written, footprint)
    dram_s = dbytes / dram_bandwidth(cpu)
    core_s = cycles / clock
    counts = np.bincount(level, minlength=4) if level.size else np.zeros(4, dtype=np.int64)
    energy = None
    if cfg.cpu_power is not None:
        c = trace.counts.sum(axis=0)
        act = CpuActivity(instructions=float(trace.instructions.sum()),
                          vector_fp_ops=float(c[FP] + c[FP64] + c[SFU] * cpu.sfu_cycles),
                          l1_accesses=float(trace.vector_mem.sum() + trace.gather_lanes.sum()),
                          l2_lines=float(counts[1:].sum()), llc_lines=float(counts[2:].sum()), dram_bytes=dbytes,
                          cores=int(min(cpu.cores, active)))
        energy = cpu_energy(cfg.cpu_power, act, max(core_s, dram_s))
    return CpuResult(cfg.name, name, dict(params), cycles, max(core_s, dram_s), core_s, dram_s, dbytes, reads, written,
                     footprint,
                     int(trace.instructions.sum()), blocks, int(active), int(missed.sum()),
                     dict(zip(("l1", "l2", "llc", "dram"), (int(x) for x in counts), strict=True)),
                     int(prefetched.sum()),
                     {k: float(np.sum(parts[k])) for k in ("base", "branch", "memory", "chain", "fills")}, True,
                     energy)
