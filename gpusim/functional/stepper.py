"""One thread block, instruction by instruction, as SIMT hardware runs it (`gpusim step`): for every
step, the instruction, the warps that issued it together, each warp's active mask, its reconvergence
stack before and after (entries pushed at a divergent branch, popped at the reconvergence point), the
values chosen registers hold in each lane after it, and the addresses a memory instruction touched.

The functional executor runs the block as always; a recorder (the hook the timing model's streams
come through) is told of each step before it executes, and the stepper reads the state after it. So
the values and the order are the executor's own: warps at the lowest pc step first, warps at the same
pc step together. This is the SIMT machine, not the timing model's schedule: which warp a scheduler
issues on which cycle, and why the others wait, is the timing model's (`gpusim run`, warp states)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpusim.errors import GpusimError
from gpusim.functional.executor import Executor, _Batch
from gpusim.functional.simt_stack import BOTTOM_RPC
from gpusim.functional.stream import BatchRecorder
from gpusim.isa.program import EXIT_PC, Program

# (pc, active lanes, reconvergence pc) of each entry of a warp's stack, top first
Stack = tuple[tuple[int, tuple[bool, ...], int], ...]


@dataclass
class Step:
    """One instruction issued by some warps of the block together."""

    index: int
    pc: int
    warps: list[int]  # warps of the block that issued it
    active: dict[int, tuple[bool, ...]]  # warp -> the lanes that executed it
    before: dict[int, Stack]  # warp -> its stack when it issued
    after: dict[int, Stack] = field(default_factory=dict)  # warp -> its stack after (before reconvergence)
    values: dict[str, dict[int, list]] = field(default_factory=dict)  # register -> warp -> lane values
    addresses: dict[int, list[int | None]] = field(default_factory=dict)  # warp -> lane addresses


class _Tracer(BatchRecorder):
    """The recorder hook: told of each step before it executes (and of its addresses)."""

    def __init__(self, b: _Batch):
        super().__init__(b.W, b.ws)
        self.b = b
        self.trace: list[Step] = []

    def step(self, pc: int, G: np.ndarray, active: np.ndarray, full: bool = False) -> None:
        super().step(pc, G, active, full)
        act = active if active.shape[0] == G.size else active[G]
        ws = [int(w) for w in G]
        self.trace.append(Step(len(self.trace), pc, ws, {w: tuple(bool(x) for x in act[i]) for i, w in enumerate(ws)},
                               {w: stack_of(self.b, w) for w in ws}))

    def memory_into(self, size: int) -> None:
        return None  # (every access through `memory`, which traces its addresses)

    def memory(self, addr: np.ndarray) -> None:
        super().memory(addr)
        full = self.steps[-1][3]
        step = self.trace[-1]
        for i, w in enumerate(step.warps):
            step.addresses[w] = [int(a) if a >= 0 and step.active[w][j] else None for j, a in enumerate(full[i])]


def stack_of(b: _Batch, w: int) -> Stack:
    """Warp w's SIMT stack, top entry first."""
    st = b.stack
    top = (int(st.pc[w]), tuple(bool(x) for x in st.active[w]), int(st.rpc[w]))
    below = [(int(st.below_pc[w, d]), tuple(bool(x) for x in st.below_mask[w, d]), int(st.below_rpc[w, d]))
             for d in range(int(st.depth[w]) - 1, -1, -1)]
    return (top, *below)


def step_block(program: Program, launch, params: dict, memory, *, cfg=None, block: int = 0,
               registers: Sequence[str] = (), max_steps: int = 2000) -> list[Step]:
    """Run block `block` of the launch alone (on `memory`, which it changes) and return its steps, at most
    `max_steps` of them. `registers` are register names whose lane values each step records (default:
    each step's destination registers)."""
    if not 0 <= block < launch.num_blocks:
        raise GpusimError(f"block {block}: the grid has blocks 0..{launch.num_blocks - 1}")
    by_name = {r.name: r for r in program.registers}
    unknown = [r for r in registers if r not in by_name]
    if unknown:
        raise GpusimError(f"register {unknown[0]!r} is not declared by {program.name} "
                          f"(registers: {', '.join(by_name) or 'none'})")
    ex = Executor(program, launch, params, memory, cfg=cfg, block_ids=[block])
    b = _Batch(ex, 0, 1)
    tracer = b.rec = _Tracer(b)  # (set before the first step: each instruction's decoder takes the recorder)
    with np.errstate(all="ignore"):
        for _ in ex._steps(b, 1):  # (chunk 1: the executor pauses after every step)
            step = tracer.trace[-1]
            step.after = {w: stack_of(b, w) for w in step.warps}
            ins = program.instructions[step.pc]
            names = list(registers) or [program.registers[o.reg].name for o in ins.dsts if o.kind == "reg"]
            for name in names:
                arr = b.R[by_name[name].index]
                step.values[name] = {w: arr[w * b.ws:(w + 1) * b.ws].tolist() for w in step.warps}
            if len(tracer.trace) >= max_steps:
                break
    return tracer.trace


# -- text ------------------------------------------------------------------------------------------------
def mask_text(lanes: Sequence[bool]) -> str:
    """`#` for a lane that runs, `.` for one that does not, lane 0 first."""
    return "".join("#" if x else "." for x in lanes)


def _rpc(rpc: int) -> str:
    return "-" if rpc == BOTTOM_RPC else ("exit" if rpc == EXIT_PC else str(rpc))


def stack_text(stack: Stack) -> str:
    return " | ".join(f"pc {pc} {mask_text(m)} rpc {_rpc(r)}" for pc, m, r in stack)


def _warps_text(ws: Sequence[int]) -> str:
    if len(ws) > 1 and list(ws) == list(range(ws[0], ws[-1] + 1)):
        return f"warps {ws[0]}-{ws[-1]}"
    return ("warp " if len(ws) == 1 else "warps ") + ",".join(map(str, ws))


def format_steps(steps: list[Step], program: Program, *, warps: Sequence[int] | None = None,
                 lanes: int = 8) -> str:
    """The steps as text: one header line per step (index, pc, source line, instruction, warps), then
    per group of warps in the same state: the active mask, the stack (with PUSH/POP where its depth
    changed since the warp's previous step), the chosen registers' first `lanes` lane values and the
    addresses touched."""
    out = []
    last_depth: dict[int, int] = {}
    last_rpc: dict[int, int] = {}  # the reconvergence pc of each warp's top entry after its last step
    for s in steps:
        shown = [w for w in s.warps if warps is None or w in warps]
        if not shown:
            continue
        ins = program.instructions[s.pc]
        out.append(f"#{s.index:<4} pc {s.pc:<3} line {ins.line:<4} {ins.text.strip():<40} {_warps_text(shown)}")
        groups: dict[tuple, list[int]] = {}
        for w in shown:
            key = (s.active[w], s.before[w], s.after.get(w))
            groups.setdefault(key, []).append(w)
        for (active, before, after), ws in groups.items():
            events = []
            d0 = len(before) - 1
            prev = last_depth.get(ws[0])
            if prev is not None and d0 < prev:
                where = before[0][0]
                events.append(f"POP {prev - d0}: " + (f"the paths reconverge at pc {where}"
                                                      if where == last_rpc.get(ws[0]) else
                                                      f"the other path runs, from pc {where}"))
            if after is not None and len(after) - 1 > d0:
                events.append(f"PUSH {len(after) - 1 - d0} (diverged: the lanes split)")
            for w in ws:
                last_depth[w] = len(after) - 1 if after is not None else d0
                last_rpc[w] = (after or before)[0][2]
            tag = f"  {_warps_text(ws)}:" if len(groups) > 1 else "  "
            out.append(f"{tag}  active {mask_text(active)}  ({sum(active)} lanes)")
            out.append(f"{' ' * len(tag)}  stack  {stack_text(after if after is not None else before)}"
                       + (f"   <- {'; '.join(events)}" if events else ""))
        for name, per_warp in s.values.items():
            w = shown[0]
            vals = [(i, v) for i, (v, on) in enumerate(zip(per_warp[w], s.active[w], strict=True)) if on][:lanes]
            out.append(f"    {name} (warp {w}, first {len(vals)} active lanes, lane:value) = "
                       + " ".join(f"{i}:{v}" for i, v in vals))
        if s.addresses:
            w = shown[0]
            addrs = [(i, a) for i, a in enumerate(s.addresses.get(w, [])) if a is not None][:lanes]
            out.append(f"    addresses (warp {w}, lane:address) = " + " ".join(f"{i}:{a:#x}" for i, a in addrs))
    return "\n".join(out)
