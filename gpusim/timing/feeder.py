"""Feeds the SMs the warps' instruction streams, pulled from the functional executor a chunk at a
time as the warps need them, so the simulator only ever holds a window of each warp's stream (the
memory a simulation needs does not grow with the kernel's length). Each chunk's memory accesses are
planned (coalesced, bank-mapped) together by the LD/ST address stage."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

import numpy as np

from gpusim.functional.stream import BatchAccesses, StreamChunk
from gpusim.timing.ldst import AddressStage


class BatchFeed:
    """One batch of blocks of the functional executor: buffers the streams of warps whose block has
    not reached an SM yet and appends new instructions to the warps that are running."""

    def __init__(self, source, stage: AddressStage):
        self.source = source
        self.stage = stage
        self.first_block, self.nblocks, self.wpb = source.first_block, source.nblocks, source.wpb
        W = self.nblocks * self.wpb
        self.code = "H" if source_program_size(source) < 65536 else "I"
        self.pcs: list[array] = [array(self.code) for _ in range(W)]  # buffered, for warps not yet running
        self.mem: list[dict] = [{} for _ in range(W)]
        self.finished = [False] * W
        self.warps: list = [None] * W  # the timing model's Warp, once its block runs

    def pull(self) -> bool:
        """Run the batch one chunk further; False once it has finished."""
        ch = self.source.advance()
        if ch is None:
            return False
        plans = self.stage.plan(ch.accesses) if ch.accesses is not None else None
        off = ch.off.tolist()
        item = 2 if self.code == "H" else 4
        pcs = memoryview(ch.pcs.astype(np.uint16 if item == 2 else np.uint32).tobytes())
        fin = ch.finished.tolist()
        acc = ch.accesses
        if acc is not None:
            bounds = acc.bounds.tolist()
            index = acc.index.tolist()
        for w, running in enumerate(self.warps):
            lo, hi = off[w], off[w + 1]
            if running is None:
                if hi > lo:
                    self.pcs[w].frombytes(pcs[lo * item:hi * item])
                if acc is not None and bounds[w + 1] > bounds[w]:
                    b0, b1 = bounds[w], bounds[w + 1]
                    self.mem[w].update(zip(index[b0:b1], plans[b0:b1], strict=False))
                self.finished[w] = fin[w]
            else:
                if hi > lo:
                    running.extend(pcs[lo * item:hi * item])
                if acc is not None and bounds[w + 1] > bounds[w]:
                    b0, b1 = bounds[w], bounds[w + 1]
                    running.mem.update(zip(index[b0:b1], plans[b0:b1], strict=False))
                running.complete = fin[w]
        return True

    def attach(self, local_block: int, w: int, warp) -> None:
        """Hand warp `w` of block `local_block` its buffered stream; later chunks go to it directly."""
        k = local_block * self.wpb + w
        warp.pcs, warp.n, warp.mem = self.pcs[k], len(self.pcs[k]), self.mem[k]
        warp.complete = self.finished[k]
        warp.feed = self
        warp.slot = k
        self.pcs[k], self.mem[k] = array(self.code), {}
        self.warps[k] = warp

    def detach(self, warp) -> None:
        """A retired warp needs no more instructions (and the feed no longer refers to it)."""
        self.warps[warp.slot] = None
        self.finished[warp.slot] = True


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


def source_program_size(source) -> int:
    """Largest pc + 1 the source can produce (pcs are stored as 16-bit numbers when they fit)."""
    return getattr(source, "program_size", 1 << 16)


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


def block_handles(sources: Iterable, stage: AddressStage) -> Iterator[BlockHandle]:
    """Blocks in launch order from either the executor's batch sources (streamed) or BlockStreams
    (already recorded whole)."""
    for src in sources:
        if hasattr(src, "advance"):
            feed = BatchFeed(src, stage)
        else:
            feed = BatchFeed(_StreamSource(src), stage)
        for k in range(feed.nblocks):
            yield BlockHandle(feed.first_block + k, feed, k, feed.wpb)
