"""Matrix multiply C = A @ B (A is [batch..] M x K, B is [batch..] K x N) with a fused element-wise
epilogue (bias, activation, ...), accumulating in f32. Batched operands (multi-head attention, grouped
convolution) run one batch per grid z index: every block first moves the pointers of A, B, C and of the
batched epilogue operands to its batch's matrices (an operand without batch dimensions is shared).

A block computes a BM x BN tile of C with (BN / TN) x (BM / TM) threads; thread (tx, ty) owns the
TM x TN outputs at rows ty + i (BM / TM) and columns tx + j (BN / TN) of the tile (strided, so a warp's
stores are contiguous). K is walked BK at a time:

- `use_shared`: the block copies the BM x BK panel of A and the BK x BN panel of B into shared memory
  (every thread loads BM BK / threads and BK BN / threads elements, coalesced), bar.sync, each thread
  accumulates its micro-tile from shared memory (A's rows padded by one word: no bank conflicts),
  bar.sync;
- otherwise each thread loads its TM rows of A and TN columns of B from global memory (through the L1
  where the config caches global loads), all BK steps' loads first, then the FMAs.

A `matmul_t` node reads A stored transposed (trans_a: A^T is [batch..] K x M in memory) or B (trans_b:
N x K): the same tiles, read with swapped strides. In the shared-memory loop a thread copies the
panel along the stored rows (coalesced: consecutive threads read consecutive M of A^T, consecutive K
of B^T) and stores each element at its transposed place in the panel, so the inner loop is unchanged
(A^T's stores go to rows padded by a word: no bank conflicts; B^T's land bn words apart, which
conflict when bn is a multiple of 32, the price of a transposed store); the direct loop steps A^T's
pointer by M per k (consecutive rows of a warp: contiguous) and B^T's by one (each column its own
sectors).

Out-of-range rows, columns and a last partial K step are guarded (loads fill 0); at most 512 FMAs are
unrolled per K step (TM x TN x BK), which keeps a kernel under ~2,000 instructions. After the loop, the
epilogue computes the rest of the region at each output element (side operands broadcast by
expr.Indexer) and stores it. Parameters: BM, BN, BK, TM, TN, use_shared.

`generate(..., operands=Operands)` is the seam for a B operand that is not a matrix in memory (an
implicit GEMM's input windows, lower/conv.py): the hook moves pointers to the block's batch itself and
computes, per K panel, each copied element's address and guard (the shared-memory loop only)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import SECTOR, WARP, WIDTH, Asm, fimm
from gpusim.compiler.lower.expr import Indexer, Values, divide, modulo
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.region import Region
from gpusim.compiler.tensor import TensorType
from gpusim.config import Config
from gpusim.functional import Launch

DEFAULT = {"BM": 16, "BN": 16, "BK": 16, "TM": 1, "TN": 1, "use_shared": True}
TILES = (8, 16, 32, 64, 128)
MAX_UNROLL = 512  # FMAs per K step: keeps kernels under ~2,000 instructions


class Operands(Protocol):
    """How a kernel reads operands the template does not address as matrices: `rebase` moves pointers to
    the block's batch (the z index) before anything is loaded (the operands it moves are declared
    without batch dimensions in the region); `b_slots` is called once before the K loop with what
    `_slots` takes for B's bk x bn panel (thread index, threads, panel rows and columns, its first
    column, the column limit or None) and returns, for each element a thread copies, its row within the
    panel and its shared-memory address (elements tid, tid + threads, ...); `b_panel` is called at the
    start of every K panel and returns per element its global address and guard (None: always inside);
    `b_advance` after every panel but the last (the panel moves BK rows down B)."""

    def rebase(self, e: Asm, names: Mapping[str, str]) -> None: ...

    def b_slots(self, e: Asm, tid: str, threads: int, panel: tuple[int, int], shared: str, col_base: str,
                limit: int | None) -> list[tuple[str, str]]: ...

    def b_panel(self, e: Asm, names: Mapping[str, str]) -> list[tuple[str, str | None]]: ...

    def b_advance(self, e: Asm) -> None: ...


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    """The tiles up to twice M and N; B^T only through shared memory (its direct loads put each thread of
    a warp on its own row of B^T: a sector per thread, 5 to 10 times slower in simulation than the
    shared-memory loop, which the analytical model does not see)."""
    _, m, _, n = matmul_dims(region)
    return {"BM": tuple(t for t in TILES if t < 2 * m or t == TILES[0]),
            "BN": tuple(t for t in TILES if t < 2 * n or t == TILES[0]),
            "BK": (8, 16, 32), "TM": (1, 2, 4, 8), "TN": (1, 2, 4, 8),
            "use_shared": (True,) if transposed(find_matmul(region))[1] else (True, False)}


def find_matmul(region: Region):
    """The region's matmul or matmul_t node."""
    return next(n for n in region.ops if n.op in ("matmul", "matmul_t"))


def transposed(mm) -> tuple[bool, bool]:
    """Whether the node reads A and B transposed (matmul_t's trans_a, trans_b)."""
    return (bool(mm.attrs["trans_a"]), bool(mm.attrs["trans_b"])) if mm.op == "matmul_t" else (False, False)


def matmul_dims(region: Region) -> tuple[tuple[int, ...], int, int, int]:
    """The batch shape, M, K and N."""
    mm = find_matmul(region)
    types = {i.name: i.type for i in region.inputs}
    a, b = (types[i] for i in mm.inputs)
    if a.rank < 2 or b.rank < 2:
        raise CompilerError(f"node %{region.node.name}: lowering supports matmul of matrices, not {a} @ {b}")
    ta, tb = transposed(mm)
    m, k = a.shape[-2:][::-1] if ta else a.shape[-2:]
    return mm.shape[:-2], m, k, (b.shape[-2] if tb else b.shape[-1])


def batch_stride(shape: tuple[int, ...], batch: tuple[int, ...], what: str) -> int:
    """Elements between one batch's matrix and the next in an operand of `shape` (0: shared by all)."""
    lead = (1,) * (len(batch) + 2 - len(shape)) + tuple(shape[:-2])
    if all(d == 1 for d in lead):
        return 0
    if lead != batch:
        raise CompilerError(f"{what}: batch dimensions {list(shape[:-2])} neither match the result's "
                            f"{list(batch)} nor are all 1")
    return math.prod(shape[-2:])


def rebatched(e: Asm, region: Region, names: Mapping[str, str], batch: tuple[int, ...], mm) -> Region:
    """Every batched operand's pointer moved to the block's batch; the region with the epilogue operands
    seen as matrices (their batch dimensions dropped)."""
    z = "%ctaid.z"
    inputs = []
    for i in region.inputs:
        shape = i.type.shape
        if batch and i.scalar is None:
            stride = batch_stride(shape, batch, f"node %{region.node.name}: operand %{i.name}")
            if stride:
                e.rebase(names[i.name], e.value("mul.lo.u32", "u32", z, str(stride)), i.type.dtype)
        if len(shape) > 2 and i.name not in mm.inputs:
            i = replace(i, type=TensorType(shape[-2:], i.type.dtype))
        inputs.append(i)
    if batch:
        m, n = region.root.shape[-2:]
        e.rebase("out", e.value("mul.lo.u32", "u32", z, str(m * n)), region.root.dtype)
    return replace(region, inputs=tuple(inputs))


def generate(region: Region, params: Mapping[str, Any], name: str, operands: Operands | None = None) -> Kernel:
    batch, m, k, n = matmul_dims(region)
    batches = math.prod(batch)
    bm, bn, bk, tm, tn = (int(params[p]) for p in ("BM", "BN", "BK", "TM", "TN"))
    shared = bool(params["use_shared"])
    if bm % tm or bn % tn:
        raise CompilerError(f"matmul: BM {bm} must be a multiple of TM {tm}, BN {bn} of TN {tn}")
    tx_n, ty_n = bn // tn, bm // tm
    threads = tx_n * ty_n
    if not 32 <= threads <= 1024:
        raise CompilerError(f"matmul: (BN/TN) x (BM/TM) = {threads} threads per block; must be 32..1024")
    if tm * tn * bk > MAX_UNROLL:
        raise CompilerError(f"matmul: TM x TN x BK = {tm * tn * bk} FMAs unrolled per K step; at most {MAX_UNROLL}")
    if operands is not None and not shared:
        raise CompilerError("matmul: an operand read through a hook needs use_shared (the shared-memory loop)")
    if shared and (bm * bk % threads or bk * bn % threads):
        raise CompilerError(f"matmul: the {bm}x{bk} and {bk}x{bn} panels must split evenly over {threads} threads")
    if region.root.shape != (*batch, m, n):
        raise CompilerError(f"node %{region.node.name}: the epilogue's result {region.root.type} is not "
                            f"{'x'.join(map(str, (*batch, m, n)))}")
    mm = find_matmul(region)
    trans = transposed(mm)
    dt = region.root.dtype
    ab = next(i.type.dtype for i in region.inputs if i.name == mm.inputs[0])  # A's and B's (i8 -> f32 result)
    e = Asm(name)
    names = declare(e, region)
    if operands is not None:
        operands.rebase(e, names)
    region = rebatched(e, region, names, batch, mm)
    a_param, b_param = (names[i] for i in mm.inputs)
    row0 = e.value("mad.lo.u32", "u32", "%ctaid.y", str(bm), "%tid.y")
    col0 = e.value("mad.lo.u32", "u32", "%ctaid.x", str(bn), "%tid.x")
    rows = [e.value("add.u32", "u32", row0, str(i * ty_n)) if i else row0 for i in range(tm)]
    cols = [e.value("add.u32", "u32", col0, str(j * tx_n)) if j else col0 for j in range(tn)]
    row_ok = [None if m % bm == 0 else e.value("setp.lt.u32", "pred", r, str(m)) for r in rows]
    col_ok = [None if n % bn == 0 else e.value("setp.lt.u32", "pred", c, str(n)) for c in cols]
    acc = [[e.value("mov.f32", "f32", fimm(0.0)) for _ in range(tn)] for _ in range(tm)]
    before = e.load_bytes
    shape = (bm, bn, bk, tm, tn, tx_n, threads)
    if shared:
        _shared_loop(e, shape, (m, k, n), ab, a_param, b_param, acc, trans, (operands, names))
    else:
        _direct_loop(e, shape, (m, k, n), ab, a_param, b_param, acc, rows, cols, row_ok, col_ok, trans)
    main_bytes = e.load_bytes - before
    outputs = []
    for i in range(tm):
        for j in range(tn):
            ok = e.both(row_ok[i], col_ok[j])
            flat = e.value("mad.lo.u32", "u32", rows[i], str(n), cols[j])
            values = Values(e, region, names, Indexer(e, (m, n), flat, coords={0: rows[i], 1: cols[j]}), ok,
                            preset={mm.name: acc[i][j]})
            values.prefetch()  # the side operands of every output first
            outputs.append((flat, ok, values))
    for flat, ok, values in outputs:
        e.store(e.address("out", flat, dt), values[region.root.name], dt, guard=ok)
    launch = Launch.make((-(-n // bn), -(-m // bm), batches), (tx_n, ty_n))
    blocks = launch.num_blocks
    panels = blocks * (min(bm, m) + min(bn, n)) * k * WIDTH[ab]
    unique = (e.load_bytes - main_bytes) * blocks * launch.warps_per_block() + panels
    return finish(e, region, "matmul", params, launch,
                  flops=batches * (2 * m * n * k + m * n * (len(region.ops) - 1)),
                  unique_load_bytes=unique)


def _shared_loop(e: Asm, shape: tuple, dims: tuple, dt: str, a_param: str, b_param: str,
                 acc: list[list[str]], trans: tuple[bool, bool], hook: tuple = (None, {})) -> None:
    """The K loop through shared-memory panels (A^T, B^T copied along their stored rows)."""
    bm, bn, bk, tm, tn, tx_n, threads = shape
    m, k, n = dims
    ty_n = bm // tm
    stride = bk + 1  # A's rows padded by a word: a column read hits 32 banks
    a_sh, b_sh = e.shared("As", bm * stride), e.shared("Bs", bk * bn)
    tid = e.value("mad.lo.u32", "u32", "%tid.y", str(tx_n), "%tid.x")
    row_base = e.value("mul.lo.u32", "u32", "%ctaid.y", str(bm))
    col_base = e.value("mul.lo.u32", "u32", "%ctaid.x", str(bn))
    a_limit, b_limit = None if m % bm == 0 else m, None if n % bn == 0 else n
    if trans[0]:  # A^T: a bk x bm panel of the K x M matrix, stored transposed
        a_slots = _slots(e, tid, threads, (bk, bm), stride, a_sh, (a_param, m, dt), col_base=row_base,
                         limit=a_limit, swap=True)
    else:
        a_slots = _slots(e, tid, threads, (bm, bk), stride, a_sh, (a_param, k, dt), row_base=row_base, limit=a_limit)
    operands, names = hook
    b_places = []  # with a hook: B's elements (row in the panel, shared address); addresses come per panel
    if operands is not None:
        b_places, b_slots = operands.b_slots(e, tid, threads, (bk, bn), b_sh, col_base, b_limit), []
    elif trans[1]:  # B^T: a bn x bk panel of the N x K matrix, stored transposed
        b_slots = _slots(e, tid, threads, (bn, bk), bn, b_sh, (b_param, k, dt), row_base=col_base,
                         limit=b_limit, swap=True)
    else:
        b_slots = _slots(e, tid, threads, (bk, bn), bn, b_sh, (b_param, n, dt), col_base=col_base, limit=b_limit)
    a_step, b_step = bk * (m if trans[0] else 1), bk * (1 if trans[1] else n)
    a_read = e.value("mad.lo.u32", "u32", "%tid.y", str(stride * 4), a_sh)
    b_read = e.value("mad.lo.u32", "u32", "%tid.x", "4", b_sh)

    def panel(steps: int, last: bool) -> None:
        hooked = [] if operands is None else operands.b_panel(e, names)
        slots = a_slots + b_slots + [(*where, *place) for where, place in zip(hooked, b_places, strict=True)]
        loaded = []  # every load first, so that they overlap, then the stores to shared memory
        for address, ok, kk, at in slots:
            guard = e.both(ok, e.value("setp.lt.u32", "pred", kk, str(steps))) if last else ok
            loaded.append((at, e.load(address, dt, guard=guard, fill=0.0)))
        for at, value in loaded:
            e("st.shared.f32", f"[{at}]", value)
        e("bar.sync", "0")
        for s in range(steps):
            av = [e.value("ld.shared.f32", "f32", f"[{a_read}+{(i * ty_n * stride + s) * 4}]") for i in range(tm)]
            bv = [e.value("ld.shared.f32", "f32", f"[{b_read}+{(s * bn + j * tx_n) * 4}]") for j in range(tn)]
            for i in range(tm):
                for j in range(tn):
                    e("fma.rn.f32", acc[i][j], av[i], bv[j], acc[i][j])
        e("bar.sync", "0")
        if not last:
            for slots, step in ((a_slots, a_step), (b_slots, b_step)):
                for address, *_ in slots:
                    e("add.u64", address, address, str(step * WIDTH[dt]))
            if operands is not None:
                operands.b_advance(e)

    if k // bk:
        with e.loop(k // bk):
            panel(bk, False)
    if k % bk:
        panel(k % bk, True)


def _slots(e: Asm, tid: str, threads: int, panel: tuple[int, int], stride: int, shared: str,
           source: tuple[str, int, str], *, row_base: str | None = None, col_base: str | None = None,
           limit: int | None, swap: bool = False) -> list[tuple[str, str | None, str, str]]:
    """What each thread copies of a rows x cols panel (elements tid, tid + threads, ...): per element its
    global address (`source`: pointer parameter, leading dimension, dtype; the panel starts at row
    `row_base` of A or column `col_base` of B), its guard (that row or column below `limit`; None:
    always inside), its index along K (A's column, B's row; A^T's row, B^T's column) and its
    shared-memory address (row stride `stride`; `swap`: the panel stored transposed, element (r, c) at
    c x stride + r)."""
    param, lead, dt = source
    rows, cols = panel
    slots = []
    for r in range(rows * cols // threads):
        el = e.value("add.u32", "u32", tid, str(r * threads)) if r else tid
        row, col = divide(e, el, cols), modulo(e, el, cols)
        grow = e.value("add.u32", "u32", row_base, row) if row_base else row
        gcol = e.value("add.u32", "u32", col_base, col) if col_base else col
        address = e.address(param, e.value("mad.lo.u32", "u32", grow, str(lead), gcol), dt)
        ok = None if limit is None else e.value("setp.lt.u32", "pred", grow if row_base else gcol, str(limit))
        first, second = (col, row) if swap else (row, col)
        at = e.value("mad.lo.u32", "u32", e.value("mad.lo.u32", "u32", first, str(stride), second), "4", shared)
        slots.append((address, ok, col if row_base else row, at))
    return slots


def _direct_loop(e: Asm, shape: tuple, dims: tuple, dt: str, a_param: str, b_param: str, acc: list[list[str]],
                 rows: list[str], cols: list[str], row_ok: list, col_ok: list, trans: tuple[bool, bool]) -> None:
    """The K loop reading A and B from global memory."""
    _, _, bk, tm, tn, tx_n, _ = shape
    m, k, n = dims
    # per step of k: A's row moves one element (A^T's M elements), B's column N elements (B^T's one)
    a_k, b_k = (m if trans[0] else 1), (1 if trans[1] else n)
    a_rows = [e.address(a_param, r if trans[0] else e.value("mul.lo.u32", "u32", r, str(k)), dt) for r in rows]
    b_cols = [e.address(b_param, e.value("mul.lo.u32", "u32", c, str(k)) if trans[1] else c, dt) for c in cols]
    # a warp holds min(tx_n, 32) consecutive columns of as many rows as fit: one sector per row of A
    # (A^T: the rows are contiguous), the columns' contiguous elements of B (B^T: a sector per column)
    warp_rows, warp_cols = max(1, WARP // tx_n), min(tx_n, WARP)
    a_sectors = -(-warp_rows * WIDTH[dt] // SECTOR) if trans[0] else warp_rows
    b_sectors = warp_cols if trans[1] else -(-warp_cols * WIDTH[dt] // SECTOR)

    def steps(count: int, advance: bool) -> None:
        av = [[e.load(a_rows[i], dt, guard=row_ok[i], offset=s * a_k, sectors=a_sectors) for i in range(tm)]
              for s in range(count)]
        bv = [[e.load(b_cols[j], dt, guard=col_ok[j], offset=s * b_k, sectors=b_sectors) for j in range(tn)]
              for s in range(count)]
        for s in range(count):
            for i in range(tm):
                for j in range(tn):
                    e("fma.rn.f32", acc[i][j], av[s][i], bv[s][j], acc[i][j])
        if advance:
            for address in a_rows:
                e("add.u64", address, address, str(bk * a_k * WIDTH[dt]))
            for address in b_cols:
                e("add.u64", address, address, str(bk * b_k * WIDTH[dt]))

    if k // bk:
        with e.loop(k // bk):
            steps(bk, True)
    if k % bk:
        steps(k % bk, False)


TEMPLATE = Template("matmul", lambda region: dict(DEFAULT), space, generate)
