"""Per-warp instruction streams: what each warp issued, in order, with its active mask and, for
memory instructions, the per-lane addresses. This is the functional model's output and the timing
model's input; it is produced block by block so that a long kernel is never held whole.

Shapes follow the launch's warp size (the config's `sm.warp_size`, 1..64; 32 without a config): an
access row holds `warp_size` per-lane addresses, and an active mask is a uint64 whose bit k is lane k
(bits at and above `warp_size` are 0)."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np


def pack_masks(active: np.ndarray) -> np.ndarray:
    """[n, warp_size] bool -> n uint64 masks, bit k for lane k."""
    n, ws = active.shape
    packed = np.packbits(active, axis=1, bitorder="little")
    if ws == 32:
        return packed.view(np.uint32).ravel().astype(np.uint64)
    if ws == 64:
        return packed.view(np.uint64).ravel()
    out = np.zeros((n, 8), dtype=np.uint8)
    out[:, :packed.shape[1]] = packed
    return out.view(np.uint64).ravel()


@dataclass(frozen=True, slots=True)
class BatchAccesses:
    """The memory accesses of a batch of blocks, one row each, grouped by block, then warp, then
    stream order: `rows[j]` holds warp_size per-lane byte addresses (-1: lane not accessing) of the access
    at position `index[j]` of warp `warp[j]` (within its block); `pcs[j]` is its instruction.
    Block k's rows are `bounds[k]:bounds[k + 1]`. The timing model coalesces them in one go."""

    rows: np.ndarray  # (M, warp_size) int64
    pcs: np.ndarray  # (M,) int32
    warp: np.ndarray  # (M,) int32
    index: np.ndarray  # (M,) int64
    bounds: np.ndarray | None  # (blocks + 1,) int64 (None: rows in issue order, not grouped)


@dataclass(frozen=True, slots=True)
class WarpStream:
    """One warp's issued instructions: `pcs[i]` with `masks[i]` (bit k: lane k active);
    `addresses[i]` holds warp_size per-lane byte addresses (-1: lane not accessing) for memory
    instructions. Registers read and written come from `program.instructions[pc]`."""

    warp: int  # warp index within the block
    pcs: np.ndarray  # int32
    masks: np.ndarray  # uint64
    accesses: BatchAccesses | None = None
    lo: int = 0  # this warp's rows in `accesses`
    hi: int = 0

    def __len__(self) -> int:
        return self.pcs.size

    @property
    def addresses(self) -> dict[int, np.ndarray]:
        a = self.accesses
        if a is None:
            return {}
        return dict(zip(a.index[self.lo:self.hi].tolist(), a.rows[self.lo:self.hi], strict=False))


@dataclass(frozen=True, slots=True)
class BlockStream:
    block: int  # linear block id
    warps: tuple[WarpStream, ...]
    accesses: BatchAccesses | None = None  # shared by the blocks of one batch
    lo: int = 0  # this block's rows in `accesses`
    hi: int = 0


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """What the warps of a batch issued since the last chunk: warp w's new pcs and masks are
    `pcs[off[w]:off[w + 1]]`, `masks[...]` (uint64); its new memory accesses are the rows of `accesses` with
    `warp == w` (`index`: position in the warp's whole stream). `finished[w]`: warp w is done."""

    pcs: np.ndarray
    masks: np.ndarray
    off: np.ndarray  # (W + 1,)
    accesses: BatchAccesses | None  # warp: warp index within the batch; bounds: per warp
    finished: np.ndarray  # (W,) bool


@dataclass(frozen=True, slots=True)
class StepChunk:
    """What the warps of a batch issued since the last chunk, in issue order: entry i is warp `G[i]`
    (within the batch) issuing `pcs[i]` with active mask `masks[i]`; a warp's entries are in its stream's
    order. `rows[j]` (warp_size per-lane byte addresses, -1: lane not accessing) is the memory access of
    entry `entries[j]` (rows and entries None: no access). `finished[w]`: warp w is done."""

    G: np.ndarray  # (N,) int64
    pcs: np.ndarray  # (N,) int32
    masks: np.ndarray  # (N,) uint64
    rows: np.ndarray | None  # (M, warp_size) int64
    entries: np.ndarray | None  # (M,) int64
    finished: np.ndarray  # (W,) bool


def _joined(steps: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Recorded steps (pc, G, packed masks, rows) joined in issue order: each step's warp count, and per
    entry its warp, pc and mask."""
    sizes = np.fromiter((g.size for _, g, _, _ in steps), dtype=np.int64, count=len(steps))
    G = np.concatenate([g for _, g, _, _ in steps])
    pcs = np.repeat(np.fromiter((pc for pc, _, _, _ in steps), dtype=np.int32, count=len(steps)), sizes)
    masks = np.concatenate([m for _, _, m, _ in steps])
    return sizes, G, pcs, masks


class _Buffers:
    """A chunk's entries (warp, pc, mask) and access rows, in issue order, as a recorder writes them: kept
    from chunk to chunk (grown when a chunk needs more, never shrunk), so they are neither joined into fresh
    arrays nor page-faulted in anew at every chunk."""

    def __init__(self, warp_size: int):
        self.G = np.zeros(0, np.int64)
        self.pc = np.zeros(0, np.int32)
        self.m = np.zeros(0, np.uint64)
        self.rows = np.zeros((0, warp_size), np.int64)
        self.owner = None  # (the shared set: a weak reference to the recorder writing into it, if any)

    def room(self, n: int, k: int) -> None:
        """Room for k entries after the first n (which stay)."""
        if n + k > self.G.size:
            cap = max(2 * (n + k), 1 << 12)
            self.G, self.pc, self.m = (np.concatenate([a[:n], np.zeros(cap - n, a.dtype)])
                                       for a in (self.G, self.pc, self.m))

    def row_room(self, r: int, k: int) -> None:
        """Room for k access rows after the first r (which stay)."""
        if r + k > self.rows.shape[0]:
            grown = np.zeros((max(2 * (r + k), 1 << 10), self.rows.shape[1]), np.int64)
            grown[:r] = self.rows[:r]
            self.rows = grown


_SHARED = threading.local()  # per thread: the one set of buffers the recorders take turns to write into


def _shared_buffers(warp_size: int) -> _Buffers:
    buf = getattr(_SHARED, "buffers", None)
    if buf is None or buf.rows.shape[1] != warp_size:
        buf = _SHARED.buffers = _Buffers(warp_size)
    return buf


class BatchRecorder:
    """Collects, step by step, which warps of a batch issued which pc with which masks. A chunk's steps are
    written, as they are recorded, into one set of buffers that the recorders take turns to use (a recorder
    takes it at its chunk's first step when no other holds it, and gives it back at the flush; one that
    finds it held writes into buffers of its own): `flush_steps` hands the feeder views of them, so a
    chunk's entries and access rows are not joined into fresh arrays, the pages are not faulted in anew at
    every chunk, and however many batches run at once only one chunk's worth is held. (The views stay valid
    until the next step is recorded: the feeder plans a chunk before it pulls the next.)"""

    def __init__(self, num_warps: int, warp_size: int = 32):
        self.warp_size = warp_size
        self.steps: list[tuple[int, np.ndarray, np.ndarray, np.ndarray | None]] = []
        self.positions: np.ndarray | None = None  # executing lanes within [len(G), warp_size]; None: all
        self.counts = np.zeros(num_warps, dtype=np.int64)  # instructions already flushed, per warp
        self.full_masks: np.ndarray | None = None  # every lane of every warp active, packed
        self._buf: _Buffers | None = None  # where the steps since the last flush are: entries [:n], rows [:r]
        self._n = 0
        self._r = 0
        self._in_order = True  # every access row since the last flush is its step's, in step order

    def _take(self) -> _Buffers:
        shared = _shared_buffers(self.warp_size)
        if shared.owner is None or shared.owner() is None:
            shared.owner = weakref.ref(self)
            self._buf = shared
        else:
            self._buf = _Buffers(self.warp_size)
        return self._buf

    def step(self, pc: int, G: np.ndarray, active: np.ndarray, full: bool = False) -> None:
        """Warps G issue `pc` with `active` lanes ([len(G), warp_size] bool); `full`: every lane of every
        warp of the batch (G all of them), whose masks are the same each time (kept once, never written)."""
        if full:
            if self.full_masks is None or self.full_masks.size != G.size:
                self.full_masks = pack_masks(np.ones((G.size, self.warp_size), dtype=bool))
            masks = self.full_masks
        else:  # (packed at once: an eighth of the bytes to keep, and no copy of `active`)
            masks = pack_masks(active)
        buf = self._buf or self._take()
        n, k = self._n, G.size
        buf.room(n, k)
        g = buf.G[n:n + k]
        g[:] = G
        m = buf.m[n:n + k]
        m[:] = masks
        buf.pc[n:n + k] = pc
        self._n = n + k
        self.steps.append((pc, g, m, None))

    def memory(self, addr: np.ndarray) -> None:
        """The executing lanes' byte addresses of the last step's access (copied into the recorder's row
        buffer: the caller may write `addr` again)."""
        full = self._row()
        if self.positions is None:  # every lane of every warp executes
            full[...] = np.reshape(addr, full.shape)
        else:
            flat = full.reshape(-1)
            flat.fill(-1)
            flat[self.positions] = addr

    def memory_into(self, size: int) -> np.ndarray | None:
        """Where the last step's access addresses go when every lane of its warps executes (`size` lanes):
        the recorder's rows for it, flat, for the caller to write the byte addresses into in place, instead of
        calling `memory` with a fresh array (read, not written again, until the next step); None when some
        lanes do not execute (then `memory`)."""
        if self.positions is not None or size != self.steps[-1][1].size * self.warp_size:
            return None
        return self._row().reshape(-1)

    def _row(self) -> np.ndarray:
        """The rows of the last step's access in the row buffer, taken."""
        pc, G, masks, had = self.steps[-1]
        r, k = self._r, G.size
        if had is not None:  # (a second access of one step: its rows are no longer in step order)
            self._in_order = False
        buf = self._buf
        buf.row_room(r, k)
        full = buf.rows[r:r + k]
        self._r = r + k
        self.steps[-1] = (pc, G, masks, full)
        return full

    def _reset(self) -> list:
        """The steps since the last flush; the buffers given back (what was written stays readable until the
        next step of any recorder)."""
        steps, self.steps = self.steps, []
        if self._buf is not None and self._buf.owner is not None:
            self._buf.owner = None
        self._buf = None
        self._n = self._r = 0
        self._in_order = True
        return steps

    def flush(self, W: int, finished: np.ndarray, grouped: bool = True) -> StreamChunk:
        """The steps recorded since the last flush, grouped by warp (a few numpy operations). With
        `grouped` False the access rows stay in issue order (each still names its warp and position;
        `bounds` is None): the timing model's feeder needs no more, and the rows are not copied again."""
        steps = self._reset()
        if not steps:
            off = np.zeros(W + 1, dtype=np.int64)
            return StreamChunk(np.zeros(0, np.int32), np.zeros(0, np.uint64), off, None, finished.copy())
        sizes, G, pcs, masks = _joined(steps)
        order = np.argsort(G, kind="stable")  # by warp, each warp's steps in issue order
        per_warp = np.bincount(G, minlength=W)
        off = np.zeros(W + 1, dtype=np.int64)
        np.cumsum(per_warp, out=off[1:])
        pos = np.empty(G.size, dtype=np.int64)
        pos[order] = np.arange(G.size) - off[G[order]] + self.counts[G[order]]
        self.counts += per_warp
        accesses = None
        mem_steps = [k for k, st in enumerate(steps) if st[3] is not None]
        if mem_steps:
            starts = np.zeros(len(steps) + 1, dtype=np.int64)
            np.cumsum(sizes, out=starts[1:])
            flat = np.concatenate([np.arange(starts[k], starts[k + 1]) for k in mem_steps])
            rows = np.concatenate([steps[k][3] for k in mem_steps])
            if not grouped:
                accesses = BatchAccesses(rows, pcs[flat], G[flat].astype(np.int32), pos[flat], None)
                return StreamChunk(pcs[order], masks[order], off, accesses, finished.copy())
            mo = np.lexsort((pos[flat], G[flat]))
            flat, rows = flat[mo], rows[mo]
            mw = G[flat]
            row_off = np.zeros(W + 1, dtype=np.int64)
            np.cumsum(np.bincount(mw, minlength=W), out=row_off[1:])
            accesses = BatchAccesses(rows, pcs[flat], mw.astype(np.int32), pos[flat], row_off)
        return StreamChunk(pcs[order], masks[order], off, accesses, finished.copy())

    def flush_steps(self, W: int, finished: np.ndarray) -> StepChunk:
        """The steps recorded since the last flush as they were issued (no grouping: the timing model's
        feeder appends them to its warps' windows in compiled code): views of the recorder's buffers, valid
        until the next step is recorded."""
        n, r, in_order, buf = self._n, self._r, self._in_order, self._buf
        steps = self._reset()
        if not steps:
            return StepChunk(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint64), None, None,
                             finished.copy())
        G = buf.G[:n]
        self.counts += np.bincount(G, minlength=W)
        mem_steps = [k for k, st in enumerate(steps) if st[3] is not None]
        rows = entries = None
        if mem_steps:
            sizes = np.fromiter((g.size for _, g, _, _ in steps), dtype=np.int64, count=len(steps))
            starts = np.zeros(len(steps) + 1, dtype=np.int64)
            np.cumsum(sizes, out=starts[1:])
            entries = np.concatenate([np.arange(starts[k], starts[k + 1]) for k in mem_steps])
            rows = buf.rows[:r] if in_order else np.concatenate([steps[k][3] for k in mem_steps])
        return StepChunk(G, buf.pc[:n], buf.m[:n], rows, entries, finished.copy())

    def blocks(self, program, first_block: int, nblocks: int, wpb: int):
        """The whole batch's streams (recorded to its end), block by block."""
        W = nblocks * wpb
        ch = self.flush(W, np.ones(W, dtype=bool))
        acc, off = ch.accesses, ch.off.tolist()
        row = acc.bounds.tolist() if acc is not None else [0] * (W + 1)
        if acc is not None:
            acc = BatchAccesses(acc.rows, acc.pcs, acc.warp % wpb, acc.index, acc.bounds[::wpb].copy())
        for blk in range(nblocks):
            warps = tuple(
                WarpStream(w - blk * wpb, ch.pcs[off[w]:off[w + 1]], ch.masks[off[w]:off[w + 1]],
                           acc, row[w], row[w + 1])
                for w in range(blk * wpb, (blk + 1) * wpb))
            yield BlockStream(first_block + blk, warps, acc, row[blk * wpb], row[(blk + 1) * wpb])
