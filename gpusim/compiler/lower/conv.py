"""Convolution as an implicit GEMM on the matmul template: one kernel per convolution (with its bias,
folded BatchNorm, activation and residual add in the epilogue), no im2col tensor in memory.

A group g of image n computes C = W_g @ X_n,g, with W_g the group's Mg x K weights (K = C/group x the
kernel's taps, in the weights' own order: channel, then taps row-major) and X_n,g the K x P matrix of
input windows (P = the output's pixels): column p holds the window under output pixel p. C is Mg x P:
exactly the NCHW layout of the group's output channels, so the template's own stores (row x P + column,
one batch a grid z index: z = n group + g, P Mg elements apart) write the result in place, and the
epilogue sees the convolution's result as the matmul's.

X is never stored. Through the `matmul.Operands` hook the template's B panel copy computes, for each
element (k, p) it moves to shared memory, the input address: p's output coordinates o (fixed for the
thread's element, computed once), k's channel c and taps t (per panel: k = k0 + the element's row), and
along each spatial axis j = stride o + dilation t - pad (in u32 wrap-around arithmetic: a negative j is
a huge number, so one unsigned compare j < size checks both ends). The load is predicated on every j
being inside (the padding reads as 0, as cp.async's zero-fill does in CUTLASS's implicit GEMM). A
transposed convolution's input_dilation u puts u - 1 zeros between the input's elements: j must be a
multiple of u (the others read 0) and the element read is j / u (j is biased by a multiple of u first,
so that the remainder of a negative j is right). A 1x1 convolution of stride 1 without padding is a
plain GEMM (X_n is the input itself, C x P): the template's own B loads, and the kernel is the batched
matmul's.

The weights are read as the matmul's A (W_g: a pointer moved by g Mg K); epilogue operands that
broadcast to the output N x M x spatial.. are seen as N x M x P (their spatial axes all kept or all 1),
moved by n and g. Only the shared-memory loop takes the hook (use_shared is always true). Parameters:
the matmul template's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Node
from gpusim.compiler.lower import matmul
from gpusim.compiler.lower.asm import Asm
from gpusim.compiler.lower.expr import divide, modulo
from gpusim.compiler.lower.kernel import Kernel, Template
from gpusim.compiler.lower.region import Region
from gpusim.compiler.tensor import TensorType
from gpusim.config import Config


def find_conv(region: Region) -> Node:
    return region.find("conv")


def is_pointwise(conv: Node, x: TensorType, w: TensorType) -> bool:
    """A 1x1 window, stride 1, no padding, no input dilation: the input itself is the B matrix."""
    a = conv.attrs
    return (all(k == 1 for k in w.shape[2:]) and all(s == 1 for s in a["strides"]) and not any(a["pads"])
            and all(u == 1 for u in a["input_dilation"]))


@dataclass(frozen=True, slots=True)
class _Shape:
    """The GEMM a convolution is: batches n x group, Mg x K @ K x P."""

    n: int
    group: int
    mg: int
    k: int
    p: int
    size: tuple[int, ...]  # input spatial sizes
    kernel: tuple[int, ...]
    out: tuple[int, ...]  # output spatial sizes
    cg: int


def _shape(region: Region) -> _Shape:
    conv = find_conv(region)
    types = {i.name: i.type for i in region.inputs}
    x, w = (types[i] for i in conv.inputs)
    group = conv.attrs["group"]
    n, _, *size = x.shape
    m, cg, *kernel = w.shape
    out = conv.shape[2:]
    return _Shape(n, group, m // group, cg * math.prod(kernel), math.prod(out), tuple(size), tuple(kernel),
                  tuple(out), cg)


def _view(t: TensorType, s: _Shape, what: str) -> tuple[int, int, int]:
    """An epilogue operand (broadcasting to N x M x spatial..) as N' x M' x P' (each 1 or the full size)."""
    rank = 2 + len(s.out)
    shape = (1,) * (rank - t.rank) + t.shape
    spatial = shape[2:]
    if all(d == 1 for d in spatial):
        p = 1
    elif spatial == s.out:
        p = s.p
    else:
        raise CompilerError(f"{what}: {t} broadcasts over some of the output's spatial axes "
                            f"{list(s.out)} but not all; the convolution's epilogue reads N x M x pixels")
    return shape[0], shape[1], p


class _Windows:
    """The matmul.Operands hook: the input windows as the B operand, the weights and epilogue operands
    moved to the block's image and group."""

    def __init__(self, region: Region, s: _Shape, views: Mapping[str, tuple[int, int, int]], bk: int):
        self.conv, self.s, self.views, self.bk = find_conv(region), s, views, bk
        self.dtype = {i.name: i.type.dtype for i in region.inputs}
        self.slots: list[tuple[str, str | None, list[str]]] = []  # per element: row, pixel guard, window start
        self.k0 = ""

    def rebase(self, e: Asm, names: Mapping[str, str]) -> None:
        s = self.s
        z = "%ctaid.z"
        image, group = (z, "0") if s.group == 1 else (divide(e, z, s.group), modulo(e, z, s.group))
        x, w = self.conv.inputs
        moves = {x: (s.group * s.cg * math.prod(s.size), s.cg * math.prod(s.size)), w: (0, s.mg * s.k)}
        for name, (vn, vm, vp) in self.views.items():
            moves[name] = ((vm * vp) if vn > 1 else 0, s.mg * vp if vm > 1 else 0)
        for name, (per_image, per_group) in moves.items():
            if name not in names:  # an immediate (a one-element constant)
                continue
            parts = [(image, per_image), (group, per_group)]
            offset = None
            for reg, stride in parts:
                if stride and reg != "0":
                    offset = (e.value("mul.lo.u32", "u32", reg, str(stride)) if offset is None
                              else e.value("mad.lo.u32", "u32", reg, str(stride), offset))
            if offset is not None:
                e.rebase(names[name], offset, self.dtype[name])

    def b_slots(self, e: Asm, tid: str, threads: int, panel: tuple[int, int], shared: str, col_base: str,
                limit: int | None) -> list[tuple[str, str]]:
        s, a = self.s, self.conv.attrs
        rows, cols = panel
        r = len(s.out)
        out = []
        for n in range(rows * cols // threads):
            el = e.value("add.u32", "u32", tid, str(n * threads)) if n else tid
            row, col = divide(e, el, cols), modulo(e, el, cols)
            pixel = e.value("add.u32", "u32", col_base, col)
            ok = None if limit is None else e.value("setp.lt.u32", "pred", pixel, str(limit))
            starts = []
            for ax in range(r):  # stride o - pad (+ a multiple of u: non-negative when u > 1)
                o = divide(e, pixel, math.prod(s.out[ax + 1:]))
                o = o if ax == 0 else modulo(e, o, s.out[ax])
                u = a["input_dilation"][ax]
                shift = -a["pads"][ax] + (u * -(-max(a["pads"][ax], 0) // u) if u > 1 else 0)
                starts.append(e.value("mad.lo.u32", "u32", o, str(a["strides"][ax]), str(shift % (1 << 32))))
            self.slots.append((row, ok, starts))
            at = e.value("mad.lo.u32", "u32", e.value("mad.lo.u32", "u32", row, str(cols), col), "4", shared)
            out.append((row, at))
        self.k0 = e.value("mov.u32", "u32", "0")
        return out

    def b_panel(self, e: Asm, names: Mapping[str, str]) -> list[tuple[str, str | None]]:
        s, a = self.s, self.conv.attrs
        taps = math.prod(s.kernel)
        x = names[self.conv.inputs[0]]
        out = []
        for row, ok, starts in self.slots:
            k = e.value("add.u32", "u32", self.k0, row)
            channel, tap = (k, "0") if taps == 1 else (divide(e, k, taps), modulo(e, k, taps))
            flat = channel
            for ax, start in enumerate(starts):
                t = divide(e, tap, math.prod(s.kernel[ax + 1:]))
                t = t if ax == 0 else modulo(e, t, s.kernel[ax])
                d = a["dilations"][ax]
                j = (start if s.kernel[ax] == 1 else e.value("add.u32", "u32", t, start) if d == 1
                     else e.value("mad.lo.u32", "u32", t, str(d), start))
                u = a["input_dilation"][ax]
                if u > 1:  # a stuffed zero unless j is a multiple of u; the element is j / u (less the bias)
                    ok = e.both(ok, e.value("setp.eq.u32", "pred", modulo(e, j, u), "0"))
                    bias = -(-max(a["pads"][ax], 0) // u)
                    j = divide(e, j, u)
                    j = e.value("sub.u32", "u32", j, str(bias)) if bias else j
                if not self._inside(ax):
                    ok = e.both(ok, e.value("setp.lt.u32", "pred", j, str(s.size[ax])))
                flat = e.value("mad.lo.u32", "u32", flat, str(s.size[ax]), j)
            out.append((e.address(x, flat, self.dtype[self.conv.inputs[0]]), ok))
        return out

    def _inside(self, ax: int) -> bool:
        """Whether every window position along `ax` provably falls inside the input (no compare needed)."""
        a, s = self.conv.attrs, self.s
        if a["input_dilation"][ax] > 1:
            return False
        first = -a["pads"][ax]
        last = a["strides"][ax] * (s.out[ax] - 1) + a["dilations"][ax] * (s.kernel[ax] - 1) - a["pads"][ax]
        return first >= 0 and last < s.size[ax]

    def b_advance(self, e: Asm) -> None:
        e("add.u32", self.k0, self.k0, str(self.bk))


def gemm(region: Region, bk: int) -> tuple[Region, _Windows | None]:
    """The region as the matmul template sees it: the convolution a matmul node (Mg x K weights @ K x P
    windows, batched n x group), every epilogue node and operand viewed as N x M x P, and the hook
    (None for a 1x1 convolution of a single group: the input itself is the B matrix)."""
    region = _aliased(region)
    conv = find_conv(region)
    s = _shape(region)
    types = {i.name: i.type for i in region.inputs}
    x, w = conv.inputs
    pointwise = is_pointwise(conv, types[x], types[w]) and s.group == 1
    views = {i.name: _view(i.type, s, f"node %{region.node.name}: operand %{i.name}")
             for i in region.inputs if i.name not in conv.inputs and i.scalar is None}
    inputs = []
    for i in region.inputs:
        if i.name == x:
            t = TensorType((s.n, s.k, s.p) if pointwise else (s.k, s.p), i.type.dtype)
        elif i.name == w:
            t = TensorType((s.mg, s.k), i.type.dtype)
        elif i.name in views:
            vn, vm, vp = views[i.name]
            t = TensorType((vn, vm, vp) if pointwise else (1 if vm == 1 else s.mg, vp), i.type.dtype)
        else:
            t = i.type
        inputs.append(replace(i, type=t))
    result = TensorType((s.n * s.group, s.mg, s.p), conv.dtype)
    ops = [Node(conv.name, "matmul", (w, x), result) if n is conv else replace(n, type=result) for n in region.ops]
    hook = None if pointwise else _Windows(region, s, views, bk)
    return Region(region.node, tuple(inputs), tuple(ops)), hook


def _aliased(region: Region) -> Region:
    """The region with a convolution operand that an epilogue node also reads (y = conv(x) + x) given a
    second name for the epilogue (the same buffer through a second pointer): the two are read in
    different shapes."""
    conv = find_conv(region)
    shared = {i for n in region.ops if n is not conv for i in n.inputs} & set(conv.inputs)
    if not shared:
        return region
    alias = {name: f"{name}#epilogue" for name in shared}
    extra = tuple(replace(i, name=alias[i.name]) for i in region.inputs if i.name in shared)
    ops = tuple(n if n is conv else n.with_inputs(alias.get(i, i) for i in n.inputs) for n in region.ops)
    return Region(region.node, region.inputs + extra, ops)


def default(region: Region) -> dict[str, Any]:
    return dict(matmul.DEFAULT)


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    """The matmul's tiles for the GEMM (Mg x P), through shared memory only."""
    s = _shape(region)
    return {"BM": tuple(t for t in matmul.TILES if t < 2 * s.mg or t == matmul.TILES[0]),
            "BN": tuple(t for t in matmul.TILES if t < 2 * s.p or t == matmul.TILES[0]),
            "BK": (8, 16, 32), "TM": (1, 2, 4, 8), "TN": (1, 2, 4, 8), "use_shared": (True,)}


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    if not params["use_shared"]:
        raise CompilerError(f"node %{region.node.name}: a convolution reads its windows through shared memory "
                            "(use_shared must be true)")
    gemm_region, hook = gemm(region, int(params["BK"]))
    kernel = matmul.generate(gemm_region, params, name, hook)
    buffers = {i.buffer: i.type for i in region.buffers} | {region.node.name: region.node.type}
    dram = sum(t.nbytes for t in buffers.values())
    return replace(kernel, template="conv", buffers=buffers, work=replace(kernel.work, dram_bytes=dram))


TEMPLATE = Template("conv", default, space, generate)
