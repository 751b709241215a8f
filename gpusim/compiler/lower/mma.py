"""Matrix multiply on the tensor cores: C = A @ B with f16 or bf16 operands (mma.sync m16n8k16, f32
accumulate) or s8 ones (m16n8k32, s32 accumulate, converted to f32 for the epilogue: the precision
pass's dequantise multiply is part of the fused epilogue), the element-wise epilogue (bias, activation,
residual, dequantise) applied to each accumulator as the CUDA-core template applies it, batched operands
one batch per grid z (lower/matmul.py's rebasing).

A block of WM x WN warps computes a BM x BN tile of C; warp (wm, wn) owns the (BM/WM) x (BN/WN)
sub-tile at rows wm BM/WM, columns wn BN/WN, as (BM/WM/16) x (BN/WN/8) mma tiles of 16 x 8. K is walked
BK elements at a time (a k tile: BK x 2 bytes of f16/bf16, BK bytes of s8, a multiple of 32 bytes, the
K of one mma):

- **copies**: each k tile of A (BM rows of BK elements) and of B reach shared memory by cp.async.cg,
  16 bytes a copy (chunks split over the block's threads), through a ring of `num_stages` stages: the
  prologue issues tiles 0 .. S-2, then per tile kt: `cp.async.wait_group S-2` (tile kt has landed for
  this thread's copies), `bar.sync` (for everyone's, and everyone has finished with tile kt-1), the copy
  of tile kt+S-1 into tile kt-1's stage, the mma of tile kt. With one stage: copy, wait_group 0,
  bar.sync, mma, bar.sync (no overlap of the copy with the mma). The copies of one thread of one k tile
  form one commit group; past the last tile an empty group keeps wait_group's count the pipeline depth;
- **layout**: a row of a stage is R = 16 C bytes (C chunks); chunk c of row r is stored at chunk
  c ^ f(r), f(r) = r mod 8 for C >= 8 and (r >> log2(8 / C)) mod C below (an XOR swizzle): the 8 rows an
  ldmatrix phase reads land on 8 different 16-byte groups of banks, so ldmatrix.x4 moves its 512 bytes
  in 4 wavefronts, without bank conflicts;
- **fragments**: A (row-major, M x K) is stored as BM rows of K chunks and read by ldmatrix.x4 (16 rows x
  32 bytes: the four A registers of one mma, for f16/bf16 and for s8 alike); B is stored as it lies in
  memory: K x N (f16/bf16 only) as BK rows of N chunks, read by ldmatrix.x4.trans (two n8 tiles' B
  registers), or transposed N x K (a `matmul_t` with trans_b: the "TN" layout, and the one the int8
  precision pass gives its weights, since s8 has no transposing ldmatrix) as BN rows of K chunks, read by
  ldmatrix.x4; per 32-byte k step the next step's fragments load while this step's mma run;
- **edges**: a chunk outside the matrix (a row past M or N, a column past K or N) is not copied but
  zero-filled by a `st.shared.v4` in its place (what PTX's cp.async src-size 0 form does): the mma then
  adds zeros, and the epilogue's stores are guarded by row < M and column < N. A whole 16-byte chunk is
  inside or outside, so the contiguous dimension of each operand (K of A, N of B, K of B^T) must be a
  multiple of 16 bytes (8 f16 elements, 16 s8), and every row then starts 16-byte aligned; otherwise,
  and for A read transposed (trans_a) or s8 B not transposed, `unsupported` says why and lowering falls
  back to the CUDA-core template (lower/matmul.py), which reads any shape.

Parameters: BM, BN (the block tile), BK (elements of K a stage holds), WM, WN (warps along M and N; a
warp's tile is a multiple of 16 x 16), num_stages (1..4)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import WARP, WIDTH, Asm
from gpusim.compiler.lower.expr import Indexer, Values
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.matmul import find_matmul, matmul_dims, rebatched, transposed
from gpusim.compiler.lower.region import Region
from gpusim.config import Config
from gpusim.functional import Launch

# operand dtype -> (mma mnemonic, accumulator register type, config precision, mma K, FMAs of one mma)
MMA = {"f16": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "f32", "f16", 16, 16 * 8 * 16),
       "bf16": ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "f32", "bf16", 16, 16 * 8 * 16),
       "i8": ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "s32", "s8", 32, 16 * 8 * 32)}
CHUNK = 16  # bytes of one cp.async and one ldmatrix row
STEP = 32  # bytes of K one mma reads per row (m16n8k16 f16, m16n8k32 s8)
TILES = (16, 32, 64, 128)
STAGES = (1, 2, 3, 4)


def operands(region: Region) -> tuple[str, str]:
    """The dtypes of A and B."""
    mm = find_matmul(region)
    types = {i.name: i.type for i in region.inputs}
    return types[mm.inputs[0]].dtype, types[mm.inputs[1]].dtype


def unsupported(region: Region, cfg: Config | None) -> str | None:
    """Why the tensor-core template does not lower `region`'s matmul on `cfg` (None: it does)."""
    a, b = operands(region)
    if a != b or a not in MMA:
        return f"operands {a} and {b} (the tensor-core template takes f16, bf16 or i8 pairs)"
    tensor = None if cfg is None else cfg.units.get("tensor")
    if tensor is None or tensor.fma_per_cycle(MMA[a][2]) is None:
        return f"{'no config' if cfg is None else cfg.name} has no tensor unit for {MMA[a][2]}"
    return _layout(region)


def _layout(region: Region) -> str | None:
    """Why the template cannot read `region`'s operands as they lie in memory (None: it can)."""
    a = operands(region)[0]
    _, m, k, n = matmul_dims(region)
    ta, tb = transposed(find_matmul(region))
    if ta:
        return "A is read transposed (an ldmatrix.trans of A^T is not written)"
    if a == "i8" and not tb:
        return ("s8 B not transposed (ldmatrix transposes 16-bit elements only; the int8 precision pass "
                "stores weights N x K)")
    per = CHUNK // WIDTH[a]
    if k % per or (not tb and n % per):
        return (f"{'K' if k % per else 'N'} = {k if k % per else n} is not a multiple of {per} {a} elements "
                "(16-byte copies)")
    return None


def default(region: Region) -> dict[str, Any]:
    """A 32 x 32 warp tile, the block tile no larger than the matrix needs, three stages."""
    _, m, _, n = matmul_dims(region)
    bm, bn = (min(64, max(16, 1 << (d - 1).bit_length())) for d in (m, n))
    dt = operands(region)[0]
    return {"BM": bm, "BN": bn, "BK": 64 // WIDTH[dt], "WM": max(1, bm // 32), "WN": max(1, bn // 32),
            "num_stages": 3}


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    """Tiles up to twice M and N, k tiles of 32, 64 or 128 bytes, 1 to 4 warps each way, 1 to 4 stages."""
    _, m, _, n = matmul_dims(region)
    es = WIDTH[operands(region)[0]]
    return {"BM": tuple(t for t in TILES if t < 2 * m or t == TILES[0]),
            "BN": tuple(t for t in TILES if t < 2 * n or t == TILES[0]),
            "BK": tuple(b // es for b in (32, 64, 128)), "WM": (1, 2, 4), "WN": (1, 2, 4), "num_stages": STAGES}


def _swizzle(e: Asm, row: str, chunks: int) -> str | None:
    """f(row) of the module docstring (a u32 register; None when it is 0)."""
    if chunks == 1:
        return None
    if chunks >= 8:
        return e.value("and.b32", "u32", row, "7")
    shifted = e.value("shr.u32", "u32", row, str((8 // chunks).bit_length() - 1))
    return e.value("and.b32", "u32", shifted, str(chunks - 1))


def _xor(e: Asm, a: str, b: str | None) -> str:
    return a if b is None else e.value("xor.b32", "u32", a, b)


class _Operand:
    """One operand's k tiles in shared memory: `rows` rows of `chunks` 16-byte chunks a stage, at byte
    `base` of a stage; `along_k`: the rows run along M or N and the chunks along K (A, B^T), else the rows
    run along K and the chunks along N (B)."""

    def __init__(self, param: str, dtype: str, rows: int, chunks: int, base: int, along_k: bool, *, lead: int,
                 limit: int, exact: bool, block_row: str, bk: int, tile_step: int):
        """`lead`: elements between rows in memory; `block_row`: the block's first row (along_k) or column
        (B) in the matrix, `limit` the matrix's rows or columns there, `exact` when the block's tiles never
        cross it; `bk`: K elements a tile; `tile_step`: bytes from one k tile to the next in memory."""
        self.param, self.dtype, self.rows, self.chunks, self.base = param, dtype, rows, chunks, base
        self.along_k, self.lead, self.limit, self.exact = along_k, lead, limit, exact
        self.block_row, self.bk, self.tile_step = block_row, bk, tile_step
        self.slots: list[tuple[str, str, str | None, str | None]] = []  # global, shared, static guard, k index

    @property
    def bytes(self) -> int:
        return self.rows * self.chunks * CHUNK


def _copy_slots(e: Asm, op: _Operand, tid: str, threads: int, origin: str, k: int, bk: int) -> None:
    """Per copy of a thread (chunks tid, tid + threads, ...): its global address (of tile 0), its place in
    stage 0, its guard against the matrix's edge along rows or N (None: always inside) and, when K is not a
    multiple of BK, a register holding its K index in the tile being issued (advanced by BK a tile)."""
    per = CHUNK // WIDTH[op.dtype]
    total = op.rows * op.chunks
    if total % threads:
        raise CompilerError(f"mma: the {op.rows} x {op.chunks * per} tile of {op.param} ({total} 16-byte chunks) "
                            f"must split evenly over {threads} threads")
    chunk = e.value("and.b32", "u32", tid, str(op.chunks - 1))
    first = e.value("shr.u32", "u32", tid, str(op.chunks.bit_length() - 1))
    for s in range(total // threads):
        row = e.value("add.u32", "u32", first, str(s * threads // op.chunks)) if s else first
        place = e.value("shl.b32", "u32", _xor(e, chunk, _swizzle(e, row, op.chunks)), "4")
        place = e.value("mad.lo.u32", "u32", row, str(op.chunks * CHUNK), place)
        place = e.value("add.u32", "u32", place, origin)
        col = e.value("mul.lo.u32", "u32", chunk, str(per))
        if op.along_k:  # rows of M or N from `origin`'s block offset, chunks along K
            grow = e.value("add.u32", "u32", op.block_row, row)
            index = e.value("mad.lo.u32", "u32", grow, str(op.lead), col)
            ok = None if op.exact else e.value("setp.lt.u32", "pred", grow, str(op.limit))
            kpos = None if k % bk == 0 else e.value("mov.u32", "u32", col)
        else:  # rows of K, chunks along N from the block's column
            gcol = e.value("add.u32", "u32", op.block_row, col)
            index = e.value("mad.lo.u32", "u32", row, str(op.lead), gcol)
            ok = None if op.exact else e.value("setp.lt.u32", "pred", gcol, str(op.limit))
            kpos = None if k % bk == 0 else e.value("mov.u32", "u32", row)
        address = e.value("add.u64", "u64", e.pointer(op.param),
                          e.value("mul.wide.u32", "u64", index, str(WIDTH[op.dtype])))
        op.slots.append((address, place, ok, kpos))


def _issue(e: Asm, ops: list[_Operand], stage: str | int, more: str | None, k: int, zero: str) -> None:
    """cp.async of the next k tile of every operand into `stage` (a byte offset: register or immediate),
    zero-filling what lies outside the matrices, then commit_group; advance the addresses (and K indices)
    to the tile after. `more`: the tile exists (None: it does)."""
    for op in ops:
        for address, place, ok, kpos in op.slots:
            inside = e.both(ok, None if kpos is None else e.value("setp.lt.u32", "pred", kpos, str(k)))
            at = f"[{place}+{stage}]" if isinstance(stage, int) else f"[{e.value('add.u32', 'u32', place, stage)}]"
            at = at.replace("+0]", "]")
            e("cp.async.cg.shared.global", at, f"[{address}]", str(CHUNK), guard=e.both(inside, more))
            e.load_bytes += e.weight * WARP * CHUNK  # a warp's copy: 512 bytes from L2 (cp.async.cg skips L1)
            if inside is not None:
                e("st.shared.v4.u32", at, f"{{{zero}, {zero}, {zero}, {zero}}}", guard=f"!{inside}")
            e("add.u64", address, address, str(op.tile_step))
            if kpos is not None:
                e("add.u32", kpos, kpos, str(op.bk))
    e("cp.async.commit_group")


def _warp_tile(region: Region, dt: str, shape: tuple[int, ...], tiles: tuple[int, ...]) -> tuple[int, int, int]:
    """A warp's tile (BM/WM x BN/WN) and the threads of a block, once the parameters (BM, BN, BK, WM, WN,
    num_stages) are checked against the tensor cores and the region (its result of `shape`, operands of
    dtype `dt`); CompilerError naming what does not fit."""
    bm, bn, bk, wm_n, wn_n, stages = tiles
    if dt not in MMA or operands(region)[1] != dt:
        raise CompilerError(f"mma: operands {'/'.join(operands(region))}; the tensor-core template takes f16, "
                            "bf16 or i8 pairs")
    es = WIDTH[dt]
    if stages not in STAGES:
        raise CompilerError(f"mma: num_stages {stages}; must be 1..4")
    if any(v & (v - 1) or v < 1 for v in (bm, bn, bk, wm_n, wn_n)):
        raise CompilerError("mma: BM, BN, BK, WM and WN must be powers of two")
    if bk * es % STEP:
        raise CompilerError(f"mma: BK {bk} is {bk * es} bytes of {dt}; a multiple of {STEP} (one mma's K)")
    tm, tn = bm // max(wm_n, 1), bn // max(wn_n, 1)
    if tm < 16 or tn < 16:
        raise CompilerError(f"mma: a warp's tile (BM/WM x BN/WN = {tm} x {tn}) must be at least 16 x 16")
    threads = WARP * wm_n * wn_n
    if threads > 1024:
        raise CompilerError(f"mma: WM x WN = {wm_n * wn_n} warps; at most 32")
    if region.root.shape != shape:
        raise CompilerError(f"node %{region.node.name}: the epilogue's result {region.root.type} is not "
                            f"{'x'.join(map(str, shape))}")
    reason = _layout(region)
    if reason is not None:
        raise CompilerError(f"node %{region.node.name}: the tensor-core template does not apply: {reason}")
    return tm, tn, threads


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    batch, m, k, n = matmul_dims(region)
    batches = math.prod(batch)
    bm, bn, bk, wm_n, wn_n, stages = (int(params[p]) for p in ("BM", "BN", "BK", "WM", "WN", "num_stages"))
    mm = find_matmul(region)
    dt = operands(region)[0]
    tm, tn, threads = _warp_tile(region, dt, (*batch, m, n), (bm, bn, bk, wm_n, wn_n, stages))
    mnemonic, acc_type, precision, _, fmas = MMA[dt]
    es = WIDTH[dt]
    tb = transposed(mm)[1]
    e = Asm(name)
    names = declare(e, region)
    region = rebatched(e, region, names, batch, mm)
    a_param, b_param = (names[i] for i in mm.inputs)
    kc = bk * es // CHUNK  # chunks of a row along K
    row0, col0 = (e.value("mul.lo.u32", "u32", f"%ctaid.{axis}", str(t)) for axis, t in (("y", bm), ("x", bn)))
    a = _Operand(a_param, dt, bm, kc, 0, True, lead=k, limit=m, exact=m % bm == 0, block_row=row0, bk=bk,
                 tile_step=bk * es)
    if tb:  # B^T: BN rows of N x K
        b = _Operand(b_param, dt, bn, kc, a.bytes, True, lead=k, limit=n, exact=n % bn == 0, block_row=col0,
                     bk=bk, tile_step=bk * es)
    else:  # B: BK rows of K x N
        b = _Operand(b_param, dt, bk, bn * es // CHUNK, a.bytes, False, lead=n, limit=n, exact=n % bn == 0,
                     block_row=col0, bk=bk, tile_step=bk * n * es)
    stage_bytes = a.bytes + b.bytes
    smem = e.shared("smem", stages * stage_bytes, "b8")
    origin = e.value("mov.u32", "u32", smem)
    tid = "%tid.x"
    for op in (a, b):
        _copy_slots(e, op, tid, threads, e.value("add.u32", "u32", origin, str(op.base)) if op.base else origin,
                    k, bk)
    zero = e.value("mov.u32", "u32", "0")

    # ldmatrix addresses of this lane (stage 0): A per k step, B per k step (B^T) or per pair of n8 tiles (B)
    lane = e.value("and.b32", "u32", tid, "31")
    warp = e.value("shr.u32", "u32", tid, "5")
    wm = e.value("shr.u32", "u32", warp, str(wn_n.bit_length() - 1)) if wn_n > 1 else warp
    wn = e.value("and.b32", "u32", warp, str(wn_n - 1)) if wn_n > 1 else "0"
    steps = bk * es // STEP
    a_reads = _kmajor_reads(e, a, origin, lane, wm, tm, steps, b_layout=False)
    if tb:
        b_reads = _kmajor_reads(e, b, origin, lane, wn, tn, steps, b_layout=True)
    else:
        b_reads = _nmajor_reads(e, b, origin, lane, wn, tn)
    mi_n, nj_n = tm // 16, tn // 8
    acc = [[[e.value(f"mov.{acc_type}", acc_type, "0") for _ in range(4)] for _ in range(nj_n)]
           for _ in range(mi_n)]

    def fragments(stage: str, s: int) -> tuple[list[list[str]], list[list[str]]]:
        af = []
        for mi in range(mi_n):
            af.append(_ldmatrix(e, a_reads[s], stage, mi * 16 * a.chunks * CHUNK, trans=False))
        bf = []
        for q in range(nj_n // 2):
            if tb:
                bf.append(_ldmatrix(e, b_reads[s], stage, q * 16 * b.chunks * CHUNK, trans=False))
            else:
                bf.append(_ldmatrix(e, b_reads[q], stage, s * 16 * b.chunks * CHUNK, trans=True))
        return af, bf

    def compute(stage: str) -> None:
        """The mma of one k tile, the next k step's fragments loaded before this step's mma."""
        e.round_trips["shared"] += e.weight  # the first step's fragments, after the barrier
        frags = fragments(stage, 0)
        for s in range(steps):
            following = fragments(stage, s + 1) if s + 1 < steps else None
            af, bf = frags
            for mi in range(mi_n):
                for nj in range(nj_n):
                    c = ", ".join(acc[mi][nj])
                    bregs = bf[nj // 2][2 * (nj % 2): 2 * (nj % 2) + 2]
                    e(mnemonic, f"{{{c}}}", f"{{{', '.join(af[mi])}}}", f"{{{', '.join(bregs)}}}", f"{{{c}}}")
            frags = following

    mma_count = _k_loop(e, [a, b], compute, stages, stage_bytes, k, bk, zero) * steps * mi_n * nj_n
    _epilogue(e, region, names, mm, acc, acc_type, (m, n), (bm, bn, tm, tn), (wm, wn), lane)
    launch = Launch.make((-(-n // bn), -(-m // bm), batches), (threads, 1))
    # every block copies its panels once (cp.async.cg: from L2, no L1), so the unique bytes are the bytes
    return finish(e, region, "mma", params, launch,
                  flops=batches * (2 * m * n * k + m * n * (len(region.ops) - 1)),
                  tensor_fma={precision: mma_count * fmas})


def _k_loop(e: Asm, ops: list[_Operand], compute: Callable[[str], None], stages: int, stage_bytes: int, k: int,
            bk: int, zero: str) -> float:
    """The loop over K's tiles: with one stage, copy a tile, wait, compute, and let every warp finish
    before the next copy; with S stages, S - 1 tiles in flight in a ring (one barrier a tile). Returns how
    many times a thread runs `compute` (the loop's trips)."""
    tiles = -(-k // bk)
    if stages == 1:
        with e.loop(tiles):
            _issue(e, ops, 0, None, k, zero)
            e("cp.async.wait_group", "0")
            e.round_trips["global"] += e.weight
            e("bar.sync", "0")
            weight = e.weight
            compute("0")
            e("bar.sync", "0")
    else:
        for s in range(stages - 1):  # the prologue: tiles 0 .. S-2 (empty groups past the last)
            if s < tiles:
                _issue(e, ops, s * stage_bytes, None, k, zero)
            else:
                e("cp.async.commit_group")
        e.round_trips["global"] += 1
        ring = stages * stage_bytes
        cs = e.value("mov.u32", "u32", "0")  # the stage computed
        ls = e.value("mov.u32", "u32", str((stages - 1) * stage_bytes % ring))  # the stage filled next
        with e.loop(tiles) as kt:
            e("cp.async.wait_group", str(stages - 2))
            e("bar.sync", "0")
            if tiles > 1:
                later = e.value("add.u32", "u32", kt, str(stages - 1))
                _issue(e, ops, ls, e.value("setp.lt.u32", "pred", later, str(tiles)), k, zero)
            weight = e.weight
            compute(cs)
            if tiles > 1:
                for reg in (cs, ls):
                    e("add.u32", reg, reg, str(stage_bytes))
                    wrap = e.value("setp.ge.u32", "pred", reg, str(ring))
                    e("mov.u32", reg, "0", guard=wrap)
        # the copy latency is waited for once, then one wait per S - 1 tiles (the copies of S - 1 tiles
        # in flight behind the mma)
        e.round_trips["global"] += (tiles - 1) / (stages - 1)
    return weight


def _kmajor_reads(e: Asm, op: _Operand, origin: str, lane: str, warp_index: str, warp_rows: int, steps: int,
                  *, b_layout: bool) -> list[str]:
    """Per k step, this lane's ldmatrix.x4 address (stage 0) in an operand stored as rows along M or N:
    A's lanes 0..15 give rows 0..15 of the first 16-byte chunk of the step, 16..31 of the second; B^T's
    lanes 0..7 and 8..15 rows 0..7 of the two chunks, 16..31 rows 8..15 (two n8 tiles)."""
    if b_layout:
        low = e.value("and.b32", "u32", lane, "7")
        row = e.value("mad.lo.u32", "u32", e.value("shr.u32", "u32", lane, "4"), "8", low)
        half = e.value("and.b32", "u32", e.value("shr.u32", "u32", lane, "3"), "1")
    else:
        row = e.value("and.b32", "u32", lane, "15")
        half = e.value("shr.u32", "u32", lane, "4")
    g = _xor(e, half, _swizzle(e, row, op.chunks))
    base = e.value("mad.lo.u32", "u32", warp_index, str(warp_rows), row) if warp_index != "0" else row
    base = e.value("mad.lo.u32", "u32", base, str(op.chunks * CHUNK), origin)
    if op.base:
        base = e.value("add.u32", "u32", base, str(op.base))
    reads = []
    for s in range(steps):
        chunk = _xor(e, str(2 * s), g) if s else g
        reads.append(e.value("mad.lo.u32", "u32", chunk, str(CHUNK), base))
    return reads


def _nmajor_reads(e: Asm, op: _Operand, origin: str, lane: str, warp_index: str, warp_cols: int) -> list[str]:
    """Per pair of n8 tiles of the warp, this lane's ldmatrix.x4.trans address (stage 0, first k step) in
    B stored as K rows: lanes 0..7 and 8..15 give rows (k) 0..7 and 8..15 of the pair's first chunk,
    16..31 the same of its second."""
    row = e.value("and.b32", "u32", lane, "15")
    half = e.value("shr.u32", "u32", lane, "4")
    g = _xor(e, half, _swizzle(e, row, op.chunks))
    base = e.value("mad.lo.u32", "u32", row, str(op.chunks * CHUNK), origin)
    base = e.value("add.u32", "u32", base, str(op.base))
    first = (e.value("mov.u32", "u32", "0") if warp_index == "0"
             else e.value("mul.lo.u32", "u32", warp_index, str(warp_cols * WIDTH[op.dtype] // CHUNK)))
    reads = []
    for q in range(warp_cols // 16):
        chunk = e.value("add.u32", "u32", first, str(2 * q)) if q else first
        reads.append(e.value("mad.lo.u32", "u32", e.value("xor.b32", "u32", chunk, g), str(CHUNK), base))
    return reads


def _ldmatrix(e: Asm, address: str, stage: str, offset: int, *, trans: bool) -> list[str]:
    """Four fragment registers by ldmatrix.x4 at `address` + `stage` + `offset`."""
    at = e.value("add.u32", "u32", address, stage) if stage != "0" else address
    regs = [e.reg("u32") for _ in range(4)]
    e(f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.shared.b16", f"{{{', '.join(regs)}}}",
      f"[{at}+{offset}]" if offset else f"[{at}]")
    return regs


def _epilogue(e: Asm, region: Region, names: Mapping[str, str], mm, acc: list, acc_type: str,
              dims: tuple[int, int], tiles: tuple[int, int, int, int], warp: tuple[str, str], lane: str) -> None:
    """Each accumulator through the epilogue and stored: accumulator r of mma tile (mi, nj) is C at row
    16 mi + g + 8 (r >= 2), column 8 nj + 2 t + (r & 1) of the warp's tile (g = lane / 4, t = lane % 4).
    The side operands (a bias by column, a residual by element) are loaded first, every element's, each
    distinct one once, and only then widened to f32: their latencies overlap (one round trip)."""
    m, n = dims
    bm, bn, tm, tn = tiles
    g = e.value("shr.u32", "u32", lane, "2")
    t2 = e.value("shl.b32", "u32", e.value("and.b32", "u32", lane, "3"), "1")
    row0 = e.value("mad.lo.u32", "u32", "%ctaid.y", str(bm), g)
    if warp[0] != "0":
        row0 = e.value("mad.lo.u32", "u32", warp[0], str(tm), row0)
    col0 = e.value("mad.lo.u32", "u32", "%ctaid.x", str(bn), t2)
    if warp[1] != "0":
        col0 = e.value("mad.lo.u32", "u32", warp[1], str(tn), col0)
    rows = [e.value("add.u32", "u32", row0, str(i * 8)) if i else row0 for i in range(2 * len(acc))]
    offsets = [8 * (j // 2) + j % 2 for j in range(2 * len(acc[0]))]
    cols = [e.value("add.u32", "u32", col0, str(o)) if o else col0 for o in offsets]
    row_ok = [None if m % bm == 0 else e.value("setp.lt.u32", "pred", r, str(m)) for r in rows]
    col_ok = [None if n % bn == 0 else e.value("setp.lt.u32", "pred", c, str(n)) for c in cols]
    side = [i for i in region.buffers if i.name not in mm.inputs]
    loaded: dict[tuple[str, str], str] = {}  # (input, offset register) -> its raw register
    elements = []
    for mi, row in enumerate(acc):
        for nj, regs in enumerate(row):
            for r, value in enumerate(regs):
                i, j = 2 * mi + r // 2, 2 * nj + r % 2
                ok = e.both(row_ok[i], col_ok[j])
                flat = e.value("mad.lo.u32", "u32", rows[i], str(n), cols[j])
                preset = {}
                for inp in side:
                    at = _side_offset(inp.type.shape, (m, n), rows[i], cols[j], flat)
                    if at is None:
                        continue
                    guard = {rows[i]: row_ok[i], cols[j]: col_ok[j]}.get(at, ok) if at != "0" else None
                    if (inp.name, at) not in loaded:
                        loaded[inp.name, at] = _raw_load(e, e.address(names[inp.name], at, inp.type.dtype),
                                                         inp.type.dtype, guard)
                    preset[inp.name] = (inp.name, at)
                elements.append((i, j, ok, flat, value, preset))
    widened = {key: _widen(e, reg, key[0], region) for key, reg in loaded.items()}
    pending = []
    for i, j, ok, flat, value, preset in elements:
        if acc_type == "s32":
            value = e.value("cvt.rn.f32.s32", "f32", value)
        values = Values(e, region, names, Indexer(e, (m, n), flat, coords={0: rows[i], 1: cols[j]}), ok,
                        preset={mm.name: value, **{name: widened[key] for name, key in preset.items()}})
        values.prefetch()
        pending.append((flat, ok, values))
    dt = region.root.dtype
    for flat, ok, values in pending:
        # a warp's store: 8 rows (g) of 4 lanes 2 elements apart, one sector a row
        e.store(e.address("out", flat, dt), values[region.root.name], dt, guard=ok, sectors=8)


def _side_offset(shape: tuple[int, ...], dims: tuple[int, int], row: str, col: str, flat: str) -> str | None:
    """The element offset of a side operand of `shape` at (row, col) of the m x n result, for the shapes
    an epilogue has (one element, a row vector, a column vector, the whole matrix); None for others
    (Values then indexes it)."""
    s = tuple(shape)
    while s and s[0] == 1:
        s = s[1:]
    m, n = dims
    if not s:
        return "0"
    if s == (n,) and n > 1:
        return col
    if s == (m, 1) and m > 1:
        return row
    if s == (m, n):
        return flat
    return None


_RAW = {"f32": ("f32", "f32"), "f16": ("f16", "f16"), "bf16": ("b16", "bf16"), "i8": ("s8", "s32")}


def _raw_load(e: Asm, address: str, dtype: str, guard: str | None) -> str:
    """A side operand's element in the register its type is held in (not yet widened)."""
    width, reg = _RAW[dtype]
    held = e.reg(reg)
    e(f"ld.global.{width}", held, f"[{address}]", guard=guard)
    return held


def _widen(e: Asm, held: str, name: str, region: Region) -> str:
    """`held` (a raw load of input `name`) as an f32 register."""
    dtype = next(i.type.dtype for i in region.inputs if i.name == name)
    if dtype == "f32":
        return held
    return e.value({"f16": "cvt.f32.f16", "bf16": "cvt.f32.bf16", "i8": "cvt.rn.f32.s8"}[dtype], "f32", held)


TEMPLATE = Template("mma", default, space, generate)
