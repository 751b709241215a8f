"""Feeds the SMs the warps' instruction streams, pulled from the functional executor a chunk at a
time as the warps need them, so the simulator only ever holds a window of each warp's stream (the
memory a simulation needs does not grow with the kernel's length). Each chunk's memory accesses are
planned (coalesced, bank-mapped) together by the LD/ST address stage."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from gpusim.functional.stream import BatchAccesses, StreamChunk
from gpusim.timing.decode import PORTS, TimingInfo
from gpusim.timing.ldst import AddressStage

NPORTS = len(PORTS)


class UnitMix:
    """Instructions issued and unit cycles occupied, per sub-partition, counted from the streams a
    chunk at a time rather than on every issue: per pc, the unit an instruction issues to and the
    cycles it occupies it; a retired warp's counts are credited to its sub-partition in bulk."""

    FLUSH = 4096  # retired warps credited together

    def __init__(self, info: list[TimingInfo], subpartitions: int):
        self.port = np.array([ti.port for ti in info] or [0], dtype=np.int64)
        self.interval = np.array([ti.interval for ti in info] or [0], dtype=np.float64)
        self.issued = np.zeros(subpartitions, dtype=np.int64)  # per sub-partition (its `gid`)
        self.busy = np.zeros((subpartitions, NPORTS), dtype=np.float64)
        self.retired: list[tuple] = []  # (feed, slot, sub-partition) not yet credited

    def retire(self, feed: BatchFeed, slot: int, gid: int) -> None:
        self.retired.append((feed, slot, gid))
        if len(self.retired) >= self.FLUSH:
            self.flush()

    def flush(self) -> None:
        by_feed: dict = {}
        for feed, slot, gid in self.retired:
            slots, gids = by_feed.setdefault(feed, ([], []))
            slots.append(slot)
            gids.append(gid)
        for feed, (slots, gids) in by_feed.items():
            np.add.at(self.issued, gids, feed.issued[slots])
            np.add.at(self.busy, gids, feed.busy[slots])
        self.retired = []


class BatchFeed:
    """One batch of blocks of the functional executor: buffers the streams of warps whose block has
    not reached an SM yet and appends new instructions to the warps that are running."""

    def __init__(self, source, stage: AddressStage, mix: UnitMix):
        self.source = source
        self.stage = stage
        self.mix = mix
        self.first_block, self.nblocks, self.wpb = source.first_block, source.nblocks, source.wpb
        W = self.nblocks * self.wpb
        self.timing = np.empty(len(stage.info), dtype=object)  # TimingInfo per pc
        self.timing[:] = stage.info
        self.code: list[list] = [[] for _ in range(W)]  # buffered TimingInfos, for warps not yet running
        self.mem: list[dict] = [{} for _ in range(W)]
        self.finished = np.zeros(W, dtype=bool)  # as of the last chunk pulled, or retired (detach)
        self.warps: list = [None] * W  # the timing model's Warp, once its block runs
        self.issued = np.zeros(W, dtype=np.int64)  # instructions pulled, per warp (all of them issue)
        self.busy = np.zeros((W, NPORTS), dtype=np.float64)  # unit cycles they will occupy, per warp

    def pull(self) -> bool:
        """Run the batch one chunk further; False once it has finished. Only the warps that issued
        instructions or accesses, or finished, in the chunk are visited."""
        ch = self.source.advance()
        if ch is None:
            return False
        self._count(ch)
        warps, buffered = self.warps, self.code
        code = self.timing.take(ch.pcs).tolist()  # the TimingInfo of each instruction
        for w, lo, hi in _spans(ch.off):
            running = warps[w]
            if running is None:
                buffered[w] += code[lo:hi]
            else:
                running.extend(code[lo:hi])
        acc = ch.accesses
        if acc is not None:
            plans = list(zip(acc.index.tolist(), self.stage.plan(acc), strict=True))  # (stream position, plan)
            for w, lo, hi in _spans(acc.bounds):
                running = warps[w]
                (self.mem[w] if running is None else running.mem).update(plans[lo:hi])
        done = ch.finished & ~self.finished  # a finished warp stays finished
        self.finished |= done
        for w in np.flatnonzero(done).tolist():
            if warps[w] is not None:
                warps[w].complete = True
        return True

    def _count(self, ch: StreamChunk) -> None:
        if not ch.pcs.size:
            return
        W = len(self.warps)
        slot = np.repeat(np.arange(W), np.diff(ch.off))
        self.issued += np.bincount(slot, minlength=W)
        mix = self.mix
        cell = slot * NPORTS + mix.port[ch.pcs]
        self.busy += np.bincount(cell, weights=mix.interval[ch.pcs], minlength=W * NPORTS).reshape(W, NPORTS)

    def attach(self, local_block: int, w: int, warp) -> None:
        """Hand warp `w` of block `local_block` its buffered stream; later chunks go to it directly."""
        k = local_block * self.wpb + w
        warp.code, warp.n, warp.mem = self.code[k], len(self.code[k]), self.mem[k]
        warp.complete = bool(self.finished[k])
        warp.feed = self
        warp.slot = k
        self.code[k], self.mem[k] = [], {}
        self.warps[k] = warp

    def detach(self, warp) -> None:
        """A retired warp needs no more instructions (and the feed no longer refers to it); what it
        issued goes to its sub-partition."""
        k = warp.slot
        self.warps[k] = None
        self.finished[k] = True
        self.mix.retire(self, k, warp.sp.gid)


def _spans(bounds: np.ndarray):
    """(warp, lo, hi) for each warp whose span bounds[w]:bounds[w + 1] of a chunk is not empty."""
    got = np.flatnonzero(bounds[1:] > bounds[:-1])
    return zip(got.tolist(), bounds[got].tolist(), bounds[got + 1].tolist(), strict=True)


class BlockHandle:
    """A block the dispatcher can place: its id and where its warps' streams come from."""

    __slots__ = ("block", "feed", "local", "warps")

    def __init__(self, block: int, feed: BatchFeed, local: int, warps: int):
        self.block, self.feed, self.local, self.warps = block, feed, local, warps


class _StreamSource:
    """Adapts a fully recorded BlockStream (from `gpusim.block_streams`) to the feed interface."""

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


def block_handles(sources: Iterable, stage: AddressStage, mix: UnitMix) -> Iterator[BlockHandle]:
    """Blocks in launch order from either the executor's batch sources (streamed) or BlockStreams
    (already recorded whole)."""
    for src in sources:
        if hasattr(src, "advance"):
            feed = BatchFeed(src, stage, mix)
        else:
            feed = BatchFeed(_StreamSource(src), stage, mix)
        for k in range(feed.nblocks):
            yield BlockHandle(feed.first_block + k, feed, k, feed.wpb)
