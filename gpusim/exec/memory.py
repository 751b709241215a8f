"""Device memory of a whole CUDA application: one address space, allocations laid out as the driver lays them.

A program's kernels, its copies and its host code all see the same bytes: a memfd, mapped here as a numpy
array and, by gpusim's runtime inside the application, at the same device addresses (so managed and pinned
memory are the host's to touch directly, and a copy is one memmove there).

The layout follows what the CUDA driver does on Linux, so that a program that reads a little past the end of
an allocation (a stencil's last row, a vector load of a buffer's tail) runs as it does on a GPU:
- the driver maps device memory in 2 MiB pages (`PAGE`, the GPU's large page);
- an allocation smaller than a page is placed in a page of its own kind (device, managed, pinned host) beside
  others, each at a multiple of `ALIGN` (512 B: what cudaMalloc returns on current drivers; the API
  promises 256);
- a larger one gets pages of its own, its size rounded up to whole pages;
- between two such reservations one page stays unmapped, so an access that runs far past its buffer (or a
  wild pointer) meets unmapped memory and faults, as it does on hardware.
An access faults only outside every mapped page: within a page it reads whatever lies there, a neighbour's
bytes or the zeros of unused space. A page holding no allocation any more is unmapped (and its memory given
back to the host). `tests/exec/test_memory.py` checks the layout and the faults."""

from __future__ import annotations

import bisect
import mmap
import os
from dataclasses import dataclass, field

import numpy as np

from gpusim.exec.protocol import DEVICE, INVALID_VALUE, MANAGED, MEMORY_ALLOCATION, PINNED, Reply
from gpusim.functional.memory import GlobalMemory, host_available_bytes

PAGE = 2 << 20  # bytes: the driver maps device memory in the GPU's 2 MiB pages
ALIGN = 512  # bytes: the alignment of cudaMalloc's pointers on current drivers
BASE = 0x2000_0000_0000  # the first device address: the same in gpusim and in the application
KIND_NAMES = {DEVICE: "device", MANAGED: "managed", PINNED: "pinned host"}


@dataclass(slots=True)
class Allocation:
    addr: int
    size: int
    kind: int
    name: str
    chunk: Chunk
    flags: int = 0


@dataclass(slots=True)
class Chunk:
    """Mapped pages [lo, hi) of one kind: one large allocation, or small ones side by side."""

    lo: int
    hi: int
    kind: int
    shared: bool  # holds small allocations (more may be placed in it)
    allocs: list[Allocation] = field(default_factory=list)  # by address


def _up(n: int, a: int) -> int:
    return -(-n // a) * a


class DeviceMemory(GlobalMemory):
    """The application's device memory (a GlobalMemory for the functional executor: `buffer`, `offsets`,
    `valid`, `read`, `write`). `limit_bytes`: what device and managed allocations may take together (the
    config's `chip.global_memory_bytes`)."""

    def __init__(self, limit_bytes: int, base: int = BASE):
        self.base, self.limit = base, int(limit_bytes)
        # device, managed and pinned may each take up to the limit, and every reservation may leave a page
        # unmapped beside it: twice that is the most the address space can need
        self.size = _up(6 * self.limit + 4 * PAGE, PAGE)
        self.fd = os.memfd_create("gpusim-device-memory", 0)
        os.ftruncate(self.fd, self.size)
        self._mm = mmap.mmap(self.fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self._all = np.frombuffer(self._mm, dtype=np.uint8)
        self._buf = self._all[:0]
        self._next = base
        self.chunks: list[Chunk] = []
        self.live: dict[int, Allocation] = {}
        self.allocations: list[tuple[int, int, str]] = []
        self._starts = np.zeros(0, dtype=np.int64)
        self._ends = np.zeros(0, dtype=np.int64)
        self.in_use = {DEVICE: 0, MANAGED: 0, PINNED: 0}
        self.peak_bytes = 0

    # ---- the functional executor's view -------------------------------------------------------------
    def write(self, addr: int, arr: np.ndarray) -> None:
        raw = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        off = addr - self.base
        self._all[off: off + raw.size] = raw

    def read(self, addr: int, dtype, count: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        off = addr - self.base
        return self._all[off: off + count * dtype.itemsize].view(dtype).copy()

    def offsets(self, addr: np.ndarray, width: int) -> np.ndarray | None:
        """Buffer offsets of per-lane addresses, or None when some lane's access falls outside every mapped
        page."""
        if not self.valid(addr, width).all():
            return None
        return addr - self.base

    def valid(self, addr: np.ndarray, width: int) -> np.ndarray:
        i = np.searchsorted(self._starts, addr, side="right") - 1
        return (i >= 0) & (addr >= self.base) & (addr + width <= self._ends[np.maximum(i, 0)])

    # ---- allocation ---------------------------------------------------------------------------------
    def alloc(self, nbytes: int, name: str = "") -> int:
        return self.allocate(nbytes, DEVICE, name)[0]

    def allocate(self, nbytes: int, kind: int, name: str = "", flags: int = 0) -> tuple[int, list]:
        """(address, protections) of a new allocation of `nbytes` of `kind` (protocol.DEVICE, MANAGED,
        PINNED); protections are the (lo, hi, host_may_touch) ranges whose mapping changed. Reply
        (cudaErrorMemoryAllocation) when it does not fit."""
        nbytes = int(nbytes)
        if nbytes == 0:
            return 0, []
        self._check_room(nbytes, kind)
        prot = []
        chunk, addr = self._place_small(nbytes, kind) if nbytes < PAGE else (None, 0)
        if chunk is None:
            chunk = self._new_chunk(_up(nbytes, PAGE) if nbytes >= PAGE else PAGE, kind, shared=nbytes < PAGE)
            addr = chunk.lo
            if kind != DEVICE:
                prot.append((chunk.lo, chunk.hi, True))
        a = Allocation(addr, nbytes, kind, name, chunk, flags)
        bisect.insort(chunk.allocs, a, key=lambda x: x.addr)
        self.live[addr] = a
        self.in_use[kind] += _up(nbytes, ALIGN)
        self.peak_bytes = max(self.peak_bytes, self.in_use[DEVICE] + self.in_use[MANAGED])
        self._refresh()
        return addr, prot

    def _check_room(self, nbytes: int, kind: int) -> None:
        if kind == PINNED:
            free = host_available_bytes()
            if free is not None and nbytes > free:
                raise Reply(MEMORY_ALLOCATION, f"{nbytes:,} bytes of pinned host memory: {free:,} are available")
            if self.in_use[PINNED] + nbytes > self.limit:
                raise Reply(MEMORY_ALLOCATION, f"pinned host memory is limited to the device's size, {self.limit:,} "
                                               "bytes, under gpusim exec")
        elif self.in_use[DEVICE] + self.in_use[MANAGED] + _up(nbytes, ALIGN) > self.limit:
            raise Reply(MEMORY_ALLOCATION, f"{nbytes:,} more bytes: {self.in_use[DEVICE] + self.in_use[MANAGED]:,} "
                                           f"of the device's {self.limit:,} are allocated")

    def _place_small(self, nbytes: int, kind: int) -> tuple[Chunk | None, int]:
        for c in self.chunks:
            if c.kind != kind or not c.shared:
                continue
            pos = c.lo
            for a in c.allocs:
                if _up(pos, ALIGN) + nbytes <= a.addr:
                    break
                pos = a.addr + a.size
            addr = _up(pos, ALIGN)
            if addr + nbytes <= c.hi:
                return c, addr
        return None, 0

    def _new_chunk(self, span: int, kind: int, *, shared: bool) -> Chunk:
        lo = self.base
        for c in self.chunks:
            if lo + span + PAGE <= c.lo:
                break
            lo = max(lo, c.hi + PAGE)
        if lo + span > self.base + self.size:
            raise Reply(MEMORY_ALLOCATION, "the device address space is full")
        chunk = Chunk(lo, lo + span, kind, shared)
        bisect.insort(self.chunks, chunk, key=lambda c: c.lo)
        return chunk

    def release(self, addr: int, kinds: tuple[int, ...]) -> list:
        """Free the allocation at `addr` (one of `kinds`); the protections whose mapping changed. Reply
        (cudaErrorInvalidValue) for an address that is not the start of a live allocation of those kinds,
        freed twice included."""
        if addr == 0:
            return []
        a = self.live.get(addr)
        if a is None or a.kind not in kinds:
            what = "was freed already or never allocated" if a is None else f"is {KIND_NAMES[a.kind]} memory"
            raise Reply(INVALID_VALUE, f"{addr:#x} {what}")
        del self.live[addr]
        chunk = a.chunk
        chunk.allocs.remove(a)
        self.in_use[a.kind] -= _up(a.size, ALIGN)
        prot = []
        if not chunk.allocs:
            self.chunks.remove(chunk)
            self._mm.madvise(mmap.MADV_REMOVE, chunk.lo - self.base, chunk.hi - chunk.lo)
            if chunk.kind != DEVICE:
                prot.append((chunk.lo, chunk.hi, False))
        self._refresh()
        return prot

    def release_all(self, keep=lambda a: False) -> list:
        """Free every allocation but those `keep` says (cudaDeviceReset); the protections that changed."""
        prot = []
        for a in [a for a in self.live.values() if not keep(a)]:
            prot += self.release(a.addr, (a.kind,))
        return prot

    def _refresh(self) -> None:
        self._starts = np.array([c.lo for c in self.chunks], dtype=np.int64)
        self._ends = np.array([c.hi for c in self.chunks], dtype=np.int64)
        self.allocations = [(a.addr, a.size, a.name) for a in sorted(self.live.values(), key=lambda x: x.addr)]
        high = max((c.hi for c in self.chunks), default=self.base) - self.base
        if high > self._buf.size:
            self._buf = self._all[:high]
        self._next = self.base + high

    # ---- questions ------------------------------------------------------------------------------------
    def find(self, addr: int) -> Allocation | None:
        """The live allocation holding address `addr`, if any."""
        i = bisect.bisect_right(self.chunks, addr, key=lambda c: c.lo) - 1
        if i < 0 or addr >= self.chunks[i].hi:
            return None
        allocs = self.chunks[i].allocs
        j = bisect.bisect_right(allocs, addr, key=lambda a: a.addr) - 1
        if j >= 0 and addr < allocs[j].addr + max(allocs[j].size, 1):
            return allocs[j]
        return None

    def owns(self, addr: int) -> bool:
        """Whether `addr` lies in gpusim's address space (device, managed or pinned memory, mapped or not)."""
        return self.base <= addr < self.base + self.size

    def snapshot(self) -> list[tuple[int, np.ndarray]]:
        """A copy of every mapped page (to run a kernel again from the same state)."""
        return [(c.lo, self._all[c.lo - self.base: c.hi - self.base].copy()) for c in self.chunks]

    def restore(self, snap: list[tuple[int, np.ndarray]]) -> None:
        for lo, data in snap:
            self._all[lo - self.base: lo - self.base + data.size] = data

    def close(self) -> None:
        self._buf = self._all = None
        try:
            self._mm.close()
        except BufferError:  # a view still alive somewhere: the mapping goes with the process
            pass
        os.close(self.fd)
