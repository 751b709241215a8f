"""Feeds the engine the warps' instruction streams, pulled from the functional executor a chunk at a
time as the warps need them, so the simulator only ever holds a window of each warp's stream (the
memory a simulation needs does not grow with the kernel's length). Each chunk's memory accesses are
planned (coalesced, bank-mapped) together by the LD/ST address stage, then the chunk is appended to
the stream pool (gpusim/timing/stream.py) by compiled code; the pool is compacted, and grown, when
it fills. The feeder also keeps the GigaThread engine's queue of staged blocks filled."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gpusim.functional.stream import BatchAccesses, StreamChunk
from gpusim.timing.decode import EXIT, GLOBAL_ATOM, GLOBAL_LD, GLOBAL_ST, SHARED
from gpusim.timing.jit import njit
from gpusim.timing.ldst import AddressStage
from gpusim.timing.stream import Streams


class Batch:
    """A batch of blocks of the functional executor and its warps' stream handles h0 .. h0 + W - 1."""

    def __init__(self, source, h0: int):
        self.source = source
        self.first_block, self.nblocks, self.wpb = source.first_block, source.nblocks, source.wpb
        self.W = self.nblocks * self.wpb
        self.h0 = h0
        self.total = np.zeros(self.W, dtype=np.int64)  # instructions appended so far, per warp
        # each warp's active mask at its last instruction so far, whether it has one, whether it was an exit
        self.last_mask = np.zeros(self.W, dtype=np.uint64)
        self.started = np.zeros(self.W, dtype=np.bool_)
        self.last_exit = np.zeros(self.W, dtype=np.bool_)
        self.exhausted = False
        self.retired = 0  # blocks retired


class Feeder:
    def __init__(self, sources: Iterable, stage: AddressStage, code):
        self.sources = iter(sources)
        self.stage = stage
        self.code = code
        self.batches: list[Batch] = []  # live, in launch order
        self.current: Batch | None = None  # the batch blocks are staged from
        self.next_local = 0
        self.exhausted = False
        self.seen_timeline = 0
        self.st = _make_streams(1 << 12, 1 << 16, 1 << 12, 1 << 14)
        self.top = 0  # pool entries used
        self.atop = 0  # access plans used
        self.ltop = 0  # lines used

    # -- handles ----------------------------------------------------------------------------------
    def _new_batch(self, src) -> Batch:
        ranges = sorted((b.h0, b.h0 + b.W) for b in self.batches)
        W = src.nblocks * src.wpb
        h0 = 0
        for lo, hi in ranges:  # first fit among the live batches' handle ranges
            if lo - h0 >= W:
                break
            h0 = max(h0, hi)
        if h0 + W > self.st.pos.size:
            self._grow_handles(h0 + W)
        b = Batch(src, h0)
        st = self.st
        sl = slice(h0, h0 + W)
        st.pos[sl] = 0
        st.end[sl] = 0
        st.done[sl] = False
        st.hungry_flag[sl] = False
        self.batches.append(b)
        return b

    def _grow_handles(self, need: int) -> None:
        st = self.st
        n = max(need, 2 * st.pos.size)
        grow = lambda a: np.concatenate([a, np.zeros(n - a.size, a.dtype)])  # noqa: E731
        self.st = st._replace(pos=grow(st.pos), end=grow(st.end), done=grow(st.done),
                              hungry_flag=grow(st.hungry_flag), hungry=grow(st.hungry))

    def _batch_of(self, h: int) -> Batch:
        for b in self.batches:
            if b.h0 <= h < b.h0 + b.W:
                return b
        raise AssertionError(f"stream handle {h} belongs to no live batch")

    # -- pulling ------------------------------------------------------------------------------------
    def _pull(self, b: Batch) -> bool:
        """Run batch `b` one chunk further; False once it has finished."""
        if b.exhausted:
            return False
        ch = b.source.advance()
        if ch is None:
            b.exhausted = True
            self.st.done[b.h0:b.h0 + b.W] = True
            return False
        self._append(b, ch)
        return True

    def _append(self, b: Batch, ch: StreamChunk) -> None:
        counts = np.diff(ch.off)
        acc = ch.accesses
        if acc is not None and acc.rows.shape[0]:
            plans = self.stage.plan(acc.rows, acc.pcs)
            rw, ridx, shared = acc.warp.astype(np.int64), acc.index.astype(np.int64), self.stage.kind[acc.pcs] == SHARED
        else:
            plans = None
        st = self.st
        hs = np.arange(b.h0, b.h0 + b.W)
        moving = counts > 0
        need = int(counts.sum() + (st.end[hs[moving]] - st.pos[hs[moving]]).sum())
        nrows = 0 if plans is None else plans.lo.size
        nlines = 0 if plans is None else plans.lines.size
        if self.top + need > st.pc.size or self.atop + nrows > st.a_lo.size or self.ltop + nlines > st.lines.size:
            self._compact(need, nrows, nlines)
            st = self.st
        newstart = np.zeros(b.W, dtype=np.int64)
        flags = _mask_changes(ch.off, ch.pcs, ch.masks.astype(np.uint64), self.code.kind, b.last_mask, b.started,
                              b.last_exit)
        self.top = _append_windows(st.pos, st.end, st.pc, st.acc, st.flag, b.h0, ch.off, ch.pcs, flags, newstart,
                                   self.top)
        if plans is not None:
            self.atop, self.ltop = _append_plans(
                st.acc, st.a_lo, st.a_hi, st.lines, st.masks, st.ops, self.code.kind, st.pc,
                rw, ridx, shared, plans.lo, plans.hi, plans.lines, plans.masks, plans.ops,
                newstart, b.total, self.atop, self.ltop)
        b.total += counts
        fin = ch.finished
        if fin.any():
            st.done[b.h0:b.h0 + b.W] |= fin

    def _compact(self, need: int, nrows: int, nlines: int) -> None:
        """Move every live window (and the plans and lines it refers to) to fresh arrays, grown so that
        the live data and the next chunk fill at most half of them."""
        st = self.st
        live = int(np.maximum(st.end - st.pos, 0).sum())
        cap = max(1 << 16, 2 * (live + need))
        acap = max(1 << 12, 2 * (self.atop + nrows))  # (upper bounds: the live plans are fewer)
        lcap = max(1 << 14, 2 * (self.ltop + nlines))
        pc, acc, flag = np.zeros(cap, np.int32), np.full(cap, -1, np.int64), np.zeros(cap, np.bool_)
        a_lo, a_hi = np.zeros(acap, np.int64), np.zeros(acap, np.int64)
        lines, masks, ops = np.zeros(lcap, np.int64), np.zeros(lcap, np.int64), np.zeros(lcap, np.int64)
        self.top, self.atop, self.ltop = _compact_into(
            st.pos, st.end, st.pc, st.acc, st.flag, st.a_lo, st.a_hi, st.lines, st.masks, st.ops, self.code.kind,
            pc, acc, flag, a_lo, a_hi, lines, masks, ops)
        self.st = st._replace(pc=pc, acc=acc, flag=flag, a_lo=a_lo, a_hi=a_hi, lines=lines, masks=masks, ops=ops)

    # -- what the engine asks for ------------------------------------------------------------------
    def refill(self, gte, refill_below: int):
        """Give every hungry warp at least two instructions (or all it has left), stage blocks until
        `refill_below` are queued (or the launch has no more), free the batches whose blocks have all
        retired. Returns the dispatcher (a new one if its timeline had to grow)."""
        st = self.st
        n = int(st.nhungry[0])
        if n:
            hs = st.hungry[:n].copy()
            short = hs[(st.end[hs] - st.pos[hs] < 2) & ~st.done[hs]]  # (the others were fed meanwhile)
            for h in short.tolist():
                self._fill(self._batch_of(h), h)
            self.st.hungry_flag[hs] = False
            self.st.nhungry[0] = 0
        gte = self._retire_batches(gte)
        return self._stage(gte, refill_below)

    def _fill(self, b: Batch, h: int) -> None:
        """Pull batch `b` until handle `h` holds two instructions (its next, and the one after it that
        tells the engine whether it retires on issue) or has no more to come."""
        st = self.st
        while st.end[h] - st.pos[h] < 2 and not st.done[h]:
            if not self._pull(b):
                break
            st = self.st  # (a pull may have moved the pool)

    def _stage(self, gte, want: int):
        cap = gte.capacity
        while gte.tail[0] - gte.head[0] < want and not self.exhausted:
            b = self.current
            if b is None or self.next_local >= b.nblocks:
                src = next(self.sources, None)
                if src is None:
                    self.exhausted = True
                    break
                if not hasattr(src, "advance"):
                    src = _StreamSource(src)
                b = self.current = self._new_batch(src)
                self.next_local = 0
            k = self.next_local
            self.next_local += 1
            h0 = b.h0 + k * b.wpb
            for h in range(h0, h0 + b.wpb):
                self._fill(b, h)
            i = gte.tail[0] % cap
            gte.staged_id[i] = b.first_block + k
            gte.staged_h0[i] = h0
            gte.staged_nw[i] = b.wpb
            gte.tail[0] += 1
        gte.exhausted[0] = self.exhausted
        if gte.timeline.shape[0] < gte.tail[0] + 1:
            grown = np.zeros((2 * gte.timeline.shape[0] + int(gte.tail[0]), 4), np.int64)
            grown[:gte.timeline.shape[0]] = gte.timeline
            gte = gte._replace(timeline=grown)
        return gte

    def _retire_batches(self, gte):
        n = int(gte.ntimeline[0])
        if n > self.seen_timeline and self.batches:
            ids = gte.timeline[self.seen_timeline:n, 0]
            for b in self.batches:
                b.retired += int(((ids >= b.first_block) & (ids < b.first_block + b.nblocks)).sum())
            self.seen_timeline = n
            self.batches = [b for b in self.batches if b.retired < b.nblocks or b is self.current]
        return gte


def _make_streams(handles: int, pool: int, plans: int, lines: int) -> Streams:
    return Streams(np.zeros(handles, np.int64), np.zeros(handles, np.int64), np.zeros(handles, np.bool_),
                   np.zeros(handles, np.bool_), np.zeros(pool, np.int32), np.full(pool, -1, np.int64),
                   np.zeros(pool, np.bool_), np.zeros(plans, np.int64), np.zeros(plans, np.int64),
                   np.zeros(lines, np.int64), np.zeros(lines, np.int64), np.zeros(lines, np.int64),
                   np.zeros(handles, np.int64),
                   np.zeros(1, np.int64))


@njit
def _mask_changes(off, pcs, masks, kinds, last_mask, started, last_exit):
    """Per instruction of a chunk: whether its warp's active mask differs from the warp's previous
    instruction's (across chunks: `last_mask`, `started`, `last_exit`, updated), unless that one was an
    exit (threads leaving cost nothing)."""
    out = np.zeros(pcs.size, np.bool_)
    for w in range(off.size - 1):
        prev = last_mask[w]
        have = started[w]
        gone = last_exit[w]
        for i in range(off[w], off[w + 1]):
            m = masks[i]
            out[i] = have and m != prev and not gone
            prev = m
            have = True
            gone = kinds[pcs[i]] == EXIT
        last_mask[w] = prev
        started[w] = have
        last_exit[w] = gone
    return out


@njit
def _append_windows(pos, end, pc, acc, flag, h0, off, pcs, flags, newstart, top):
    """Append each warp's new instructions to its window, moving the window to the pool's top first
    unless it is already there. `newstart[w]`: where warp w's new instructions went."""
    for w in range(off.size - 1):
        c = off[w + 1] - off[w]
        if c == 0:
            continue
        h = h0 + w
        if end[h] != top or pos[h] == end[h]:
            n = end[h] - pos[h]
            for i in range(n):
                pc[top + i] = pc[pos[h] + i]
                acc[top + i] = acc[pos[h] + i]
                flag[top + i] = flag[pos[h] + i]
            pos[h] = top
            end[h] = top + n
        newstart[w] = end[h]
        for i in range(c):
            pc[end[h] + i] = pcs[off[w] + i]
            acc[end[h] + i] = -1
            flag[end[h] + i] = flags[off[w] + i]
        end[h] += c
        top = end[h]
    return top


@njit
def _is_memory(kind):
    return kind == GLOBAL_LD or kind == GLOBAL_ST or kind == GLOBAL_ATOM or kind == SHARED


@njit
def _append_plans(acc, a_lo, a_hi, lines, masks, ops, kinds, pc, rw, ridx, shared, plo, phi, plines, pmasks,
                  pops, newstart, total, atop, ltop):
    """Attach each access row's plan to its instruction (global plans' lines copied to the line pool)."""
    for k in range(plines.size):
        lines[ltop + k] = plines[k]
        masks[ltop + k] = pmasks[k]
        ops[ltop + k] = pops[k]
    for j in range(plo.size):
        w = rw[j]
        entry = newstart[w] + ridx[j] - total[w]
        if not _is_memory(kinds[pc[entry]]):
            continue  # a kernel-parameter load: served by the constant bank, no plan needed
        if shared[j]:
            a_lo[atop] = plo[j]
            a_hi[atop] = phi[j]
        else:
            a_lo[atop] = ltop + plo[j]
            a_hi[atop] = ltop + phi[j]
        acc[entry] = atop
        atop += 1
    return atop, ltop + plines.size


@njit
def _compact_into(pos, end, pc, acc, flag, a_lo, a_hi, lines, masks, ops, kinds, npc, nacc, nflag, na_lo, na_hi,
                  nlines, nmasks, nops):
    top = 0
    atop = 0
    ltop = 0
    for h in range(pos.size):
        n = end[h] - pos[h]
        if n <= 0:
            pos[h] = top
            end[h] = top
            continue
        for i in range(n):
            src = pos[h] + i
            npc[top + i] = pc[src]
            nflag[top + i] = flag[src]
            a = acc[src]
            if a < 0:
                nacc[top + i] = -1
                continue
            nacc[top + i] = atop
            if kinds[pc[src]] == SHARED:
                na_lo[atop] = a_lo[a]
                na_hi[atop] = a_hi[a]
            else:
                na_lo[atop] = ltop
                for k in range(a_lo[a], a_hi[a]):
                    nlines[ltop] = lines[k]
                    nmasks[ltop] = masks[k]
                    nops[ltop] = ops[k]
                    ltop += 1
                na_hi[atop] = ltop
            atop += 1
        pos[h] = top
        end[h] = top + n
        top += n
    return top, atop, ltop


class _StreamSource:
    """Adapts a fully recorded BlockStream (from `gpusim.block_streams`) to the batch interface."""

    def __init__(self, stream):
        self.first_block, self.nblocks, self.wpb = stream.block, 1, len(stream.warps)
        self.stream = stream
        self.used = False

    def advance(self):
        if self.used:
            return None
        self.used = True
        return _chunk_of(self.stream)


def _chunk_of(stream):
    ws = stream.warps
    sizes = [len(w) for w in ws]
    off = np.zeros(len(ws) + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    pcs = np.concatenate([w.pcs for w in ws]) if ws else np.zeros(0, np.int32)
    masks = np.concatenate([w.masks for w in ws]) if ws else np.zeros(0, np.uint32)
    acc = None
    a = stream.accesses
    if a is not None and stream.hi > stream.lo:
        lo, hi = stream.lo, stream.hi
        bounds = np.zeros(len(ws) + 1, dtype=np.int64)
        np.cumsum([w.hi - w.lo for w in ws], out=bounds[1:])
        acc = BatchAccesses(a.rows[lo:hi], a.pcs[lo:hi], a.warp[lo:hi], a.index[lo:hi], bounds)
    return StreamChunk(pcs, masks, off, acc, np.ones(len(ws), dtype=bool))

