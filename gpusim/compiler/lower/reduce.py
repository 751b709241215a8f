"""Row kernels: reduce_sum, reduce_mean and reduce_max over any axes, softmax and log_softmax along any
axis, layernorm, each with its fused element-wise prologue (computed as the row is read).

One block reduces one row (the reduced axes, C elements; the other axes count the rows). When the
reduced axes are the trailing ones a row is contiguous; otherwise each element's position is rebuilt
from the block's row (the kept axes' coordinates) and the element's index within the row (the reduced
axes' coordinates), so that a warp's lanes read elements one reduced-axis stride apart. Thread t
holds elements t, t + block, ...: up to 8 of them stay in registers across the passes (read once);
beyond that each pass is a loop that reads the row again and recomputes the prologue. Each reduction
combines the threads' partials with a tree in shared memory (block / 2, block / 4, ... threads, a
barrier between levels). softmax: max, then the sum of e^(x - max), then e^(x - max) / sum (log_softmax: x - max - ln
sum);
layernorm: the mean, then the mean of (x - mean)^2, then (x - mean) / sqrt(var + eps) [* gamma + beta].
Parameter: `block` (threads per block, a power of two from 32)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import Asm, fimm
from gpusim.compiler.lower.expr import LOG2E, Indexer, Values, divide, modulo
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.region import Region
from gpusim.config import Config
from gpusim.functional import Launch

DEFAULT = {"block": 128}
CACHED = 8  # elements per thread kept in registers


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    return {"block": tuple(b for b in (32, 64, 128, 256, 512, 1024) if b <= cfg.sm.max_threads_per_block)}


def _reduced_axes(region: Region, rank: int) -> tuple[int, ...]:
    root = region.root
    if root.op in ("softmax", "log_softmax"):
        return (root.attrs["axis"],)
    if root.op == "layernorm":
        return tuple(range(root.attrs["axis"], rank))
    return tuple(root.attrs["axes"])


def _position(e: Asm, shape: tuple[int, ...], axes: tuple[int, ...], row: str, j: str) -> str:
    """The row-major index in `shape` of element `j` (over the reduced `axes`) of row `row` (over the
    others)."""
    kept = [a for a in range(len(shape)) if a not in axes]
    coords: dict[int, str] = {}
    for group, flat in ((kept, row), (axes, j)):
        for n, a in enumerate(group):
            q = divide(e, flat, math.prod(shape[b] for b in group[n + 1:]))
            coords[a] = q if n == 0 else modulo(e, q, shape[a])
    flat = "0"
    for a in range(len(shape)):
        stride = math.prod(shape[a + 1:])
        if shape[a] == 1:
            continue
        flat = (e.value("mul.lo.u32", "u32", coords[a], str(stride)) if flat == "0"
                else e.value("mad.lo.u32", "u32", coords[a], str(stride), flat))
    return flat


class _Row:
    """The elements of the block's row that this thread holds, as Values."""

    def __init__(self, e: Asm, region: Region, names: Mapping[str, str], shape: tuple[int, ...],
                 axes: tuple[int, ...], block: int):
        self.e, self.region, self.names, self.shape, self.block = e, region, names, shape, block
        self.axes = axes
        self.cols = cols = math.prod(shape[a] for a in axes)
        self.trailing = axes == tuple(range(len(shape) - len(axes), len(shape)))
        self.iters = -(-cols // block)
        self.start = e.value("mul.lo.u32", "u32", "%ctaid.x", str(cols)) if self.trailing else None
        self.cached = None
        if self.iters <= CACHED:
            self.cached = [self._at(e.value("add.u32", "u32", "%tid.x", str(i * block)) if i else "%tid.x",
                                    i == self.iters - 1) for i in range(self.iters)]
            for values, _ in self.cached:
                values.prefetch()

    def _at(self, j: str, last: bool) -> tuple[Values, str | None]:
        e = self.e
        ok = e.value("setp.lt.u32", "pred", j, str(self.cols)) if last and self.cols % self.block else None
        if self.trailing:
            flat = e.value("add.u32", "u32", self.start, j)
            return Values(e, self.region, self.names, Indexer(e, self.shape, flat, tail=(self.cols, j)), ok), ok
        flat = _position(e, self.shape, self.axes, "%ctaid.x", j)
        return Values(e, self.region, self.names, Indexer(e, self.shape, flat), ok), ok

    def each(self, visit: Callable[[Values, str | None], None]) -> None:
        """Call `visit(values, in_range)` for every element this thread holds (in a loop when uncached)."""
        if self.cached is not None:
            for values, ok in self.cached:
                visit(values, ok)
            return
        with self.e.loop(self.iters) as i:
            visit(*self._at(self.e.value("mad.lo.u32", "u32", i, str(self.block), "%tid.x"), True))

    def reduce(self, term: Callable[[Values], str], op: str, identity: float, shared: str) -> str:
        """op (add or max) of term over the row, every thread getting the result."""
        e = self.e
        acc = e.value("mov.f32", "f32", fimm(identity))

        def visit(values: Values, ok: str | None) -> None:
            t = term(values)
            if ok is not None:
                t = e.value("selp.f32", "f32", t, fimm(identity), ok)
            e(f"{op}.f32", acc, acc, t)

        self.each(visit)
        return _tree(e, shared, acc, op, self.block)


def _tree(e: Asm, name: str, value: str, op: str, block: int) -> str:
    """Combine every thread's `value` with `op` through shared memory; all threads get the result."""
    at = e.value("mad.lo.u32", "u32", "%tid.x", "4", e.shared(name, block))
    e("st.shared.f32", f"[{at}]", value)
    e("bar.sync", "0")
    half = block // 2
    while half:
        active = e.value("setp.lt.u32", "pred", "%tid.x", str(half))
        a = e.value("ld.shared.f32", "f32", f"[{at}]", guard=active)
        b = e.value("ld.shared.f32", "f32", f"[{at}+{half * 4}]", guard=active)
        e("st.shared.f32", f"[{at}]", e.value(f"{op}.f32", "f32", a, b, guard=active), guard=active)
        e("bar.sync", "0")
        half //= 2
    return e.value("ld.shared.f32", "f32", f"[{name}]")


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    block = int(params["block"])
    if block < 32 or block & (block - 1):
        raise CompilerError(f"reduce: block {block} must be a power of two, at least 32")
    root = region.root
    types = {i.name: i.type for i in region.inputs} | {n.name: n.type for n in region.ops}
    x = root.inputs[0]
    shape = types[x].shape
    axes = tuple(sorted(_reduced_axes(region, len(shape))))
    cols = math.prod(shape[a] for a in axes)
    rows = math.prod(shape) // cols if cols else 0
    e = Asm(name)
    row = _Row(e, region, declare(e, region), shape, axes, block)
    dt = root.dtype
    if root.op == "reduce_max":
        top = row.reduce(lambda v: v[x], "max", -math.inf, "maxima")
        first_thread = e.value("setp.eq.u32", "pred", "%tid.x", "0")
        e.store(e.address("out", "%ctaid.x", dt), top, dt, guard=first_thread)
    elif root.op in ("reduce_sum", "reduce_mean"):
        total = row.reduce(lambda v: v[x], "add", 0.0, "sums")
        if root.op == "reduce_mean":
            total = e.value("mul.f32", "f32", total, fimm(1 / cols))
        first_thread = e.value("setp.eq.u32", "pred", "%tid.x", "0")
        e.store(e.address("out", "%ctaid.x", dt), total, dt, guard=first_thread)
    else:
        if root.op == "softmax":
            top = row.reduce(lambda v: v[x], "max", -math.inf, "maxima")

            def shifted(v: Values) -> str:
                return v.derived("#exp", lambda: e.value("ex2.approx.f32", "f32", e.value(
                    "mul.f32", "f32", e.value("sub.f32", "f32", v[x], top), fimm(LOG2E))))

            scale = e.value("rcp.approx.f32", "f32", row.reduce(shifted, "add", 0.0, "sums"))

            def result(v: Values) -> str:
                return e.value("mul.f32", "f32", shifted(v), scale)
        elif root.op == "log_softmax":
            top = row.reduce(lambda v: v[x], "max", -math.inf, "maxima")

            def exp_shifted(v: Values) -> str:
                return e.value("ex2.approx.f32", "f32", e.value(
                    "mul.f32", "f32", e.value("sub.f32", "f32", v[x], top), fimm(LOG2E)))

            total = row.reduce(exp_shifted, "add", 0.0, "sums")
            # top + ln(sum), ln as log2 / log2(e)
            shift = e.value("fma.rn.f32", "f32", e.value("lg2.approx.f32", "f32", total), fimm(1 / LOG2E), top)

            def result(v: Values) -> str:
                return e.value("sub.f32", "f32", v[x], shift)
        else:
            mean = e.value("mul.f32", "f32", row.reduce(lambda v: v[x], "add", 0.0, "sums"), fimm(1 / cols))

            def centred(v: Values) -> str:
                return v.derived("#centred", lambda: e.value("sub.f32", "f32", v[x], mean))

            var = row.reduce(lambda v: e.value("mul.f32", "f32", centred(v), centred(v)), "add", 0.0, "squares")
            scale = e.value("rsqrt.approx.f32", "f32", e.value("fma.rn.f32", "f32", var, fimm(1 / cols),
                                                                fimm(root.attrs["eps"])))

            def result(v: Values) -> str:
                y = e.value("mul.f32", "f32", centred(v), scale)
                for extra, op in zip(root.inputs[1:], ("mul", "add"), strict=False):
                    y = e.value(f"{op}.f32", "f32", y, v[extra])
                return y

        row.each(lambda v, ok: e.store(e.address("out", v.indexer.flat, dt), result(v), dt, guard=ok))
    launch = Launch.make(max(rows, 1), block)
    return finish(e, region, "reduce", params, launch, flops=rows * cols * len(region.ops))


TEMPLATE = Template("reduce", lambda region: dict(DEFAULT), space, generate)
