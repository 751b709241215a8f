"""Transposes. A 2-D transpose moves tile x tile squares with tile x rows threads per block (each thread
tile / rows elements): with `use_shared` through a shared-memory tile padded by one word (reads and
writes of global memory both contiguous, no bank conflicts), without it straight from the input to the
output (reads contiguous, writes strided). Any other permutation is a gather: each thread computes one
output element's coordinates and reads the input element they name. Parameters: tile, rows,
use_shared (2-D); block (other ranks)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import WARP, Asm
from gpusim.compiler.lower.expr import Indexer
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.region import Region
from gpusim.config import Config
from gpusim.functional import Launch

DEFAULT = {"tile": 16, "rows": 16, "use_shared": True}
GATHER_DEFAULT = {"block": 256}


def default(region: Region) -> dict[str, Any]:
    return dict(DEFAULT if region.root.type.rank == 2 else GATHER_DEFAULT)


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    if region.root.type.rank != 2:
        return {"block": (64, 128, 256, 512, 1024)}
    return {"tile": (8, 16, 32), "rows": (2, 4, 8, 16, 32), "use_shared": (True, False)}


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    (source,) = region.inputs
    e = Asm(name)
    param = declare(e, region)[source.name]
    if region.root.type.rank == 2:
        launch = _tiled(e, source.type.shape, source.type.dtype, param, params)
    else:
        launch = _gather(e, region, param, int(params["block"]))
    return finish(e, region, "transpose", params, launch, flops=0)


def _tiled(e: Asm, shape: tuple[int, int], dt: str, param: str, params: Mapping[str, Any]) -> Launch:
    tile, rows, shared = int(params["tile"]), int(params["rows"]), bool(params["use_shared"])
    if tile % rows or tile * rows < 32:
        raise CompilerError(f"transpose: rows {rows} must divide tile {tile}, and tile x rows be at least 32")
    m, n = shape  # the input is m x n, the output n x m
    row0 = e.value("mad.lo.u32", "u32", "%ctaid.y", str(tile), "%tid.y")  # input row of r = 0
    col = e.value("mad.lo.u32", "u32", "%ctaid.x", str(tile), "%tid.x")
    steps = range(0, tile, rows)
    loaded = []
    for row, ok in _rows(e, row0, col, steps, (m, n), tile):
        at = e.address(param, e.value("mad.lo.u32", "u32", row, str(n), col), dt)
        loaded.append((row, ok, e.load(at, dt, guard=ok)))
    if not shared:  # a warp's lanes of one row write min(tile, 32) rows of the output: a sector each
        for row, ok, value in loaded:
            e.store(e.address("out", e.value("mad.lo.u32", "u32", col, str(m), row), dt), value, dt, guard=ok,
                    sectors=min(tile, WARP))
        return Launch.make((-(-n // tile), -(-m // tile)), (tile, rows))
    pad = tile + 1
    buf = e.shared("tile", tile * pad)
    put = e.value("mad.lo.u32", "u32", e.value("mad.lo.u32", "u32", "%tid.y", str(pad), "%tid.x"), "4", buf)
    for r, (_, _, value) in zip(steps, loaded, strict=True):
        e("st.shared.f32", f"[{put}+{r * pad * 4}]", value)
    e("bar.sync", "0")
    out_col = e.value("mad.lo.u32", "u32", "%ctaid.y", str(tile), "%tid.x")  # an input row
    out_row0 = e.value("mad.lo.u32", "u32", "%ctaid.x", str(tile), "%tid.y")  # an input column
    get = e.value("mad.lo.u32", "u32", e.value("mad.lo.u32", "u32", "%tid.x", str(pad), "%tid.y"), "4", buf)
    for r, (out_row, ok) in zip(steps, _rows(e, out_row0, out_col, steps, (n, m), tile), strict=True):
        value = e.value("ld.shared.f32", "f32", f"[{get}+{r * 4}]")
        e.store(e.address("out", e.value("mad.lo.u32", "u32", out_row, str(m), out_col), dt), value, dt, guard=ok)
    return Launch.make((-(-n // tile), -(-m // tile)), (tile, rows))


def _rows(e: Asm, first: str, col: str, steps: range, shape: tuple[int, int], tile: int
          ) -> list[tuple[str, str | None]]:
    """The rows first + r (r in steps) a thread handles at column `col` of a tile of a matrix of `shape`,
    each with its guard (inside the matrix; None: always)."""
    col_ok = None if shape[1] % tile == 0 else e.value("setp.lt.u32", "pred", col, str(shape[1]))
    rows = []
    for r in steps:
        row = e.value("add.u32", "u32", first, str(r)) if r else first
        inside = None if shape[0] % tile == 0 else e.value("setp.lt.u32", "pred", row, str(shape[0]))
        rows.append((row, e.both(col_ok, inside)))
    return rows


def _gather(e: Asm, region: Region, param: str, block: int) -> Launch:
    (source,) = region.inputs
    out, perm = region.root.shape, region.root.attrs["perm"]
    size = math.prod(out)
    i = e.value("mad.lo.u32", "u32", "%ctaid.x", str(block), "%tid.x")
    ok = None if size % block == 0 else e.value("setp.lt.u32", "pred", i, str(size))
    position = Indexer(e, out, i)
    strides = [math.prod(source.type.shape[a + 1:]) for a in range(len(perm))]
    offset = "0"
    for axis, p in enumerate(perm):  # output axis `axis` walks input axis p
        if out[axis] != 1:
            offset = (e.value("mul.lo.u32", "u32", position.coord(axis), str(strides[p])) if offset == "0" else
                      e.value("mad.lo.u32", "u32", position.coord(axis), str(strides[p]), offset))
    dt = source.type.dtype
    value = e.load(e.address(param, offset, dt), dt, guard=ok)
    e.store(e.address("out", i, dt), value, dt, guard=ok)
    return Launch.make(max(1, -(-size // block)), block)


TEMPLATE = Template("transpose", default, space, generate)
