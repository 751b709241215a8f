"""The analytical cost model: a roofline over the kernel's counted work (lower.Work) with occupancy
and latency hiding, in SM cycles, from the config alone (no simulation).

With B blocks of W warps, S SMs, A blocks resident per SM (the occupancy calculator: warps, registers,
shared memory, blocks), P sub-partitions issuing `issue_width` instructions a cycle, a unit class u
holding a warp instruction for c_u = max(1, 32 / lanes_u) cycles, and a thread running I_u
instructions of class u (I in all; an mma holds the tensor unit F_p / R_p cycles, its multiply-adds F_p
of precision p over the config's units.tensor.<p>_fma_per_cycle R_p, from Work.tensor_fma):

    blocks per SM   b = ceil(B / S)              (wave quantisation: the busiest SM sets the time)
    waves           w = ceil(b / A);   resident warps per sub-partition  v = ceil(min(b, A) W / P)
    chain           = sum_u I_u c_u + global_trips L_mem + shared_trips L_shared + barriers L_sync
                      (one warp alone: its instructions, and the latencies it waits for;
                      L_mem = l2.hit_latency_cycles + dram.latency_cycles, L_shared =
                      shared_memory.latency_cycles, L_sync = units.sync.latency_cycles + L_shared)
    throughput      = v max(I / issue_width, max_u I_u c_u)   (the sub-partition's issue slots or busiest unit)
    compute         = w max(chain, throughput)   (latency-bound with few warps, throughput-bound with many)
    dram            = dram_bytes / (dram.bandwidth_gbps x dram.efficiency / clock GHz)
    l2              = (loads reaching L2 + store bytes) / (l2.slices x l2.slice_bandwidth_bytes_per_cycle),
                      loads reaching L2 = unique_load_bytes if l1.caches_global_loads else load_bytes
    memory          = max(dram, l2)
    kernel cycles   = max(compute, memory) + b x launch.block_dispatch_cycles

max(compute, memory) is the roofline (FLOP-side and byte-side times, perfectly overlapped); occupancy and
latency hiding enter through v and w: a wave of few warps runs at the speed of one warp's dependent
chain, a wave of many at the speed of the issue slots."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from gpusim.analysis import occupancy
from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.kernel import Kernel
from gpusim.config import Config


@dataclass(frozen=True, slots=True)
class Terms:
    """The model's terms for one kernel on one config, in cycles (see the module docstring)."""

    chain: float
    throughput: float
    waves: int
    memory: float
    dispatch: float
    occupancy: float
    limiter: str

    @property
    def compute(self) -> float:
        return self.waves * max(self.chain, self.throughput)

    @property
    def cycles(self) -> float:
        return max(self.compute, self.memory) + self.dispatch

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"compute": self.compute}


def terms(kernel: Kernel, cfg: Config) -> Terms:
    """The analytical terms of `kernel` on `cfg`; CompilerError when no block of it fits on an SM."""
    launch, work, sm = kernel.launch, kernel.work, cfg.sm
    occ = occupancy(cfg, launch.threads_per_block, kernel.program.regs_per_thread, kernel.program.shared_bytes)
    if occ.active_blocks_per_sm == 0:
        raise CompilerError(f"kernel {kernel.name} cannot run on {cfg.name}: {occ.reason}")
    per_sm = math.ceil(launch.num_blocks / cfg.chip.sm_count)
    resident = min(per_sm, occ.active_blocks_per_sm)
    warps = math.ceil(resident * launch.warps_per_block(sm.warp_size) / sm.subpartitions)
    held = {u: n * max(1.0, sm.warp_size / cfg.units[u.lower()].lanes_per_subpartition)
            for u, n in work.instructions.items()}
    if work.tensor_fma:  # the tensor core's rate for each precision, not its lanes
        tensor = cfg.units["tensor"]
        held["TENSOR"] = sum(f / tensor.fma_per_cycle(p) for p, f in work.tensor_fma.items())
    shared = cfg.shared_memory.latency_cycles
    chain = (sum(held.values()) + work.global_trips * (cfg.l2.hit_latency_cycles + cfg.dram.latency_cycles)
             + work.shared_trips * shared + work.barriers * (cfg.units["sync"].latency_cycles + shared))
    throughput = warps * max(sum(work.instructions.values()) / cfg.scheduler.issue_width, max(held.values()))
    dram_per_cycle = cfg.dram_bytes_per_cycle()
    to_l2 = (work.unique_load_bytes if cfg.l1.caches_global_loads else work.load_bytes) + work.store_bytes
    memory = max(work.dram_bytes / dram_per_cycle, to_l2 / (cfg.l2.slices * cfg.l2.slice_bandwidth_bytes_per_cycle))
    return Terms(chain, throughput, math.ceil(per_sm / occ.active_blocks_per_sm), memory,
                 per_sm * cfg.launch.block_dispatch_cycles, occ.occupancy, occ.limiter)


class AnalyticalCost(CostModel):
    """Roofline with occupancy and latency hiding (module docstring); instant."""

    name = "analytical"

    def kernel_cycles(self, kernel: Kernel, cfg: Config) -> tuple[float, dict[str, Any]]:
        t = terms(kernel, cfg)
        return t.cycles, t.as_dict()
