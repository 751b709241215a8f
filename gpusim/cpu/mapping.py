"""How a SIMT kernel runs on a CPU, the way an SPMD compiler (ISPC, OpenMP SIMD) runs it:

- a block is one task on one hardware thread; its threads run as a loop of SIMD groups, each group the
  functional executor's warp (`sm.warp_size` = `cpu.simd_lanes` lanes under one vector mask);
- `bar.sync` splits the block's code into regions: the loop runs every SIMD group through one region
  before any starts the next (loop fission at barriers, as CPU OpenCL compilers do);
- blocks are split over the cores x smt_threads hardware threads in contiguous chunks (OpenMP's static
  schedule), hardware thread h on core h mod cores (one thread per core before any core runs two);
- a divergent branch is the vector mask: the SIMD group runs both sides with lanes masked off, exactly the
  stream the functional executor records.

`Trace` collects, batch by batch as the functional executor runs, what the interval model needs per
hardware thread: instruction counts by pipe, memory operations (vector, scalar or gather), the global
cache lines each access touches in the thread's order, and the conditional branches' outcomes."""

from __future__ import annotations

import math

import numpy as np

from gpusim.cpu.kernel import CLASSES, FP64, GLOBAL, KernelInfo
from gpusim.functional.executor import ExecResult, Executor


class Trace:
    """Per hardware thread: counts (`counts[h, class]`, `vector_mem[h, load/store]`, `gather_lanes[h]`),
    and, as lists of arrays, the global line accesses and the conditional branches in thread order."""

    def __init__(self, info: KernelInfo, cores: int, smt: int, blocks: int, line_bytes: int):
        self.info = info
        self.cores, self.threads = cores, cores * smt
        self.chunk = max(1, math.ceil(blocks / self.threads))  # blocks per hardware thread
        self.used = min(self.threads, math.ceil(blocks / self.chunk))
        self.shift = int(line_bytes).bit_length() - 1
        H = self.threads
        self.counts = np.zeros((H, CLASSES), dtype=np.int64)
        self.instructions = np.zeros(H, dtype=np.int64)
        self.vector_mem = np.zeros((H, 2), dtype=np.int64)  # vector or scalar loads, stores
        self.gather_lanes = np.zeros(H, dtype=np.int64)  # elements moved by gathers and scatters
        self.seq = np.zeros(H, dtype=np.int64)  # instructions issued so far, per thread
        self.lines: list[tuple[np.ndarray, ...]] = []  # (thread, seq, pc, line, store)
        self.branches: list[tuple[np.ndarray, ...]] = []  # (thread, seq, pc, taken)

    def core_of(self, h: np.ndarray) -> np.ndarray:
        return h % self.cores

    def add_batch(self, ch, first_block: int, wpb: int, ws: int) -> None:
        """One batch's streams (a StreamChunk grouped by warp)."""
        info = self.info
        off = ch.off
        W = off.size - 1
        count = np.diff(off)
        if not count.sum():
            return
        pcs = ch.pcs.astype(np.int64)
        warp = np.repeat(np.arange(W), count)
        pos = np.arange(pcs.size) - off[warp]
        block = first_block + warp // wpb
        bar = info.barrier[pcs].astype(np.int64)
        cs = np.cumsum(bar)
        before = np.append(cs - bar, 0)  # barriers before each instruction, over the whole batch
        region = before[:-1] - before[off[:-1]][warp]  # ... within its SIMD group
        order = np.lexsort((pos, warp % wpb, region, block))
        h = block // self.chunk
        hs = h[order]
        starts = np.searchsorted(hs, np.arange(self.threads))
        rank = np.empty(pcs.size, dtype=np.int64)
        rank[order] = np.arange(pcs.size) - starts[hs] + self.seq[hs]
        seq = rank  # per instruction: its place in its hardware thread's order
        per_h = np.bincount(h, minlength=self.threads)
        cls = info.cls[pcs]
        self.counts += np.bincount(h * CLASSES + cls, minlength=self.threads * CLASSES).reshape(-1, CLASSES)
        self.counts[:, FP64] += np.bincount(h[cls == FP64], minlength=self.threads)  # 8 fp64 lanes: 2 vectors
        self.instructions += per_h
        # conditional branches: taken if the SIMD group's next instruction is the target
        cb = np.flatnonzero(info.cond_branch[pcs])
        if cb.size:
            last = cb == off[warp[cb] + 1] - 1
            nxt = np.where(last, -1, pcs[np.minimum(cb + 1, pcs.size - 1)])
            self.branches.append((h[cb], seq[cb], pcs[cb], nxt == info.target[pcs[cb]]))
        acc = ch.accesses
        if acc is not None and acc.rows.size:
            self._memory(acc, off, h, seq, ws)
        self.seq += per_h

    def _memory(self, acc, off, h_of, seq_of, ws: int) -> None:
        info = self.info
        rows = acc.rows
        at = off[acc.warp] + acc.index  # each access's instruction in the batch's arrays
        h, seq, pcs = h_of[at], seq_of[at], acc.pcs.astype(np.int64)
        active = rows >= 0
        lanes = active.sum(axis=1)
        big = np.iinfo(np.int64).max
        lo = np.where(active, rows, big).min(axis=1)
        hi = np.where(active, rows, -1).max(axis=1)
        # a vector access: the active lanes' elements lie within one vector's span; else a gather
        vector = (hi - lo) < ws * info.elem_bytes[pcs]
        store = info.stores[pcs]
        load = info.loads[pcs]
        for kind, sel in ((0, load), (1, store)):
            self.vector_mem[:, kind] += np.bincount(h[sel & vector], minlength=self.threads)
            self.gather_lanes += np.bincount(h[sel & ~vector], weights=lanes[sel & ~vector],
                                             minlength=self.threads).astype(np.int64)
        g = info.space[pcs] == GLOBAL
        if not g.any():
            return
        r = rows[g] >> self.shift
        r = np.where(active[g], r, big)
        r.sort(axis=1)
        first = np.ones_like(r, dtype=bool)
        first[:, 1:] = r[:, 1:] != r[:, :-1]
        keep = first & (r != big)
        row_of = np.nonzero(keep)[0]
        gi = np.flatnonzero(g)[row_of]
        self.lines.append((h[gi], seq[gi], pcs[gi], r[keep], store[gi] & ~load[gi]))


def run_traced(trace_factory):
    """An executor for `Workload.run(executor=...)`: the functional executor, recording, feeding each
    finished batch to the Trace that `trace_factory(program, launch, cfg)` makes. The trace is left on
    the returned function's `trace` attribute."""

    def executor(program, launch, args, memory, *, cfg=None, max_steps_per_warp=None):
        ex = Executor(program, launch, args, memory, cfg=cfg, max_steps_per_warp=max_steps_per_warp, record=True)
        trace = executor.trace = trace_factory(program, launch, cfg)
        for b in ex.batches():
            ch = b.rec.flush(b.W, np.ones(b.W, dtype=bool))
            trace.add_batch(ch, b.first_block, b.wpb, b.ws)
        return ExecResult(program, launch, ex.stats)

    executor.trace = None
    return executor


__all__ = ["Trace", "run_traced"]
