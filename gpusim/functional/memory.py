"""Device memories as byte-addressed numpy buffers: global memory (one per launch, with
allocations), and the bounds/alignment check every memory instruction goes through."""

from __future__ import annotations

import copy
import os

import numpy as np

from gpusim.errors import LaunchError

ALLOC_ALIGN = 256  # cudaMalloc returns 256-byte aligned pointers
GUARD_BYTES = 256  # unmapped gap between allocations, so an overrun faults
BASE_ADDRESS = 0x10000  # low addresses stay unmapped: a null pointer faults


def footprint(sizes) -> int:
    """Bytes of device memory that allocations of `sizes` bytes take, in this order (alignment and the
    guard gaps between them included): what a launch needs of `chip.global_memory_bytes`."""
    end = BASE_ADDRESS
    for n in sizes:
        end = -(-end // ALLOC_ALIGN) * ALLOC_ALIGN + max(int(n), 1) + GUARD_BYTES
    return end - BASE_ADDRESS


def host_available_bytes() -> int | None:
    """Host memory free for new allocations (MemAvailable of /proc/meminfo, else free physical pages),
    or None where the system does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:,.2f} GiB" if n >= 2**28 else f"{n / 2**20:,.1f} MiB"


def check_device_memory(nbytes: int, cfg) -> None:
    """LaunchError, before anything is allocated, when a launch's arrays need more device memory than
    the config's `chip.global_memory_bytes`."""
    if cfg is not None and nbytes > cfg.chip.global_memory_bytes:
        raise LaunchError(f"the launch's arrays need {nbytes:,} bytes ({_gib(nbytes)}) of device memory; "
                          f"{cfg.name} has {cfg.chip.global_memory_bytes:,} ({_gib(cfg.chip.global_memory_bytes)})",
                          field="chip.global_memory_bytes")


def check_host_memory(nbytes: float, what: str) -> None:
    """LaunchError, before it is allocated, when `nbytes` of host memory (described by `what`) is more
    than the host has available."""
    free = host_available_bytes()
    if free is not None and nbytes > free:
        raise LaunchError(f"needs about {_gib(nbytes)} of host memory ({what}); {_gib(free)} is available",
                          field="host memory")


class PageJournal:
    """The bytes a run writes into a buffer it shares, kept page by page as they were before its first write
    there, so that `restore()` puts the buffer back as it was: a copy of only the pages written, not of the
    whole buffer (the runaway-loop probe's block run alone, gpusim.functional.warps, writes a few pages of a
    memory that may hold gigabytes)."""

    PAGE = 4096  # bytes

    def __init__(self, buf: np.ndarray):
        self.buf = buf
        self.saved = np.zeros(-(-buf.size // self.PAGE), dtype=bool)
        self.copies: list[tuple[np.ndarray, np.ndarray]] = []  # (pages, their bytes before the first write)

    def save(self, offsets: np.ndarray, width: int) -> None:
        """Before a write of `width` bytes at each byte offset of `offsets`: keep the pages it touches that
        are not kept already."""
        first, last = offsets >> 12, (offsets + (width - 1)) >> 12  # (PAGE = 2**12 bytes)
        pages = np.unique(np.concatenate((first.ravel(), last.ravel())))
        pages = pages[~self.saved[pages]]
        if pages.size:
            self.saved[pages] = True
            at = self._bytes(pages)
            self.copies.append((at, self.buf[at]))

    def _bytes(self, pages: np.ndarray) -> np.ndarray:
        """The byte offsets of `pages` (the last page, which may be partial, clipped to the buffer)."""
        return np.minimum(pages[:, None] * self.PAGE + np.arange(self.PAGE), self.buf.size - 1).ravel()

    def restore(self) -> None:
        for at, data in self.copies:
            self.buf[at] = data
        self.copies.clear()
        self.saved[:] = False


class GlobalMemory:
    """Global memory of one device: a growable byte buffer with typed views, plus the list of
    allocations, so that an access outside every allocation is a fault, as under compute-sanitizer."""

    # a run on a shallow copy that must leave the buffer as it found it keeps the bytes it overwrites here (every
    # global write calls `before_write`); a class attribute, so that a subclass's own __init__ has it too
    journal: PageJournal | None = None

    def __init__(self, capacity: int = 1 << 20):
        # (a whole number of the widest access, 16 bytes: the executor reads the buffer through typed views)
        self._buf = np.zeros(-(-capacity // 16) * 16, dtype=np.uint8)
        self._next = BASE_ADDRESS
        self.allocations: list[tuple[int, int, str]] = []  # (address, size, name)
        self._starts = np.zeros(0, dtype=np.int64)
        self._ends = np.zeros(0, dtype=np.int64)

    def journaled(self) -> GlobalMemory:
        """This memory for a run that must leave it as it found it: the same buffer, written through a
        PageJournal (the caller restores it when the run ends)."""
        mem = copy.copy(self)
        mem.journal = PageJournal(self.buffer)
        return mem

    def before_write(self, offsets: np.ndarray, width: int) -> None:
        """Called before `width`-byte writes at the buffer's byte `offsets` (each lane's)."""
        if self.journal is not None:
            self.journal.save(offsets, width)

    @property
    def buffer(self) -> np.ndarray:
        return self._buf

    def alloc(self, nbytes: int, name: str = "") -> int:
        if nbytes < 0:
            raise LaunchError(f"cannot allocate {nbytes} bytes", field=name or None)
        addr = -(-self._next // ALLOC_ALIGN) * ALLOC_ALIGN
        end = addr + max(nbytes, 1)
        self._next = end + GUARD_BYTES
        need = self._next - BASE_ADDRESS
        if need > self._buf.size:
            grown = np.zeros(-(-max(need, 2 * self._buf.size) // 16) * 16, dtype=np.uint8)
            grown[: self._buf.size] = self._buf
            self._buf = grown
        self.allocations.append((addr, nbytes, name))
        self._starts = np.array([a for a, _, _ in self.allocations], dtype=np.int64)
        self._ends = np.array([a + s for a, s, _ in self.allocations], dtype=np.int64)
        return addr

    def alloc_array(self, arr: np.ndarray, name: str = "") -> int:
        arr = np.ascontiguousarray(arr)
        addr = self.alloc(arr.nbytes, name)
        # fresh memory is zero bytes already: an output buffer's zeros are not copied in (its bytes, not its
        # values: -0.0 compares equal to zero but is not zero bytes)
        if arr.view(np.uint8).any():
            self.write(addr, arr)
        return addr

    def write(self, addr: int, arr: np.ndarray) -> None:
        raw = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        off = addr - BASE_ADDRESS
        self._buf[off: off + raw.size] = raw

    def read(self, addr: int, dtype, count: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        off = addr - BASE_ADDRESS
        return self._buf[off: off + count * dtype.itemsize].view(dtype).copy()

    def offsets(self, addr: np.ndarray, width: int) -> np.ndarray | None:
        """Buffer offsets of per-lane addresses, or None when some lane's access of `width` bytes
        falls outside every allocation (the caller finds which lane and reports it)."""
        if addr.size and self._starts.size:
            # the usual access: every lane within one allocation, told by the lowest and highest address alone
            lo, hi = int(addr.min()), int(addr.max())
            i = int(np.searchsorted(self._starts, lo, side="right")) - 1
            if i >= 0 and hi + width <= int(self._ends[i]):
                return addr - BASE_ADDRESS
        if self._starts.size == 1:
            ok = (addr >= self._starts[0]) & (addr + width <= self._ends[0])
        else:
            i = np.searchsorted(self._starts, addr, side="right") - 1
            ok = (i >= 0) & (addr + width <= self._ends[np.maximum(i, 0)])
        if not ok.all():
            return None
        return addr - BASE_ADDRESS

    def valid(self, addr: np.ndarray, width: int) -> np.ndarray:
        i = np.searchsorted(self._starts, addr, side="right") - 1
        return (i >= 0) & (addr + width <= self._ends[np.maximum(i, 0)])
