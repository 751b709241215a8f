"""Gather kernels: remap (slice, pad, expand, tile, im2col: each output element one input element at an
affine function of its coordinates, or a fill value outside the input) and concat.

One thread per output element (consecutive threads, consecutive elements: the stores are contiguous).
remap: the thread splits its index into output coordinates, computes every input coordinate
i[a] = sum_j coef[a][j] o[j] + offset[a] in 32-bit wrap-around arithmetic (a negative coordinate becomes
a huge unsigned one, so one unsigned compare `i[a] < n[a]` checks both ends; the compare is left out
where the coordinate provably stays inside), reads the element where every coordinate is inside and
stores the fill value elsewhere. concat: the thread reads, from each operand, the element at its
coordinates shifted along the axis, the load predicated on the coordinate falling inside that operand,
and adds them (exactly one load is live). Parameter: `block` (threads per block)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import Asm, fimm
from gpusim.compiler.lower.expr import Indexer
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.region import Region
from gpusim.config import Config
from gpusim.functional import Launch

DEFAULT = {"block": 256}
WRAP32 = 1 << 32


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    return {"block": tuple(b for b in (64, 128, 256, 512, 1024) if b <= cfg.sm.max_threads_per_block)}


def _u32(value: int) -> str:
    """An integer as a u32 immediate (negative values wrap around, as the arithmetic does)."""
    return str(value % WRAP32)


def _affine(e: Asm, position: Indexer, coef: tuple[int, ...], offset: int) -> str:
    """sum_j coef[j] o[j] + offset as a u32 register (or immediate)."""
    acc = None
    for j, c in enumerate(coef):
        if c == 0 or position.shape[j] == 1:
            continue
        coord = position.coord(j)
        if acc is None:
            acc = coord if c == 1 else e.value("mul.lo.u32", "u32", coord, _u32(c))
        else:
            acc = e.value("mad.lo.u32", "u32", coord, _u32(c), acc)
    if acc is None:
        return _u32(offset)
    return e.value("add.u32", "u32", acc, _u32(offset)) if offset else acc


def _bounds(shape: tuple[int, ...], coef: tuple[int, ...], offset: int) -> tuple[int, int]:
    """The least and greatest value of the affine function over the output's coordinates."""
    lo = hi = offset
    for c, n in zip(coef, shape, strict=True):
        lo += min(0, c * (n - 1))
        hi += max(0, c * (n - 1))
    return lo, hi


def _remap(e: Asm, region: Region, names: Mapping[str, str], i: str, ok: str | None) -> str:
    (source,) = region.inputs
    attrs, out = region.root.attrs, region.root.shape
    in_shape = source.type.shape
    position = Indexer(e, out, i)
    flat, inside = "0", ok
    for a, n in enumerate(in_shape):
        coef, offset, wrap = attrs["coef"][a], attrs["offset"][a], attrs["wrap"][a]
        if wrap:
            if any(c < 0 for c in coef):
                raise CompilerError(f"node %{region.node.name} (remap): a wrapped axis needs non-negative "
                                    f"coefficients, not {list(coef)}")
            coord = _affine(e, position, coef, offset % n)
            coord = e.value("rem.u32", "u32", coord, str(n)) if coord[0] == "%" else str(int(coord) % n)
        else:
            coord = _affine(e, position, coef, offset)
            lo, hi = _bounds(out, coef, offset)
            if lo < 0 or hi >= n:
                inside = e.both(inside, e.value("setp.lt.u32", "pred", coord, str(n)))
        stride = math.prod(in_shape[a + 1:])
        if n == 1 or coord == "0":
            continue
        if flat == "0":
            flat = coord if stride == 1 else e.value("mul.lo.u32", "u32", coord, str(stride))
        else:
            flat = e.value("mad.lo.u32", "u32", coord, str(stride), flat)
    if source.scalar is not None:
        value = fimm(source.scalar)
        return value if inside is None else e.value("selp.f32", "f32", value, fimm(attrs["fill"]), inside)
    dt = source.type.dtype
    return e.load(e.address(names[source.name], flat, dt), dt, guard=inside, fill=attrs["fill"])


def _concat(e: Asm, region: Region, names: Mapping[str, str], i: str, ok: str | None) -> str:
    root = region.root
    axis, out = root.attrs["axis"], root.shape
    position = Indexer(e, out, i)
    inputs = {inp.name: inp for inp in region.inputs}
    total, start = None, 0
    for name in root.inputs:
        t = inputs[name].type
        size = t.shape[axis]
        shifted = dict(enumerate(position.coord(a) if out[a] != 1 else "0" for a in range(len(out))))
        along = position.coord(axis) if out[axis] != 1 else "0"
        local = e.value("sub.u32", "u32", along, str(start)) if start else along
        shifted[axis] = local
        guard = e.both(ok, e.value("setp.lt.u32", "pred", local, str(size)))
        flat = "0"
        for a in range(len(out)):
            stride = math.prod(t.shape[a + 1:])
            if t.shape[a] == 1:
                continue
            flat = (e.value("mul.lo.u32", "u32", shifted[a], str(stride)) if flat == "0"
                    else e.value("mad.lo.u32", "u32", shifted[a], str(stride), flat))
        source = inputs[name]
        if source.scalar is not None:
            value = e.value("selp.f32", "f32", fimm(source.scalar), fimm(0.0), guard)
        else:
            value = e.load(e.address(names[name], flat, t.dtype), t.dtype, guard=guard, fill=0.0)
        total = value if total is None else e.value("add.f32", "f32", total, value)
        start += size
    return total


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    block = int(params["block"])
    if block < 1:
        raise CompilerError(f"gather: block {block} must be positive")
    root = region.root
    size = root.type.size
    e = Asm(name)
    names = declare(e, region)
    i = e.value("mad.lo.u32", "u32", "%ctaid.x", str(block), "%tid.x")
    ok = None if size % block == 0 else e.value("setp.lt.u32", "pred", i, str(size))
    value = (_remap if root.op == "remap" else _concat)(e, region, names, i, ok)
    e.store(e.address("out", i, root.dtype), value, root.dtype, guard=ok)
    return finish(e, region, "gather", params, Launch.make(max(1, -(-size // block)), block), flops=0)


TEMPLATE = Template("gather", lambda region: dict(DEFAULT), space, generate)
