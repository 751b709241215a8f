"""Fused attention (a flash-attention kernel): out = softmax(scale x q @ kᵀ) @ v over the last two axes,
batched over the leading ones, with the scores never written to memory.

One block per (query tile of BQ rows, batch): grid (ceil(Sq / BQ), batches), BQ x SPLIT threads; thread
(t, g) owns query row tile x BQ + t for group g's share of the keys (ceil(Sk / (BKV SPLIT)) tiles of
BKV keys, group g from key g x that many on). Each thread holds its row of q in registers
(pre-multiplied by scale x log2 e, so that the softmax's exponentials are ex2 of the scores directly),
its running maximum m, its running sum l and its Dv accumulators o. Its group walks its keys BKV at a
time:

1. the group copies its key tile (BKV x D of k; from kᵀ stored D x Sk, or k stored Sk x D when the node's
   `trans_b`) and value tile (BKV x Dv) into its part of shared memory, every thread BKV D / BQ and
   BKV Dv / BQ elements (the k and v tiles are contiguous runs of memory: coalesced), bar.sync;
2. each thread computes its BKV scores s_j = q . k_j (the threads of a group read the same shared word:
   a broadcast, no bank conflict; four keys' dot products interleaved so that each FMA's latency hides
   behind the others'), masks keys past Sk to -inf, takes m' = max(m, the tile's maximum), the rescale
   a = 2^(m - m'), p_j = 2^(s_j - m'), l = a l + sum p_j and o = a o + sum p_j v_j (the online softmax
   of Milakov and Gimelshein, as FlashAttention uses it), bar.sync;
3. with SPLIT > 1 the groups' (m, l, o) meet in shared memory: M = max m_g, l = sum 2^(m_g - M) l_g,
   o = sum 2^(m_g - M) o_g (split-K over the keys, as flash-decoding does across blocks); out = o / l.

The scores and probabilities live in registers only: the kernel reads q, k and v once per query tile
and writes the result, where the unfused graph writes and reads the Sq x Sk scores twice. f32 on CUDA
cores (f16 tensors are converted as they are loaded); a thread's q loads and result stores are a row
each (strided across a warp: a sector per lane when a row is 32 bytes or more), done once per thread.
Parameters: BQ (query rows a block), BKV (keys a tile), SPLIT (groups of BQ threads, each walking its own
share of the key tiles, merged at the end through shared memory: more warps for short query ranges);
BQ x SPLIT threads are whole warps (a warp may hold several groups' rows)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower.asm import SECTOR, WARP, WIDTH, Asm, fimm
from gpusim.compiler.lower.expr import LOG2E, divide, modulo
from gpusim.compiler.lower.kernel import Kernel, Template, declare, finish
from gpusim.compiler.lower.matmul import batch_stride
from gpusim.compiler.lower.region import Region
from gpusim.config import Config
from gpusim.functional import Launch

INTERLEAVE = 4  # dot products computed side by side (the FMA latency hidden behind the others) ...
INTERLEAVED_WORDS = 64  # ... as long as their key rows take at most this many registers
MAX_UNROLL = 4096  # FMAs per key tile (BKV x (D + Dv)): keeps kernels under ~10,000 instructions


def dims(region: Region) -> tuple[tuple[int, ...], int, int, int, int]:
    """The batch shape, Sq, D, Sk and Dv of a fused_attention region."""
    node = region.root
    types = {i.name: i.type for i in region.inputs}
    q, b, v = (types[i] for i in node.inputs)
    sk, d = (b.shape[-2], b.shape[-1]) if node.attrs["trans_b"] else (b.shape[-1], b.shape[-2])
    return node.shape[:-2], q.shape[-2], d, sk, v.shape[-1]


def space(region: Region, cfg: Config) -> dict[str, tuple]:
    """Query tiles up to twice Sq, key tiles up to twice Sk, up to 8 groups splitting the keys (BQ x SPLIT
    whole warps: `generate` rejects the rest)."""
    _, sq, _, sk, _ = dims(region)
    limit = cfg.sm.max_threads_per_block
    return {"BQ": tuple(t for t in (8, 16, 32, 64, 128, 256) if t <= limit and (t < 2 * sq or t == 8)),
            "BKV": tuple(t for t in (8, 16, 32, 64) if t < 2 * sk or t == 8),
            "SPLIT": tuple(g for g in (1, 2, 4, 8) if g == 1 or (g - 1) * 8 < sk)}


def generate(region: Region, params: Mapping[str, Any], name: str) -> Kernel:
    batch, sq, d, sk, dv = dims(region)
    bq, bkv, split = (int(params[p]) for p in ("BQ", "BKV", "SPLIT"))
    if not 32 <= bq * split <= 1024 or bq * split % 32 or bkv < 1 or split < 1:
        raise CompilerError(f"attention: BQ {bq} x SPLIT {split} threads must be whole warps, 32..1024, "
                            f"BKV {bkv} at least 1")
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
            stride = batch_stride(types[i].shape, batch, f"node %{node.name}: operand %{i}")
            if stride:
                e.rebase(p, e.value("mul.lo.u32", "u32", "%ctaid.y", str(stride)), types[i].dtype)
        e.rebase("out", e.value("mul.lo.u32", "u32", "%ctaid.y", str(sq * dv)), dt)
    row = e.value("mad.lo.u32", "u32", "%ctaid.x", str(bq), "%tid.x")
    row_ok = None if sq % bq == 0 else e.value("setp.lt.u32", "pred", row, str(sq))
    q_at = e.address(q_p, e.value("mul.lo.u32", "u32", row, str(d)), dt)
    scale = fimm(float(node.attrs["scale"]) * LOG2E)
    q_sectors = min(WARP, -(-WARP * d * WIDTH[dt] // SECTOR))
    qs = [e.load(q_at, dt, guard=row_ok, offset=j, fill=0.0, sectors=q_sectors) for j in range(d)]
    qs = [e.value("mul.f32", "f32", x, scale) for x in qs]
    # the running maximum starts very low but finite: a tile whose keys are all masked leaves it there
    # (2^(m - m') = 1, p = 2^-inf = 0) instead of making inf - inf
    m = e.value("mov.f32", "f32", fimm(-1e30))
    total = e.value("mov.f32", "f32", fimm(0.0))
    acc = [e.value("mov.f32", "f32", fimm(0.0)) for _ in range(dv)]
    tiles = -(-sk // (bkv * split))  # key tiles per group; group g walks keys g tiles bkv ... on
    masked = tiles * bkv * split != sk
    group = "%tid.y"
    k_sh, v_sh = e.shared("Ks", split * bkv * d), e.shared("Vs", split * bkv * dv)
    k_own = e.value("mad.lo.u32", "u32", group, str(bkv * d * 4), k_sh)  # this group's tiles
    v_own = e.value("mad.lo.u32", "u32", group, str(bkv * dv * 4), v_sh)
    first = e.value("mul.lo.u32", "u32", group, str(tiles * bkv))  # the group's first key
    # K tile element el is key el // D, dim el % D in both layouts' shared copy; kᵀ (D x Sk) is read as
    # dim el // BKV, key el % BKV (runs of BKV contiguous keys)
    k_slots = _slots(e, bq, bkv * d, (b_p, dt), (k_own, first), d,
                     None if node.attrs["trans_b"] else (bkv, sk))
    v_slots = _slots(e, bq, bkv * dv, (v_p, dt), (v_own, first), dv, None)
    k_step = bkv * d if node.attrs["trans_b"] else bkv
    key0 = e.value("mov.u32", "u32", first)

    def tile() -> None:
        loaded = []
        for slots in (k_slots, v_slots):
            for address, ok, key, at in slots:
                guard = ok
                if masked:
                    guard = e.both(ok, e.value("setp.lt.u32", "pred", e.value("add.u32", "u32", key0, key), str(sk)))
                loaded.append((at, ok, e.load(address, dt, guard=guard, fill=0.0)))
        for at, ok, value in loaded:
            e("st.shared.f32", f"[{at}]", value, guard=ok)
        e("bar.sync", "0")
        scores = []
        interleave = max(1, min(INTERLEAVE, INTERLEAVED_WORDS // d))
        for j0 in range(0, bkv, interleave):
            # `interleave` keys' rows loaded whole (one shared round trip), then their dot products a
            # dimension at a time, round robin, so that each FMA's latency hides behind the others'
            keys = range(j0, min(j0 + interleave, bkv))
            kv = [[e.value("ld.shared.f32", "f32", f"[{k_own}+{(j * d + c) * 4}]") for c in range(d)] for j in keys]
            dots = [e.value("mul.f32", "f32", qs[0], row[0]) for row in kv]
            for c in range(1, d):
                for row, dot in zip(kv, dots, strict=True):
                    e("fma.rn.f32", dot, qs[c], row[c], dot)
            scores.extend(dots)
        if masked:  # keys past Sk score -inf
            scores = [e.value("selp.f32", "f32", s, fimm(-math.inf), e.value("setp.lt.u32", "pred", key0, str(sk - j)))
                      if sk > j else fimm(-math.inf) for j, s in enumerate(scores)]
        top = e.value("max.f32", "f32", m, scores[0])
        for s in scores[1:]:
            top = e.value("max.f32", "f32", top, s)
        rescale = e.value("ex2.approx.f32", "f32", e.value("sub.f32", "f32", m, top))
        probs = [e.value("ex2.approx.f32", "f32", e.value("sub.f32", "f32", s, top)) for s in scores]
        e("mul.f32", total, total, rescale)
        for p in probs:
            e("add.f32", total, total, p)
        for c in range(dv):
            e("mul.f32", acc[c], acc[c], rescale)
        for j, p in enumerate(probs):  # value row j loaded whole, then its Dv FMAs
            vv = [e.value("ld.shared.f32", "f32", f"[{v_own}+{(j * dv + c) * 4}]") for c in range(dv)]
            for c in range(dv):
                e("fma.rn.f32", acc[c], p, vv[c], acc[c])
        e("mov.f32", m, top)
        e("bar.sync", "0")
        for slots, step in ((k_slots, k_step), (v_slots, bkv * dv)):
            for address, *_ in slots:
                e("add.u64", address, address, str(step * WIDTH[dt]))
        e("add.u32", key0, key0, str(bkv))

    with e.loop(tiles):
        tile()
    if split > 1:
        m, total, acc = _combine(e, bq, split, dv, m, total, acc)
    inverse = e.value("rcp.approx.f32", "f32", total)
    out_at = e.address("out", e.value("mul.lo.u32", "u32", row, str(dv)), dt)
    out_sectors = min(WARP, -(-WARP * dv * WIDTH[dt] // SECTOR))
    store_ok = e.both(row_ok, e.value("setp.eq.u32", "pred", group, "0") if split > 1 else None)
    for c in range(dv):
        e.store(out_at, e.value("mul.f32", "f32", acc[c], inverse), dt, guard=store_ok, offset=c, sectors=out_sectors)
    batches = math.prod(batch)
    launch = Launch.make((-(-sq // bq), batches), (bq, split))
    return finish(e, region, "attention", params, launch,
                  flops=batches * sq * sk * (2 * d + 2 * dv + 4))


def _combine(e: Asm, bq: int, split: int, dv: int, m: str, total: str, acc: list[str]) -> tuple[str, str, list[str]]:
    """The SPLIT groups' partial softmaxes of a row merged through shared memory (each thread computes
    the merge of its row; group 0 stores it): M = max m_g, l = sum 2^(m_g - M) l_g, o = sum 2^(m_g - M) o_g.
    Word (what x SPLIT + g) x BQ + row: a warp's accesses are consecutive words."""
    parts = e.shared("Parts", (dv + 2) * split * bq)
    mine = e.value("mad.lo.u32", "u32", e.value("mad.lo.u32", "u32", "%tid.y", str(bq), "%tid.x"), "4", parts)
    row = e.value("mad.lo.u32", "u32", "%tid.x", "4", parts)
    plane = split * bq * 4
    for n, value in enumerate((m, total, *acc)):
        e("st.shared.f32", f"[{mine}+{n * plane}]", value)
    e("bar.sync", "0")
    got = [[e.value("ld.shared.f32", "f32", f"[{row}+{n * plane + g * bq * 4}]") for g in range(split)]
           for n in range(dv + 2)]
    top = got[0][0]
    for x in got[0][1:]:
        top = e.value("max.f32", "f32", top, x)
    weights = [e.value("ex2.approx.f32", "f32", e.value("sub.f32", "f32", x, top)) for x in got[0]]

    def merged(values: list[str]) -> str:
        out = e.value("mul.f32", "f32", values[0], weights[0])
        for x, w in zip(values[1:], weights[1:], strict=True):
            out = e.value("fma.rn.f32", "f32", x, w, out)
        return out

    return top, merged(got[1]), [merged(got[2 + c]) for c in range(dv)]


def _slots(e: Asm, threads: int, count: int, source: tuple[str, str], place: tuple[str, str], width: int,
           transposed: tuple[int, int] | None) -> list[tuple[str, str | None, str, str]]:
    """What each thread of a group copies of a tile of `count` elements (tid.x, tid.x + threads, ...):
    per element its global address (`source`: pointer parameter, dtype; the tile starts at key `place[1]`
    (a register) and is a contiguous run of `count` elements, or with `transposed` = (BKV, Sk) element
    el is at (el // BKV) x Sk + el % BKV), its guard (el < count where the threads do not divide the
    tile; None: always inside), its key within the tile and its shared-memory address (from
    `place[0]`: key x `width` + its column, in words)."""
    param, dt = source
    shared, first = place
    start = e.value("mul.lo.u32", "u32", first, str(1 if transposed else width))
    slots = []
    for r in range(-(-count // threads)):
        el = e.value("add.u32", "u32", "%tid.x", str(r * threads)) if r else "%tid.x"
        ok = None if (r + 1) * threads <= count else e.value("setp.lt.u32", "pred", el, str(count))
        if transposed is None:
            key, offset, at = divide(e, el, width), el, el
        else:
            bkv, sk = transposed
            dim, key = divide(e, el, bkv), modulo(e, el, bkv)
            offset = e.value("mad.lo.u32", "u32", dim, str(sk), key)
            at = e.value("mad.lo.u32", "u32", key, str(width), dim)
        at = e.value("mad.lo.u32", "u32", at, "4", shared)
        slots.append((e.address(param, e.value("add.u32", "u32", offset, start), dt), ok, key, at))
    return slots


def default(region: Region) -> dict[str, int]:
    """32 query rows a block; 8 keys a tile below 64 keys, else 16; up to 4 groups splitting the keys."""
    sk = dims(region)[3]
    bkv = 8 if sk < 64 else 16
    return {"BQ": 32, "BKV": bkv, "SPLIT": max(1, min(4, -(-sk // bkv)))}


TEMPLATE = Template("attention", default, space, generate)
