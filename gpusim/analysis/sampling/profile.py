"""What a kernel is, before any of it is timed (steps 1-2 of docs/sampling.md): the static check for
addresses that come from loaded data, and a few whole blocks run on the functional executor alone
(their warp instructions, loop iterations, global bytes, mma, basic-block vectors and outputs), from
which the sampler plans its runs and bounds its extrapolation; and the hardware floor of the kernel's
work (`hardware_roofs`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.config import Config
from gpusim.functional.executor import Executor
from gpusim.isa.cfg import instruction_successors
from gpusim.isa.opcodes import MMA_DIMS, Unit
from gpusim.isa.program import EXIT_PC, Program
from gpusim.workloads.verify import compare

COUNT_ONLY = 1 << 62  # a loop cap that counts iterations without cutting any loop short
BBV_DIFFERENT = 0.05  # two blocks whose basic-block vectors differ by more than this (L1 of the shares) differ


MEMORY_OPS = ("ld", "st", "atom", "red", "cp", "ldmatrix")


def _addresses(ins) -> list[int]:
    """The registers an instruction's memory addresses are made from."""
    return [o.reg for o in (*ins.srcs, *ins.dsts) if o.kind == "addr" and o.reg >= 0]


def _tainted(program: Program, source, sink) -> list[int]:
    """The pcs where `sink(ins, tainted registers)` holds, by a forward dataflow over the control flow
    from the registers written by instructions where `source(ins)` holds (and from any register a
    tainted one flows into)."""
    instrs = program.instructions
    n = len(instrs)
    tainted_in: list[frozenset | None] = [None] * n
    tainted_in[0] = frozenset()
    work = [0]
    bad: set[int] = set()
    while work:
        pc = work.pop()
        ins = instrs[pc]
        t = set(tainted_in[pc])
        if sink(ins, t):
            bad.add(pc)
        reads = {o.reg for o in ins.srcs if o.kind in ("reg", "addr") and o.reg >= 0}
        dirty = source(ins) or bool(reads & t)
        for r in ins.regs_written():
            if dirty:
                t.add(r)
            elif ins.guard < 0:
                t.discard(r)  # a predicated write may leave the old (tainted) value
        out = frozenset(t)
        for s in instruction_successors(ins, n):
            if s == EXIT_PC:
                continue
            old = tainted_in[s]
            new = out if old is None else old | out
            if new != old:
                tainted_in[s] = new
                work.append(s)
    return sorted(bad)


def data_dependent_addresses(program: Program) -> list[int]:
    """The pcs of global memory instructions whose address depends on a value loaded from global
    memory (pointer chasing, gathers through an index array): such a kernel touches data the first
    blocks and loop iterations do not predict."""
    def source(ins):
        return ins.opcode in ("ld", "atom") and ins.space == "global"

    def sink(ins, t):
        return ins.opcode in ("ld", "st", "atom", "red") and ins.space == "global" and bool(set(_addresses(ins)) & t)

    return _tainted(program, source, sink)


def value_dependent(program: Program) -> list[int]:
    """The pcs whose timing may depend on the kernel's data: a branch, an exit or a memory access
    guarded by a predicate, or a memory access (any space) addressed by a register, that a loaded
    value (global, shared or local memory, or an atomic's result) flows into. Where there is none, the
    kernel's cycles are those of any data of the same shape (zeros, say): the timing model's latencies
    do not depend on values, only on which lanes run and which addresses they touch."""
    def source(ins):
        return (ins.opcode in ("ld", "atom", "ldmatrix") and ins.space != "param") or ins.opcode == "cp"

    def sink(ins, t):
        guarded = ins.guard >= 0 and ins.guard in t and (ins.opcode in ("bra", "exit") or ins.opcode in MEMORY_OPS)
        return guarded or (ins.opcode in MEMORY_OPS and ins.space != "param" and bool(set(_addresses(ins)) & t))

    return _tainted(program, source, sink)


class ZeroRng:
    """A stand-in for numpy's random Generator whose every draw is zeros of the asked shape and type
    (`np.zeros`: pages the host never touches until written): a workload's inputs of the right shapes
    at no cost, for a kernel whose timing does not depend on its data (`value_dependent`). A method it
    lacks raises AttributeError (the caller then draws the real inputs)."""

    @staticmethod
    def _zeros(size, dtype=np.float64):
        return np.zeros(() if size is None else size, dtype=dtype)

    def random(self, size=None, dtype=np.float64, out=None):
        return self._zeros(size, dtype)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        return self._zeros(size, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._zeros(size)

    def uniform(self, low=0.0, high=1.0, size=None):
        return self._zeros(size)

    def exponential(self, scale=1.0, size=None):
        return self._zeros(size)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return np.full(() if size is None else size, 0 if high is None else low, dtype=dtype)


@dataclass
class KernelProfile:
    """The whole kernel as a few whole blocks show it (`profile_kernel`)."""

    grid: int  # blocks of the launch
    blocks_per_wave: int  # B: resident blocks per SM x SMs
    rows: list[dict[str, int]]  # per block run whole: its id and its warp instructions
    trips: dict[int, int]  # per loop header pc: the most backward branches of one instance
    warp_instructions: float
    spread: float  # relative uncertainty of warp_instructions
    bytes_read: float
    bytes_written: float
    tensor_warp_instructions: float  # the kernel's mma warp instructions
    allocated_bytes: float = 0.0  # the workload's buffers
    bbv_distance: float = 0.0  # the largest L1 distance of a quartile block's basic-block vector from the first's
    stats: Any = field(default=None, repr=False)  # the profiled blocks' ExecStats

    def kernel_stats(self):
        """The profiled blocks' functional counters scaled to the kernel's warp instructions (an
        ExecStats: thread instructions, SIMT efficiency, divergent branches, requests, bytes)."""
        from dataclasses import fields, replace

        st = self.stats
        if st is None or not st.warp_instructions:
            return st
        f = self.warp_instructions / st.warp_instructions
        scaled = {x.name: round(getattr(st, x.name) * f) for x in fields(st)
                  if x.name not in ("warp_size", "by_unit", "per_pc")}
        by_unit = type(st.by_unit)({k: round(v * f) for k, v in st.by_unit.items()})
        return replace(st, **scaled, by_unit=by_unit, per_pc=None)

    @property
    def waves(self) -> float:
        return self.grid / self.blocks_per_wave

    @property
    def longest_loop(self) -> int:
        return max(self.trips.values(), default=0)

    @property
    def per_block(self) -> float:
        return self.warp_instructions / self.grid

    @property
    def footprint(self) -> float:
        """The kernel's distinct global data: what it reads and writes, at most its buffers' size (data
        read and written back, or read several times, counts once)."""
        moved = self.bytes_read + self.bytes_written
        return min(moved, self.allocated_bytes) if self.allocated_bytes > 0 else moved

    @property
    def dirty(self) -> float:
        """The fraction of the footprint that ends dirty (written), at most 1."""
        return min(1.0, self.bytes_written / self.footprint) if self.footprint > 0 else 0.0

    def fill_waves(self, l2_bytes: int) -> float:
        """The waves after which the kernel's data, spread evenly over its blocks, fills the L2 (inf when
        it has none)."""
        return self.waves * l2_bytes / self.footprint if self.footprint > 0 else math.inf


def profile_kernel(pl, cfg: Config, blocks_per_wave: int, max_steps: int | None, keep=None) -> KernelProfile:
    """Run whole blocks functionally (the first, the quartiles and the last, in one batch, which costs
    about what one block does), counting each one's warp instructions, the loops' iterations and its
    basic-block vector (`bbv_distance`: how far the quartiles' mix of instructions lies from the first
    block's, whose neighbours the sample simulates). The kernel's warp instructions and global bytes:
    the first and last blocks as themselves, the others as the quartiles' mean (bytes: the mean of
    all); the spread: half the range of the first block and the quartiles, relative to their mean (the
    last block is often a partial one). `keep(pl, ids)` sees the memory after the blocks ran."""
    G = pl.launch.num_blocks
    ids = sorted({0, G // 4, G // 2, (3 * G) // 4, G - 1})
    pl.restore()
    ex = Executor(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=cfg, block_ids=ids, loop_cap=COUNT_ONLY,
                  max_steps_per_warp=max_steps, record=True)
    bbvs = _block_vectors(ex, len(ids), len(pl.program))
    st = ex.stats
    if keep is not None:
        keep(pl, ids)  # (the whole blocks' outputs, before the inputs are brought back)
    pl.restore()
    counts = [int(c) for c in ex.block_warp_instructions]
    rows = [{"block": i, "warp_instructions": c} for i, c in zip(ids, counts, strict=True)]
    if len(ids) == G:
        total, spread = float(sum(counts)), 0.0
    else:
        inner = counts[1:-1] or counts[:1]
        total = counts[0] + counts[-1] + (G - 2) * sum(inner) / len(inner)
        typical = counts[:-1]
        mean = sum(typical) / len(typical)
        spread = (max(typical) - min(typical)) / mean / 2 if mean else 0.0
    per_block = G / len(ids)
    prof = KernelProfile(G, blocks_per_wave, rows, dict(sorted(ex.loop_trips.items())), total, spread,
                         st.global_bytes_read * per_block, st.global_bytes_written * per_block,
                         st.by_unit[Unit.TENSOR] * total / max(1, st.warp_instructions),
                         allocated_bytes=float(sum(size for _, size, _ in pl.memory.allocations)), stats=st)
    typical = bbvs[:-1] if len(ids) > 2 else bbvs  # (the last block is often a partial one)
    prof.bbv_distance = max((float(np.abs(v - typical[0]).sum()) for v in typical[1:]), default=0.0)
    return prof


def _block_vectors(ex: Executor, blocks: int, pcs: int) -> np.ndarray:
    """Run the executor's blocks (one batch) through their instruction streams and return each block's
    basic-block vector: the share of its warp instructions at each pc (the executions of its basic
    blocks, instruction by instruction), one row a block in execution order."""
    counts = np.zeros(blocks * pcs, dtype=np.int64)
    for src in ex.stream_batches():
        wpb = src.wpb
        while (chunk := src.advance()) is not None:
            warp = np.repeat(np.arange(chunk.off.size - 1), np.diff(chunk.off))
            block = src.first_block + warp // wpb
            counts += np.bincount(block * pcs + chunk.pcs, minlength=blocks * pcs)
    counts = counts.reshape(blocks, pcs).astype(np.float64)
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)


def block_instructions(pl, cfg: Config, block: int, cap: dict[int, int] | None, max_steps: int | None) -> float:
    """Warp instructions of one block with its loops capped at `cap` (functional only)."""
    pl.restore()
    ex = Executor(pl.program, pl.launch, dict(pl.args), pl.memory, cfg=cfg, block_ids=[block], loop_cap=cap,
                  max_steps_per_warp=max_steps)
    return float(ex.run().warp_instructions)


def check_blocks(wl, p: dict[str, Any], inputs: dict[str, Any], written: dict[str, Any]) -> dict[str, Any]:
    """Verify a sampled kernel where it was run whole: the blocks `profile_kernel` ran with their loops
    uncut (first, quartiles, last) wrote their share of the outputs; every element of an output buffer
    they changed is compared with the numpy reference, within the workload's tolerance. The rest of
    the outputs was never computed (a sample's runs stop loops early): `elements` of `of` checked. A
    kernel with global atomics (a histogram's bins, a reduction's total) adds every block's share into
    the same elements, which hold the reference's values only once all blocks have run: not checked."""
    blocks = ", ".join(str(b) for b in written["blocks"])
    shared = [i.line for i in wl.program.instructions if i.opcode in ("atom", "red") and i.space == "global"]
    if shared:
        return {"verified": None, "elements": 0, "of": 0, "blocks": list(written["blocks"]),
                "message": f"not checked: the blocks add into shared outputs (global atomics, line {shared[0]}), "
                           f"complete only once every block has run (blocks {blocks} ran whole)"}
    expected = wl.reference(p, inputs)  # (it gets copies)
    checked = total = 0
    bad: list[str] = []
    for name, exp in expected.items():
        init = np.asarray(inputs[name]).reshape(-1)
        got = written["outputs"][name].reshape(-1)
        exp = np.asarray(exp).reshape(-1)
        changed = ~((got == init) | (np.isnan(got) & np.isnan(init)) if got.dtype.kind in "fc" else got == init)
        total += got.size
        checked += int(changed.sum())
        miss = compare({name: got[changed]}, {name: exp[changed]}, **wl.tolerance)
        if miss:
            m = miss[name]
            idx = int(np.flatnonzero(changed)[m["first_indices"][0]])
            bad.append(f"output '{name}' differs from the reference at {m['count']} of the {int(changed.sum()):,} "
                       f"elements the whole blocks wrote; first at flat index {idx}: got {m['got'][0]!r}, "
                       f"expected {m['expected'][0]!r}")
    if bad:
        verified, message = False, "; ".join(bad) + f" (blocks {blocks}, run whole)"
    elif checked == 0:
        verified, message = None, f"blocks {blocks}, run whole, changed no output element: nothing to verify"
    else:
        verified, message = True, (f"{checked:,} of {total:,} output elements (those of blocks {blocks}, run whole) "
                                   "match the reference")
    return {"verified": verified, "elements": checked, "of": total, "blocks": list(written["blocks"]),
            "message": message}


def hardware_roofs(cfg: Config, program, *, grid: int, warp_instructions: float, tensor_warp_instructions: float,
                   dram_bytes: float) -> dict[str, float]:
    """The least cycles the kernel's work takes at each unit's peak, on the SMs its grid can occupy (at
    most one a block): "issue", its warp instructions at `scheduler.issue_width` a cycle per sub-partition;
    "tensor", its mma holding each sub-partition's tensor core ceil(M N K / FMA a cycle of the inputs'
    precision) cycles (the shortest of the kernel's mma, for all of them); "DRAM", `dram_bytes` at
    `Config.dram_bytes_per_cycle()`. `model.floor_estimate` holds an estimate to the largest."""
    parts = min(cfg.chip.sm_count, grid) * cfg.sm.subpartitions
    roofs = {"issue": warp_instructions / (parts * cfg.scheduler.issue_width)}
    if tensor_warp_instructions > 0:
        tensor = cfg.units["tensor"]
        held = min(math.ceil(math.prod(MMA_DIMS[next(q for q in i.quals if q in MMA_DIMS)])
                             / tensor.fma_per_cycle(i.types[1]))
                   for i in program.instructions if i.opcode == "mma")
        roofs["tensor"] = tensor_warp_instructions * held / parts
    if dram_bytes > 0:
        roofs["DRAM"] = dram_bytes / cfg.dram_bytes_per_cycle()
    return roofs


def kernel_roofs(cfg: Config, program, prof: KernelProfile) -> dict[str, float]:
    """`hardware_roofs` of the profiled kernel; its DRAM share is the bytes it must read at least once
    (its distinct data less what it writes)."""
    return hardware_roofs(cfg, program, grid=prof.grid, warp_instructions=prof.warp_instructions,
                          tensor_warp_instructions=prof.tensor_warp_instructions,
                          dram_bytes=max(0.0, min(prof.bytes_read, prof.footprint - prof.bytes_written)))


__all__ = ["COUNT_ONLY", "KernelProfile", "block_instructions", "check_blocks", "data_dependent_addresses",
           "ZeroRng", "hardware_roofs", "kernel_roofs", "profile_kernel", "value_dependent"]
