"""A model of what NVIDIA's ptxas does to a PTX-like kernel before the GPU runs it: gpusim's `.sasm` and
nvcc's PTX are both in program order, as written, and a GPU never runs that order (docs/isa.md,
"The ptxas model"). `ptxas(program, cfg)` is a Program -> Program pass that preserves every value; the
functional executor runs what it returns, and so do the timing model, the occupancy calculation and the
sampler (`Workload.for_config`, `gpusim.simulate(ptxas_model=False)` to turn it off).

The passes, in order, one file each:
1. fold.py: moves and constants folded into operands (copy propagation, WARP_SZ as the config's warp
   size, a power-of-two div/rem/mul as a shift or mask, dead code removed);
2. unroll.py: counted inner loops unrolled 4x (a main loop entered only while 4 iterations remain, the
   original loop for the rest), iteration-local registers renamed in the copies;
3. offsets.py: constant increments of an address register folded into the following addresses;
4. fold.py again (what the unrolled copies leave); ifconvert.py: a short forward branch around
   straight-line code as that code predicated; select.py: an operation whose result a selp picks
   against the value it replaces, as one predicated operation; iadd3.py: two dependent integer adds as
   one add3;
5. schedule.py: a list scheduler over each basic block (loads and SFU operations early, memory
   operations never across a store, atomic, barrier, fence or warp-synchronous operation).
Every pass leaves a kernel it does not recognise as it is."""

from __future__ import annotations

from gpusim.isa.program import Program
from gpusim.isa.ptxas.code import Code
from gpusim.isa.ptxas.fold import fold
from gpusim.isa.ptxas.iadd3 import fuse_adds
from gpusim.isa.ptxas.ifconvert import if_convert
from gpusim.isa.ptxas.offsets import fold_increments
from gpusim.isa.ptxas.schedule import schedule
from gpusim.isa.ptxas.select import predicate_selects
from gpusim.isa.ptxas.unroll import unroll_loops

__all__ = ["ptxas"]


def ptxas(program: Program, cfg) -> Program:
    """`program` as the ptxas model compiles it for `cfg` (a gpusim Config: the warp size that WARP_SZ
    becomes, the latencies the scheduler weighs). A CPU config (`cfg.cpu`) gets the program as it is."""
    if getattr(cfg, "cpu", None) is not None:
        return program
    key = (program, program.nounroll, cfg.hash())
    out = _CACHE.get(key)
    if out is None:
        if len(_CACHE) >= CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        out = _CACHE[key] = _compile(program, cfg)
    return out


CACHE_SIZE = 64  # compiled kernels kept (a validation run compiles each microbenchmark once per config)
_CACHE: dict[tuple[Program, frozenset[int], str], Program] = {}


def _compile(program: Program, cfg) -> Program:
    prog = fold(program, cfg.sm.warp_size)
    prog = unroll_loops(prog)
    prog = fold_increments(prog)
    prog = fold(prog, cfg.sm.warp_size)
    prog = if_convert(prog)
    prog = predicate_selects(prog)
    prog = fuse_adds(prog)
    prog = schedule(prog, cfg)
    return Code.of(prog).build()
