"""The interval model (Sniper's approach, in closed form per hardware thread): a core dispatches
`dispatch_width` instructions a cycle between miss events, and the time of a run is that base plus what
the miss events add:

1. base: instructions / dispatch_width, or the busiest pipe's work if more (FMA pipes, integer pipes,
   load and store ports, gathers at gather_lanes_per_cycle, transcendental sequences on the FMA pipes);
2. branch mispredictions: each costs branch_mispredict_penalty_cycles (the front end refills);
3. long-latency loads (beyond L1): a miss exposes its latency beyond what the reorder buffer hides
   (rob_entries / dispatch_width cycles of independent work), and misses that fall in one ROB window
   overlap: memory-level parallelism = misses per ROB window, at most l1_fill_buffers and
   load_queue_entries. Store misses wait in the store queue and overlap store_queue_entries deep;
4. serial loads (a pointer chase) overlap nothing: each pays its whole latency.

SMT siblings share the core: the core's time is the longest of its threads' own times and of the summed
pipe work of its threads. A core's lines from the LLC and DRAM (prefetched ones too) also take at least
their latency over l2_outstanding_misses each (the core's own bandwidth), and the chip's DRAM traffic at
least its bytes over the channels' sustained bandwidth."""

from __future__ import annotations

import numpy as np

from gpusim.cpu.caches import DRAM, L1, L2, LLC
from gpusim.cpu.kernel import FP, FP64, INT, SFU


def latencies(cpu, clock_mhz: float) -> np.ndarray:
    """Load-to-use cycles of L1, L2, LLC, DRAM."""
    return np.array([cpu.l1_latency_cycles, cpu.l2_latency_cycles, cpu.llc_latency_cycles,
                     cpu.dram_latency_ns * clock_mhz / 1000.0])


def thread_cycles(cpu, trace, level, prefetched, mispredicts, lat) -> dict[str, np.ndarray]:
    """Per hardware thread: base (dispatch or pipes), branch, memory and chain cycles, and the pipe work
    that SMT siblings share."""
    H = trace.threads
    c = trace.counts
    n = trace.instructions  # one instruction per SIMD-group operation
    pipes = np.stack([
        (c[:, FP] + c[:, FP64]) / cpu.fma_ports + c[:, SFU] * cpu.sfu_cycles / cpu.fma_ports,
        c[:, INT] / cpu.alu_ports,
        trace.vector_mem[:, 0] / cpu.load_ports + trace.gather_lanes / cpu.gather_lanes_per_cycle,
        trace.vector_mem[:, 1] / cpu.store_ports,
    ])
    dispatch = n / cpu.dispatch_width
    base = np.maximum(dispatch, pipes.max(axis=0))
    branch = mispredicts * cpu.branch_mispredict_penalty_cycles
    memory = np.zeros(H)
    chain = np.zeros(H)
    fills = np.zeros(H)
    if trace.lines:
        h, _, pcs, _, store = (np.concatenate(a) for a in zip(*trace.lines, strict=True))
        served = np.where(prefetched & (level >= LLC), L2, level)  # the latency an access waits for
        cost = lat[served]
        hide = cpu.rob_entries / cpu.dispatch_width
        serial = trace.info.serial[pcs]
        chain = np.bincount(h[serial], weights=cost[serial], minlength=H)
        far = (level >= LLC)
        fills = np.bincount(h[far], weights=lat[level[far]], minlength=H) / cpu.l2_outstanding_misses
        for is_store, depth in ((False, min(cpu.l1_fill_buffers, cpu.load_queue_entries)),
                                (True, cpu.store_queue_entries)):
            sel = ~serial & (served > L1) & (store == is_store)
            misses = np.bincount(h[sel], minlength=H)
            window = np.maximum(1.0, misses * cpu.rob_entries / np.maximum(n, 1))
            mlp = np.minimum(window, depth)
            exposed = np.bincount(h[sel], weights=np.maximum(0.0, cost[sel] - hide), minlength=H)
            memory += exposed / mlp
    return {"base": base, "dispatch": dispatch, "pipes": pipes, "branch": branch, "memory": memory,
            "chain": chain, "fills": fills}


def core_cycles(parts: dict[str, np.ndarray], trace) -> np.ndarray:
    """Per core: the longest thread, the SMT siblings' shared pipe and dispatch work, the core's fills."""
    own = parts["base"] + parts["branch"] + parts["memory"] + parts["chain"]
    core = trace.core_of(np.arange(trace.threads))
    C = trace.cores
    longest = np.zeros(C)
    np.maximum.at(longest, core, own)
    shared = np.stack([np.bincount(core, weights=parts["dispatch"], minlength=C)]
                      + [np.bincount(core, weights=p, minlength=C) for p in parts["pipes"]]).max(axis=0)
    fills = np.bincount(core, weights=parts["fills"], minlength=C)
    return np.maximum.reduce([longest, shared, fills])


def dram_traffic(cpu, trace, level) -> tuple[float, float, float]:
    """(bytes read from DRAM, bytes of lines written, bytes of distinct lines touched). Reads are the
    accesses served by DRAM (write-allocate fills of store misses included); the written lines go back to
    DRAM when the footprint outgrows the LLC (a write-back LLC keeps smaller dirty footprints)."""
    if not trace.lines:
        return 0.0, 0.0, 0.0
    line = np.concatenate([a[3] for a in trace.lines])
    store = np.concatenate([a[4] for a in trace.lines])
    written = np.unique(line[store]).size if store.any() else 0
    b = cpu.line_bytes
    return float((level == DRAM).sum() * b), float(written * b), float(np.unique(line).size * b)


def dram_bytes(cpu, reads: float, written: float, footprint: float) -> float:
    """DRAM traffic: the reads, and the written lines once the footprint outgrows the LLC."""
    return reads + (written if footprint > cpu.llc_bytes else 0.0)


__all__ = ["DRAM", "INT", "L1", "L2", "LLC", "core_cycles", "dram_bytes", "dram_traffic", "latencies", "thread_cycles"]
