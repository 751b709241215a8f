"""The L2: a chip-wide sectored, set-associative LRU cache split into slices. Each slice has a data
port (a FIFO server moving `slice_bandwidth_bytes_per_cycle`), its own sets, and serves reads, writes
and atomics. A read that misses fetches the missing sectors from DRAM; a write-back L2 keeps written
sectors dirty and writes them to DRAM when their line is evicted; atomics are performed at the slice.

`prefill_dirty` starts a slice in the steady state of a long kernel whose data overflows the L2: every
set full of lines no kernel address maps to (negative line numbers), a given fraction of them dirty,
so that every line the kernel allocates evicts one, and writes it back when it is dirty."""

from __future__ import annotations

from gpusim.config import Config
from gpusim.timing.dram import Dram
from gpusim.timing.fifo import FifoServer


class L2Slice:
    __slots__ = ("port", "sets", "nsets", "ways", "line_bytes", "sector_bytes", "per_cycle", "hit_latency", "dram",
                 "write_back", "dirty", "hits", "misses", "writes", "atomics", "slices", "_service")

    def __init__(self, cfg: Config, dram: Dram):
        self.port = FifoServer()  # the data port
        l2 = cfg.l2
        self.slices = l2.slices
        self.line_bytes = l2.line_size_bytes
        self.sector_bytes = l2.sector_size_bytes
        self.ways = l2.ways
        self.nsets = max(1, l2.size_bytes // (l2.slices * l2.line_size_bytes * l2.ways))
        # per set: line -> valid sector mask; a set's dict is made on its first use
        self.sets: list[dict[int, int] | None] = [None] * self.nsets
        self.dirty: dict[int, int] = {}  # line -> dirty sector mask
        self.per_cycle = l2.slice_bandwidth_bytes_per_cycle
        # the data port's time to move n sectors, for every n a request's sector mask can have (requests
        # come from the L1s, whose masks hold at most an L1 line's sectors)
        most = max(self.line_bytes // self.sector_bytes, cfg.l1.line_size_bytes // cfg.l1.sector_size_bytes)
        self._service = [n * self.sector_bytes / self.per_cycle for n in range(most + 1)]
        self.hit_latency = l2.hit_latency_cycles
        self.write_back = l2.write_policy == "write_back"
        self.dram = dram
        self.hits = self.misses = self.writes = self.atomics = 0  # sectors (atomics: lane operations)

    # the data port's counters
    busy_cycles = property(lambda self: self.port.busy_cycles)
    queue_cycles = property(lambda self: self.port.queue_cycles)
    requests = property(lambda self: self.port.requests)

    def _lookup(self, t: float, line: int, mask: int) -> int:
        """Touch `line` (LRU) at `t`, allocating it if absent (evicting the set's least recently used
        line, written back to DRAM when dirty), and mark the sectors of `mask` valid: they are there
        once the access completes. Returns the sectors of `mask` the line lacked."""
        i = (line // self.slices) % self.nsets
        s = self.sets[i]
        if s is None:
            s = self.sets[i] = {}
        valid = s.pop(line, None)
        if valid is None:
            if len(s) >= self.ways:
                victim = next(iter(s))
                del s[victim]
                d = self.dirty.pop(victim, 0)
                if d:
                    addr = victim * self.line_bytes
                    self.dram.controller(addr).write(t, d.bit_count() * self.sector_bytes)
            valid = 0
        s[line] = valid | mask
        return mask & ~valid

    def read(self, t: float, line: int, mask: int) -> float:
        """Read the sectors `mask` of `line`, requested at `t`: the cycle they are back at the SM."""
        nsec = mask.bit_count()
        _, start = self.port.serve(t, self._service[nsec])
        missing = self._lookup(start, line, mask)
        done = start + self.hit_latency
        if missing:
            nmiss = missing.bit_count()
            self.misses += nmiss
            self.hits += nsec - nmiss
            back = self.dram.controller(line * self.line_bytes).read(start, nmiss * self.sector_bytes)
            if back > done:
                done = back
        else:
            self.hits += nsec
        return done

    def write(self, t: float, line: int, mask: int) -> float:
        """Write the sectors `mask` of `line` (whole sectors); returns the cycle the write is acknowledged."""
        nsec = mask.bit_count()
        _, start = self.port.serve(t, self._service[nsec])
        self._lookup(start, line, mask)
        self.writes += nsec
        if self.write_back:
            dirty = self.dirty
            dirty[line] = dirty.get(line, 0) | mask
        else:
            self.dram.controller(line * self.line_bytes).write(start, nsec * self.sector_bytes)
        return start + self.hit_latency

    def atomic(self, t: float, line: int, mask: int, operations: int) -> float:
        """Perform `operations` lane atomics on `line` at the slice, one per cycle, after fetching any
        missing sectors; returns the cycle the old values are back at the SM."""
        nsec = mask.bit_count()
        _, start = self.port.serve(t, max(operations, self._service[nsec]))
        missing = self._lookup(start, line, mask)
        ready = start
        if missing:
            ready = self.dram.controller(line * self.line_bytes).read(start, missing.bit_count() * self.sector_bytes)
            ready -= self.hit_latency  # the DRAM latency already counts the trip from the SM
        self.atomics += operations
        if self.write_back:
            self.dirty[line] = self.dirty.get(line, 0) | mask
        return max(start, ready) + operations + self.hit_latency

    def kernel_dirty_sectors(self) -> int:
        """Dirty sectors of the kernel's own lines (the foreign lines of `prefill_dirty` excluded)."""
        return sum(m.bit_count() for line, m in self.dirty.items() if line >= 0)

    def prefill_dirty(self, dirty_fraction: float = 1.0, index: int = 0) -> int:
        """Fill every set with `ways` lines that belong to no address (negative line numbers, distinct
        for each slice `index`), all sectors valid, `dirty_fraction` f of the lines dirty (whole lines).
        The dirty lines are spread so that every set holds f x ways of them (within one) and, for each
        way, a fraction f of the sets has it dirty, with no pattern in the set number: way w of set t is
        dirty when frac(w f + p_t) >= 1 - f, the phase p_t = frac((index x nsets + t) x golden ratio).
        A kernel's first allocations in any subset of the sets (a power-of-two stride, one parity)
        therefore evict dirty lines at the fraction f. Allocated in way order, so the kernel's first
        allocations evict them in that order, and their write-backs spread over the memory
        controllers. Returns the dirty bytes added. Call before the kernel's first access."""
        if not 0.0 <= dirty_fraction <= 1.0:
            raise ValueError(f"dirty_fraction {dirty_fraction} is not within [0, 1]")
        full = (1 << (self.line_bytes // self.sector_bytes)) - 1
        n = self.nsets
        f = dirty_fraction
        golden = (5 ** 0.5 - 1) / 2
        dirty = 0
        for w in range(self.ways):
            for k in range(n):
                c = w * n + k
                q = -1 - c  # the line's number divided by the slice count: its set is q % nsets
                line = q * self.slices + (index + c) % self.slices
                s = self.sets[q % n]
                if s is None:
                    s = self.sets[q % n] = {}
                s[line] = full
                phase = ((index * n + q % n) * golden) % 1.0
                if self.write_back and f > 0 and (w * f + phase) % 1.0 >= 1.0 - f:
                    self.dirty[line] = full
                    dirty += 1
        return dirty * self.line_bytes
