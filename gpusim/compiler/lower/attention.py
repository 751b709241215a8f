"""Fused attention (a flash-attention kernel): out = softmax(scale x q @ kᵀ) @ v over the last two axes,
batched over the leading ones, with the scores never written to memory.

One block per (query tile of BQ rows, batch): grid (ceil(Sq / BQ), batches), BQ threads, thread t owning
query row tile x BQ + t. Each thread holds its row of q in registers (pre-multiplied by scale x log2 e, so
that the softmax's exponentials are ex2 of the scores directly), its running maximum m, its running sum l
and its Dv accumulators o. The keys are walked BKV at a time:

1. the block copies the key tile (BKV x D of k; from kᵀ stored D x Sk, or k stored Sk x D when the node's
   `trans_b`) and the value tile (BKV x Dv) into shared memory, every thread BKV D / BQ and BKV Dv / BQ
   elements (the k and v tiles are contiguous runs of memory: coalesced), bar.sync;
2. each thread computes its BKV scores s_j = q . k_j (every thread of a warp reads the same shared word: a
   broadcast, no bank conflict), the tile's maximum, m' = max(m, tile max), the rescale a = 2^(m - m'),
   p_j = 2^(s_j - m'), l = a l + sum p_j and o = a o + sum p_j v_j (the online softmax of Milakov and
   Gimelshein, as FlashAttention uses it), bar.sync;
3. after the last tile (a partial one computes only its valid keys, its loads guarded), out = o / l.

The scores and probabilities live in registers only: the kernel reads q, k and v once per query tile
and writes the result, where the unfused graph writes and reads the Sq x Sk scores twice. f32 on CUDA
cores (f16 tensors are converted as they are loaded); a thread's q loads and result stores are a row
each (strided across a warp: a sector per lane when a row is 32 bytes or more), done once per thread.
Parameters: BQ (query rows a block, 32..1024), BKV (keys a tile)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import SECTOR, WARP, WIDTH, Asm, fimm
from gpusim.compiler.lower.expr import LOG2E, divide, modulo
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.region import Region
from gpusim.config import Config
from gpusim.functional import Launch

DEFAULT = {"BQ": 32, "BKV": 16}
MAX_UNROLL = 4096  # FMAs per key tile (BKV x (D + Dv)): keeps kernels under ~10,000 instructions


def dims(region: Region) -> tuple[tuple[int, ...], int, int, int, int]:
    """The batch shape, Sq, D, Sk and Dv of a fused_attention region."""
    node = region.root
    types = {i.name: i.type for i in region.inputs}
    q, b, v = (types[i] for i in node.inputs)
    sk, d = (b.shape[-2], b.shape[-1]) if node.attrs["trans_b"] else (b.shape[-1], b.shape[-2])
    return node.shape[:-2], q.shape[-2], d, sk, v.shape[-1]


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    """Query tiles up to twice Sq (at least 32 threads), key tiles up to twice Sk."""
    _, sq, _, sk, _ = dims(region)
    limit = cfg.sm.max_threads_per_block
    return {"BQ": tuple(t for t in (32, 64, 128, 256) if t <= limit and (t < 2 * sq or t == 32)),
            "BKV": tuple(t for t in (8, 16, 32, 64) if t < 2 * sk or t == 8)}


def _batch_stride(shape: tuple[int, ...], batch: tuple[int, ...], what: str) -> int:
    """Elements between one batch's matrix and the next in an operand of `shape` (0: shared by all)."""
    lead = (1,) * (len(batch) + 2 - len(shape)) + tuple(shape[:-2])
    if all(n == 1 for n in lead):
        return 0
    if lead != batch:
        raise CompilerError(f"{what}: batch dimensions {list(shape[:-2])} neither match the result's "
                            f"{list(batch)} nor are all 1")
    return math.prod(shape[-2:])


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    batch, sq, d, sk, dv = dims(region)
    bq, bkv = int(params["BQ"]), int(params["BKV"])
    if not 32 <= bq <= 1024 or bkv < 1:
        raise CompilerError(f"attention: BQ {bq} threads must be 32..1024 and BKV {bkv} at least 1")
    if bkv * (d + dv) > MAX_UNROLL:
        raise CompilerError(f"attention: BKV x (D + Dv) = {bkv * (d + dv)} FMAs unrolled per key tile; "
                            f"at most {MAX_UNROLL}")
    node = region.root
    dt = node.dtype
    e = Asm(name)
    names = declare(e, region)
    types = {i.name: i.type for i in region.inputs}
    q_p, b_p, v_p = (names[i] for i in node.inputs)
    if batch:
        for i, p in zip(node.inputs, (q_p, b_p, v_p), strict=True):
            stride = _batch_stride(types[i].shape, batch, f"node %{node.name}: operand %{i}")
            if stride:
                e.rebase(p, e.value("mul.lo.u32", "u32", "%ctaid.y", str(stride)), types[i].dtype)
        e.rebase("out", e.value("mul.lo.u32", "u32", "%ctaid.y", str(sq * dv)), dt)
    row = e.value("mad.lo.u32", "u32", "%ctaid.x", str(bq), "%tid.x")
    row_ok = None if sq % bq == 0 else e.value("setp.lt.u32", "pred", row, str(sq))
    q_at = e.address(q_p, e.value("mul.lo.u32", "u32", row, str(d)), types[node.inputs[0]].dtype)
    scale = fimm(float(node.attrs["scale"]) * LOG2E)
    q_sectors = min(WARP, -(-WARP * d * WIDTH[dt] // SECTOR))
    qs = [e.load(q_at, dt, guard=row_ok, offset=j, fill=0.0, sectors=q_sectors) for j in range(d)]
    qs = [e.value("mul.f32", "f32", x, scale) for x in qs]
    m = e.value("mov.f32", "f32", fimm(-math.inf))
    total = e.value("mov.f32", "f32", fimm(0.0))
    acc = [e.value("mov.f32", "f32", fimm(0.0)) for _ in range(dv)]
    k_sh, v_sh = e.shared("Ks", bkv * d), e.shared("Vs", bkv * dv)
    # K tile element el is key el // D, dim el % D in both layouts' shared copy; kᵀ (D x Sk) is read as
    # dim el // BKV, key el % BKV (runs of BKV contiguous keys)
    k_slots = _slots(e, bq, bkv * d, (b_p, dt), k_sh, d, None if node.attrs["trans_b"] else (bkv, sk))
    v_slots = _slots(e, bq, bkv * dv, (v_p, dt), v_sh, dv, None)
    k_step = bkv * d if node.attrs["trans_b"] else bkv

    def tile(keys: int, last: bool) -> None:
        loaded = []
        for slots in (k_slots, v_slots):
            for address, ok, key, at in slots:
                guard = e.both(ok, e.value("setp.lt.u32", "pred", key, str(keys))) if last and keys < bkv else ok
                loaded.append((at, ok, e.load(address, dt, guard=guard, fill=0.0)))
        for at, ok, value in loaded:
            e("st.shared.f32", f"[{at}]", value, guard=ok)
        e("bar.sync", "0")
        scores = []
        for j in range(keys):
            s = None
            for c in range(d):
                kv = e.value("ld.shared.f32", "f32", f"[{k_sh}+{(j * d + c) * 4}]")
                s = e.value("mul.f32", "f32", qs[c], kv) if s is None else e.value("fma.rn.f32", "f32", qs[c], kv, s)
            scores.append(s)
        top = scores[0]
        for s in scores[1:]:
            top = e.value("max.f32", "f32", top, s)
        new_m = e.value("max.f32", "f32", m, top)
        rescale = e.value("ex2.approx.f32", "f32", e.value("sub.f32", "f32", m, new_m))
        probs = [e.value("ex2.approx.f32", "f32", e.value("sub.f32", "f32", s, new_m)) for s in scores]
        e("mul.f32", total, total, rescale)
        for p in probs:
            e("add.f32", total, total, p)
        for c in range(dv):
            e("mul.f32", acc[c], acc[c], rescale)
            for j, p in enumerate(probs):
                vv = e.value("ld.shared.f32", "f32", f"[{v_sh}+{(j * dv + c) * 4}]")
                e("fma.rn.f32", acc[c], p, vv, acc[c])
        e("mov.f32", m, new_m)
        e("bar.sync", "0")
        if not last:
            for slots, step in ((k_slots, k_step), (v_slots, bkv * dv)):
                for address, *_ in slots:
                    e("add.u64", address, address, str(step * WIDTH[dt]))

    if sk // bkv:
        with e.loop(sk // bkv):
            tile(bkv, False)
    if sk % bkv:
        tile(sk % bkv, True)
    inverse = e.value("rcp.approx.f32", "f32", total)
    out_at = e.address("out", e.value("mul.lo.u32", "u32", row, str(dv)), dt)
    out_sectors = min(WARP, -(-WARP * dv * WIDTH[dt] // SECTOR))
    for c in range(dv):
        e.store(out_at, e.value("mul.f32", "f32", acc[c], inverse), dt, guard=row_ok, offset=c, sectors=out_sectors)
    batches = math.prod(batch)
    launch = Launch.make((-(-sq // bq), batches), bq)
    return finish(e, region, "attention", params, launch,
                  flops=batches * sq * sk * (2 * d + 2 * dv + 4))


def _slots(e: Asm, threads: int, count: int, source: tuple[str, str], shared: str, width: int,
           transposed: tuple[int, int] | None) -> list[tuple[str, str | None, str, str]]:
    """What each thread copies of a tile of `count` elements (tid, tid + threads, ...): per element its
    global address (`source`: pointer parameter, dtype; the tile a contiguous run of `count` elements
    from the pointer, or with `transposed` = (BKV, Sk) element el at (el // BKV) x Sk + el % BKV), its
    guard (el < count where the threads do not divide the tile; None: always inside), its key (the row
    of the tile it belongs to) and its shared-memory address (key x `width` + its column, in words)."""
    param, dt = source
    slots = []
    for r in range(-(-count // threads)):
        el = e.value("add.u32", "u32", "%tid.x", str(r * threads)) if r else "%tid.x"
        ok = None if (r + 1) * threads <= count else e.value("setp.lt.u32", "pred", el, str(count))
        if transposed is None:
            key, offset, place = divide(e, el, width), el, el
        else:
            bkv, sk = transposed
            dim, key = divide(e, el, bkv), modulo(e, el, bkv)
            offset = e.value("mad.lo.u32", "u32", dim, str(sk), key)
            place = e.value("mad.lo.u32", "u32", key, str(width), dim)
        at = e.value("mad.lo.u32", "u32", place, "4", shared)
        slots.append((e.address(param, offset, dt), ok, key, at))
    return slots


TEMPLATE = Template("attention", lambda region: dict(DEFAULT), space, generate)
