"""Memory planning: where each intermediate tensor of a lowered graph lives in one arena of device memory,
so that tensors whose lifetimes do not overlap share bytes.

- Liveness, over the kernels in the order they run: a tensor is born at the kernel that writes it and
  dies after the last kernel that reads it (a graph output lives to the end). Reshapes are views of
  their input's buffer, so they share its lifetime; parameters and constants are inputs, not planned.
- In place: an element-wise kernel (the elementwise template, plain or fused) may write its output over
  an input of the same shape and dtype whose last reader it is: each thread reads element i of its
  inputs before it writes element i of the output, and no other thread touches element i. The two
  tensors then are one buffer.
- Placement: buffers largest first, each at the lowest offset (multiples of `align`) where it overlaps
  no placed buffer that is alive at the same time (greedy by size, first fit: the best fit among the
  gaps that are free for its whole lifetime).

Peak memory is reported three ways: one allocation per tensor (what lower/run.py does without a plan),
the largest sum of buffers alive at once (a bound no placement of those buffers beats), and the planned
arena.
`run_kernels(..., plan=plan)` runs the kernels with the planned offsets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpusim.compiler.ir import Graph
from gpusim.compiler.lower.kernel import Kernel
from gpusim.compiler.lower.region import buffer_of
from gpusim.functional.memory import ALLOC_ALIGN


@dataclass(frozen=True, slots=True)
class Buffer:
    """A planned buffer: the tensors it holds (one, or a chain written in place), its bytes, the first
    and last kernel (indices) it is alive in, and its offset in the arena."""

    tensors: tuple[str, ...]
    nbytes: int
    first: int
    last: int
    offset: int


@dataclass(frozen=True)
class MemoryPlan:
    """Offsets of every kernel-written tensor (`offsets`) in an arena of `size` bytes."""

    buffers: tuple[Buffer, ...]
    offsets: Mapping[str, int]
    size: int
    unplanned_bytes: int
    live_peak_bytes: int
    in_place: tuple[tuple[str, str], ...]

    def summary(self) -> str:
        saved = 100 * (1 - self.size / self.unplanned_bytes) if self.unplanned_bytes else 0.0
        return (f"memory plan: {len(self.offsets)} intermediate tensors in {len(self.buffers)} buffers "
                f"({len(self.in_place)} written in place); peak {self.unplanned_bytes:,} B with one allocation per "
                f"tensor -> {self.size:,} B planned ({saved:.1f} % less; the most alive at once is "
                f"{self.live_peak_bytes:,} B)")

    def to_dict(self) -> dict:
        return {"unplanned_bytes": self.unplanned_bytes, "planned_bytes": self.size,
                "live_peak_bytes": self.live_peak_bytes, "in_place": [list(p) for p in self.in_place],
                "buffers": [{"tensors": list(b.tensors), "bytes": b.nbytes, "first": b.first, "last": b.last,
                             "offset": b.offset} for b in self.buffers]}


def _aligned(n: int, align: int) -> int:
    return -(-max(n, 1) // align) * align


def liveness(graph: Graph, kernels: Sequence[Kernel]) -> dict[str, tuple[int, int]]:
    """For each tensor a kernel writes: (index of that kernel, index of its last reader; len(kernels) for a
    graph output)."""
    life = {k.output: [i, i] for i, k in enumerate(kernels)}
    for i, k in enumerate(kernels):
        for param, buffer in k.args.items():
            if param != "out" and buffer in life:
                life[buffer][1] = max(life[buffer][1], i)
    for name in graph.outputs.values():
        buffer = buffer_of(graph, name)
        if buffer in life:
            life[buffer][1] = len(kernels)
    return {t: (a, b) for t, (a, b) in life.items()}


def _in_place_input(kernel: Kernel, life: Mapping[str, tuple[int, int]], index: int) -> str | None:
    """An input the element-wise `kernel` (the index-th) may overwrite with its output, or None."""
    if kernel.template != "elementwise":
        return None
    out = kernel.buffers[kernel.output]
    for param, buffer in kernel.args.items():
        if param == "out" or buffer not in life or life[buffer][1] != index:
            continue
        if kernel.buffers[buffer] == out:
            return buffer
    return None


def plan_memory(graph: Graph, kernels: Sequence[Kernel], *, in_place: bool = True,
                align: int = ALLOC_ALIGN) -> MemoryPlan:
    """Plan the tensors `kernels` (lowered from `graph`, in run order) write (module docstring)."""
    life = liveness(graph, kernels)
    size = {k.output: k.buffers[k.output].nbytes for k in kernels}
    root = {t: t for t in life}
    pairs = []
    if in_place:
        for i, k in enumerate(kernels):
            src = _in_place_input(k, life, i)
            if src is not None:
                root[k.output] = root[src]
                pairs.append((src, k.output))
    groups: dict[str, list[str]] = {}
    for t in life:
        groups.setdefault(root[t], []).append(t)
    spans = {r: (min(life[t][0] for t in ts), max(life[t][1] for t in ts), max(size[t] for t in ts))
             for r, ts in groups.items()}
    placed: list[tuple[int, int, int, int, str]] = []   # (offset, end, first, last, root)
    for r in sorted(spans, key=lambda r: (-spans[r][2], spans[r][0], r)):
        first, last, nbytes = spans[r]
        need = _aligned(nbytes, align)
        busy = sorted((o, e) for o, e, f, la, _ in placed if f <= last and first <= la)
        offset, best = 0, None
        gaps = []
        for o, e in busy:
            if o - offset >= need:
                gaps.append((o - offset, offset))
            offset = max(offset, e)
        best = min(gaps)[1] if gaps else offset
        placed.append((best, best + need, first, last, r))
    buffers = tuple(Buffer(tuple(groups[r]), spans[r][2], f, la, o)
                    for o, _, f, la, r in sorted(placed, key=lambda p: (p[0], p[2])))
    offsets = {t: b.offset for b in buffers for t in b.tensors}
    unplanned = sum(_aligned(n, align) for n in size.values())
    live = max((sum(_aligned(n, align) for a, b, n in spans.values() if a <= i <= b)
                for i in range(len(kernels) + 1)), default=0)
    arena = max((e for _, e, _, _, _ in placed), default=0)
    return MemoryPlan(buffers, offsets, arena, unplanned, live, tuple(pairs))
