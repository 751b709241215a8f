"""Device memories as byte-addressed numpy buffers: global memory (one per launch, with
allocations), and the bounds/alignment check every memory instruction goes through."""

from __future__ import annotations

import numpy as np

from gpusim.errors import LaunchError

ALLOC_ALIGN = 256  # cudaMalloc returns 256-byte aligned pointers
GUARD_BYTES = 256  # unmapped gap between allocations, so an overrun faults
BASE_ADDRESS = 0x10000  # low addresses stay unmapped: a null pointer faults


class GlobalMemory:
    """Global memory of one device: a growable byte buffer with typed views, plus the list of
    allocations, so that an access outside every allocation is a fault, as under compute-sanitizer."""

    def __init__(self, capacity: int = 1 << 20):
        self._buf = np.zeros(capacity, dtype=np.uint8)
        self._next = BASE_ADDRESS
        self.allocations: list[tuple[int, int, str]] = []  # (address, size, name)
        self._starts = np.zeros(0, dtype=np.int64)
        self._ends = np.zeros(0, dtype=np.int64)

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
            grown = np.zeros(max(need, 2 * self._buf.size), dtype=np.uint8)
            grown[: self._buf.size] = self._buf
            self._buf = grown
        self.allocations.append((addr, nbytes, name))
        self._starts = np.array([a for a, _, _ in self.allocations], dtype=np.int64)
        self._ends = np.array([a + s for a, s, _ in self.allocations], dtype=np.int64)
        return addr

    def alloc_array(self, arr: np.ndarray, name: str = "") -> int:
        arr = np.ascontiguousarray(arr)
        addr = self.alloc(arr.nbytes, name)
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
