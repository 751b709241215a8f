"""Functional executor: runs a kernel lane by lane with real values.

The Executor is the warp scheduler (`warps.py`: batches, lowest-pc stepping, SIMT divergence, barriers,
faults) with the instruction semantics of the kernel's ISA: `ptx_ops.py` for gpusim's PTX-shaped ISA
(.sasm files and nvcc's PTX), `sass_ops.py` for SASS (the machine code in a cubin)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from gpusim.functional.launch import Launch
from gpusim.functional.memory import GlobalMemory
from gpusim.functional.ptx_ops import PtxOps
from gpusim.functional.sass_ops import SassOps
from gpusim.functional.stats import ExecStats
from gpusim.functional.stream import BlockStream
from gpusim.functional.warps import (  # noqa: F401 (re-exported: the executor's constants and batches)
    DEFAULT_BATCH_LANES,
    DEFAULT_CHUNK,
    DEFAULT_MAX_STEPS_PER_WARP,
    DONE,
    PROBE_AT_STEPS,
    RUN,
    WAIT,
    WARP,
    BatchSource,
    WarpScheduler,
    _Batch,
)
from gpusim.isa.program import Program


@dataclass
class ExecResult:
    """What a functional launch produced: statistics (memory holds the values)."""

    program: Program
    launch: Launch
    stats: ExecStats




class Executor(PtxOps, SassOps, WarpScheduler):
    """Runs one launch of a program (PTX-shaped or SASS) over global memory; see WarpScheduler for the options."""

    def _decode(self, ins, b: _Batch) -> Callable:
        return self._decode_sass(ins, b) if self.isa == "sass" else self._decode_ptx(ins, b)


def execute(program: Program, launch: Launch, params: dict, memory: GlobalMemory, *, cfg=None,
            max_steps_per_warp: int | None = None, batch_lanes: int | None = None) -> ExecResult:
    """Run `program` over `launch` with `params` (device addresses for pointers, numbers for scalars)
    against `memory`, which it updates. Returns the execution statistics."""
    ex = Executor(program, launch, params, memory, cfg=cfg, max_steps_per_warp=max_steps_per_warp,
                  batch_lanes=batch_lanes)
    return ExecResult(program, launch, ex.run())


def block_streams(program: Program, launch: Launch, params: dict, memory: GlobalMemory, *, cfg=None,
                  max_steps_per_warp: int | None = None, batch_lanes: int | None = None
                  ) -> Iterator[BlockStream]:
    """Execute and yield, block by block, the stream of warp instructions each warp issued (pc,
    active mask, per-lane addresses of memory instructions): the timing model's input. Only one
    batch of blocks is held in memory at a time."""
    ex = Executor(program, launch, params, memory, cfg=cfg, max_steps_per_warp=max_steps_per_warp,
                  record=True, batch_lanes=batch_lanes)
    yield from ex.block_streams()


__all__ = ["ExecResult", "Executor", "block_streams", "execute"]
