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
from gpusim.timing.ldst import AddressStage, Plans
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
        self.in_steps = hasattr(source, "advance_steps")  # chunks in issue order (else grouped by warp)


class Feeder:
    least = (1 << 16, 1 << 12, 1 << 14)  # the smallest arrays a compaction copies to: entries, plans, lines

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
        # per handle: the pool region its window may use without moving, base .. cap (a window that moves to
        # the pool's top takes room for as many entries again, so a warp's window moves about once each time
        # its length doubles, not at every chunk; one the engine has issued from slides back to its base)
        self.base = np.zeros(self.st.pos.size, np.int64)
        self.cap = np.zeros(self.st.pos.size, np.int64)
        self.grown = 0  # compactions that needed fresh arrays (the others kept the pool's)

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
        self.base[sl] = 0
        self.cap[sl] = 0
        self.batches.append(b)
        return b

    def _grow_handles(self, need: int) -> None:
        st = self.st
        n = max(need, 2 * st.pos.size)
        grow = lambda a: np.concatenate([a, np.zeros(n - a.size, a.dtype)])  # noqa: E731
        self.st = st._replace(pos=grow(st.pos), end=grow(st.end), done=grow(st.done),
                              hungry_flag=grow(st.hungry_flag), hungry=grow(st.hungry))
        self.base, self.cap = grow(self.base), grow(self.cap)

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
        src = b.source
        ch = src.advance_steps() if b.in_steps else src.advance()
        if ch is None:
            b.exhausted = True
            self.st.done[b.h0:b.h0 + b.W] = True
            return False
        if b.in_steps:
            rpcs = None if ch.rows is None else ch.pcs[ch.entries]
            self._append(b, ch.G, ch.pcs, ch.masks, ch.rows, rpcs, ch.entries, ch.finished)
        else:  # a chunk grouped by warp (a tallied source, a recorded BlockStream): put in issue order
            counts = np.diff(ch.off)
            G = np.repeat(np.arange(b.W), counts)
            acc = ch.accesses
            rows = rpcs = entries = None
            if acc is not None and acc.rows.shape[0]:
                w = acc.warp.astype(np.int64)
                entries = ch.off[w] + acc.index - b.total[w]
                order = np.argsort(entries, kind="stable")  # (the appender takes the accesses in issue order)
                rows, rpcs, entries = acc.rows[order], acc.pcs[order], entries[order]
            self._append(b, G, ch.pcs, ch.masks, rows, rpcs, entries, ch.finished)
        return True

    def _append(self, b: Batch, G, pcs, masks, rows, rpcs, entries, finished) -> None:
        """Append a chunk of batch `b`, in issue order (gpusim.functional.stream.StepChunk), to its warps'
        windows, its memory accesses planned by the address stage."""
        counts = np.bincount(G, minlength=b.W)
        plans = self.stage.plan(rows, rpcs) if rows is not None and rows.shape[0] else None
        st = self.st
        nrows = 0 if plans is None else plans.lo.size
        nlines = 0 if plans is None else plans.lines.size
        top, need = _room(st.pos, st.end, self.base, self.cap, b.h0, counts, self.top)
        if top > st.pc.size or self.atop + nrows > st.a_lo.size or self.ltop + nlines > st.lines.size:
            self._compact(need, nrows, nlines)
            st = self.st
        if plans is None:
            plans = _NO_PLANS
            entries = _NO_ENTRIES
        self.top, self.atop, self.ltop = _append_steps(
            st, self.base, self.cap, b.h0, G, pcs, np.asarray(masks, np.uint64), self.code.kind, b.last_mask, b.started,
            b.last_exit, counts, self.top, entries, plans.lo, plans.hi, plans.lines, plans.masks, plans.ops,
            self.atop, self.ltop)
        b.total += counts
        if finished.any():
            st.done[b.h0:b.h0 + b.W] |= finished

    def _compact(self, need: int, nrows: int, nlines: int) -> None:
        """Move every live window (and the plans and lines it refers to) down to the start of its array, in
        place (the engine's view of the pool stays as it is); where the live data and the next chunk (`need`
        entries past the live windows, `nrows` plans, `nlines` lines) would then fill more than half of an
        array, that array (with the others of its kind) is copied to fresh ones, twice what they need (and
        at least half again as large); the others are kept (never shrunk: a pool that shrank would grow
        again, and each new array costs the engine a new view of the pool)."""
        st = self.st
        kind = self.code.kind
        self.top, self.atop, self.ltop = _compact_in_place(st.pos, st.end, st.pc, st.acc, st.flag, st.a_lo, st.a_hi,
                                                           st.lines, st.masks, st.ops, kind, self.atop)
        np.copyto(self.base, st.pos)  # (packed: no window has room to grow in place)
        np.copyto(self.cap, st.end)
        moved = {}
        for names, size, used, extra, least in ((("pc", "acc", "flag"), st.pc.size, self.top, need, self.least[0]),
                                                (("a_lo", "a_hi"), st.a_lo.size, self.atop, nrows, self.least[1]),
                                                (("lines", "masks", "ops"), st.lines.size, self.ltop, nlines,
                                                 self.least[2])):
            if 2 * (used + extra) <= size:
                continue
            cap = max(least, 2 * (used + extra), size + size // 2)  # (at least half again: few regrowths)
            for name in names:  # (past `used` left as it comes: a region's room is cleared when it is taken)
                old = getattr(st, name)
                new = np.empty(cap, old.dtype)
                new[:used] = old[:used]
                moved[name] = new
        if moved:
            self.grown += 1
            self.st = st._replace(**moved)

    # -- what the engine asks for ------------------------------------------------------------------
    def refill(self, gte, refill_below: int):
        """Give every hungry warp at least two instructions (or all it has left), stage blocks until
        `refill_below` are queued (or the launch has no more), free the batches whose blocks have all
        retired. Returns the dispatcher (a new one if its timeline had to grow)."""
        st = self.st
        n = int(st.nhungry[0])
        if n:
            hs = st.hungry[:n].copy()
            self._feed(hs)
            self.st.hungry_flag[hs] = False
            self.st.nhungry[0] = 0
        gte = self._retire_batches(gte)
        return self._stage(gte, refill_below)

    def _feed(self, hs: np.ndarray) -> None:
        """Give every handle of `hs` two instructions (its next, and the one after it that tells the
        engine whether it retires on issue) or all it has left: in the order of `hs`, the first one
        still short has its batch pulled until it is fed (so the batches run in the order the warps
        asked, one chunk at a time, whatever the number of handles). (A pull only adds instructions, so
        a handle once fed stays fed: the search for the next short one goes on from the last.)"""
        i = 0
        while True:
            st = self.st
            i = _first_short(st.pos, st.end, st.done, hs, i)
            if i < 0:
                return
            if not self._pull(self._batch_of(int(hs[i]))):
                i += 1  # (its batch has finished: nothing more to come for it)

    def _stage(self, gte, want: int):
        cap = gte.capacity
        queued = int(gte.tail[0] - gte.head[0])
        while queued < want and not self.exhausted:
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
            m = min(b.nblocks - k, want - queued)  # blocks staged together
            self.next_local += m
            h0 = b.h0 + k * b.wpb
            hs = np.arange(h0, h0 + m * b.wpb)
            while _first_short(self.st.pos, self.st.end, self.st.done, hs, 0) >= 0 and self._pull(b):
                pass
            _queue(gte.staged_id, gte.staged_h0, gte.staged_nw, gte.tail, cap, b.first_block + k, h0, b.wpb, m)
            queued += m
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
    # (an entry's pc and plan, and a plan's bounds, are 32-bit: fewer bytes written and read per instruction)
    return Streams(np.zeros(handles, np.int64), np.zeros(handles, np.int64), np.zeros(handles, np.bool_),
                   np.zeros(handles, np.bool_), np.zeros(pool, np.int32), np.full(pool, -1, np.int32),
                   np.zeros(pool, np.bool_), np.zeros(plans, np.int32), np.zeros(plans, np.int32),
                   np.zeros(lines, np.int64), np.zeros(lines, np.int64), np.zeros(lines, np.int64),
                   np.zeros(handles, np.int64),
                   np.zeros(1, np.int64))


_NO_PLANS = Plans(*(np.zeros(0, np.int64) for _ in range(5)))
_NO_ENTRIES = np.zeros(0, np.int64)


@njit
def _region(n, c):
    """The pool entries a window of `n` entries, growing by `c`, takes when it moves to the pool's top:
    twice what it holds then."""
    return 2 * (n + c)


@njit
def _room(pos, end, base, cap, h0, counts, top):
    """Where the pool's top would be after appending `counts[w]` entries to each warp h0 + w (as
    `_append_steps` places them), and how many entries past the live windows the same chunk would take
    once the pool has been compacted (every window packed, none with room to grow)."""
    need = 0
    for w in np.flatnonzero(counts):
        n = end[h0 + w] - pos[h0 + w]
        need += _region(n, counts[w])
        top = _place(n, end[h0 + w], base[h0 + w], cap[h0 + w], counts[w], top)[1]
    return top, need


@njit
def _place(n, end, base, cap, c, top):
    """Where a window of `n` entries, ending at `end` in its region base .. cap, takes `c` more: 0 where it
    has room, 3 where the region would hold twice the window grown (it slides back to the region's base),
    1 where its region is the last one in the pool (it grows), 2 where it moves to the pool's top; and the
    pool's top then."""
    if n > 0 and end + c <= cap:
        return 0, top
    if n + 2 * c <= cap - base:
        return 3, top
    if n > 0 and cap == top:
        return 1, end + _region(n, c) - n
    return 2, top + _region(n, c)


@njit
def _append_steps(st, base, cap, h0, G, pcs, masks, kinds, last_mask, started, last_exit, counts, top, entries, plo,
                  phi, plines, pmasks, pops, atop, ltop):
    """Append a chunk, in issue order (entry i: warp G[i] issued pcs[i] with masks[i]; `counts[w]` entries of
    warp w), to its warps' windows, and attach to entry entries[j] its access plan j. A warp's window grows
    in place where its region (`base` .. `cap`) has room; else it slides back to the region's base where
    the region is twice the grown window (the engine has issued that much from its front), or moves to the
    pool's top (unless its region is the last there, which just grows), taking room for as many entries
    again. Each warp's entries follow its
    window in its stream's order. An entry is flagged where its warp's active mask differs from the warp's
    previous instruction's (across chunks: `last_mask`, `started`, `last_exit`, updated), unless that one
    was an exit (threads leaving cost nothing). A region's room is cleared when the region is taken (`acc`
    -1, `flag` False), so only an entry's plan and flag are written. Returns the new tops of the pool, the
    plans and the lines."""
    pos, end, pc, acc, flag = st.pos, st.end, st.pc, st.acc, st.flag
    fill = np.empty(counts.size, np.int64)
    for w in range(counts.size):
        c = counts[w]
        if c == 0:
            continue
        h = h0 + w
        n = end[h] - pos[h]
        how, after = _place(n, end[h], base[h], cap[h], c, top)
        if how >= 2:
            to = top if how == 2 else base[h]
            for i in range(n):  # (down within the region, or up to the top: never onto what is still to copy)
                pc[to + i] = pc[pos[h] + i]
                acc[to + i] = acc[pos[h] + i]
                flag[to + i] = flag[pos[h] + i]
            for i in range(to + n, end[h] if how == 3 else to + n):  # (the slid window's old entries)
                acc[i] = -1
                flag[i] = False
            pos[h] = to
            end[h] = to + n
            base[h] = to
        if how == 1 or how == 2:
            for i in range(max(end[h], top), after):  # (the region's new room: no plan, no flag yet)
                acc[i] = -1
                flag[i] = False
            cap[h] = after
            top = after
        fill[w] = end[h]
        end[h] += c
    first = np.empty(entries.size, np.int64)  # (each entry with an access: its pool index)
    j = 0
    for i in range(G.size):
        w = G[i]
        k = fill[w]
        fill[w] = k + 1
        p = pcs[i]
        m = masks[i]
        pc[k] = p
        if started[w] and m != last_mask[w] and not last_exit[w]:
            flag[k] = True
        last_mask[w] = m
        started[w] = True
        last_exit[w] = kinds[p] == EXIT
        if j < entries.size and entries[j] == i:
            first[j] = k
            j += 1
    for k in range(plines.size):
        st.lines[ltop + k] = plines[k]
        st.masks[ltop + k] = pmasks[k]
        st.ops[ltop + k] = pops[k]
    for j in range(plo.size):
        k = first[j]
        kind = kinds[pc[k]]
        if not _is_memory(kind):
            continue  # a kernel-parameter load: served by the constant bank, no plan needed
        if kind == SHARED:
            st.a_lo[atop] = plo[j]
            st.a_hi[atop] = phi[j]
        else:
            st.a_lo[atop] = ltop + plo[j]
            st.a_hi[atop] = ltop + phi[j]
        acc[k] = atop
        atop += 1
    return top, atop, ltop + plines.size


@njit
def _first_short(pos, end, done, hs, i):
    """The first index, from `i` on, of a handle of `hs` that holds fewer than two instructions and has
    more to come; -1 if none."""
    for k in range(i, hs.size):
        h = hs[k]
        if end[h] - pos[h] < 2 and not done[h]:
            return k
    return -1


@njit
def _queue(staged_id, staged_h0, staged_nw, tail, cap, first_id, h0, wpb, m):
    """Put `m` blocks (ids first_id.., their warps' handles from h0 on, `wpb` each) at the tail of the
    GigaThread engine's ring of staged blocks."""
    t = tail[0]
    for j in range(m):
        i = (t + j) % cap
        staged_id[i] = first_id + j
        staged_h0[i] = h0 + wpb * j
        staged_nw[i] = wpb
    tail[0] = t + m


@njit
def _is_memory(kind):
    return kind == GLOBAL_LD or kind == GLOBAL_ST or kind == GLOBAL_ATOM or kind == SHARED


@njit
def _pool_order(pos, end):
    """The handles whose windows hold something, in pool order (their windows are disjoint, so their starts
    differ): a radix sort of the starts, 11 bits a pass. The empty windows are set to 0:0."""
    hs = np.empty(pos.size, np.int64)
    n = 0
    most = 0
    for h in range(pos.size):
        if end[h] > pos[h]:
            hs[n] = h
            n += 1
            if pos[h] > most:
                most = pos[h]
        else:
            pos[h] = 0
            end[h] = 0
    hs = hs[:n]
    other = np.empty(n, np.int64)
    count = np.empty(2049, np.int64)
    shift = 0
    while shift == 0 or (most >> shift) > 0:
        count[:] = 0
        for k in range(n):
            count[((pos[hs[k]] >> shift) & 2047) + 1] += 1
        for d in range(2048):
            count[d + 1] += count[d]
        for k in range(n):
            d = (pos[hs[k]] >> shift) & 2047
            other[count[d]] = hs[k]
            count[d] += 1
        hs, other = other, hs
        shift += 11
    return hs


@njit
def _compact_in_place(pos, end, pc, acc, flag, a_lo, a_hi, lines, masks, ops, kinds, atop):
    """Every live window (pos[h]:end[h]) moved to the start of the pool, and the access plans it refers to
    (with their lines) to the start of theirs, within the same arrays: the plans still referred to are
    renumbered in their order and the windows moved in pool order, so everything moves down (or stays),
    never over what is still to move (plans are appended, and renumbered here, with their lines in the same
    order); an empty window is left at 0:0. Returns the new tops."""
    keep = np.full(atop, -1, np.int64)
    shared = np.zeros(atop, np.bool_)
    for h in range(pos.size):
        for i in range(pos[h], end[h]):
            a = acc[i]
            if a >= 0:
                keep[a] = 0
                shared[a] = kinds[pc[i]] == SHARED
    natop = 0
    ltop = 0
    for a in range(atop):
        if keep[a] < 0:
            continue
        keep[a] = natop
        if shared[a]:
            a_lo[natop] = a_lo[a]
            a_hi[natop] = a_hi[a]
        else:
            lo, hi = a_lo[a], a_hi[a]
            a_lo[natop] = ltop
            for k in range(lo, hi):
                lines[ltop] = lines[k]
                masks[ltop] = masks[k]
                ops[ltop] = ops[k]
                ltop += 1
            a_hi[natop] = ltop
        natop += 1
    top = 0
    for h in _pool_order(pos, end):
        n = end[h] - pos[h]
        src = pos[h]
        for i in range(n):
            pc[top + i] = pc[src + i]
            flag[top + i] = flag[src + i]
            a = acc[src + i]
            acc[top + i] = keep[a] if a >= 0 else -1
        pos[h] = top
        end[h] = top + n
        top += n
    return top, natop, ltop


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

