"""The SM's L1 data cache (the L1TEX unit's global-memory path): a sectored, set-associative LRU
cache with a tag port that looks up one line per cycle, and MSHRs that track lines being fetched
from L2 (a second miss to a line already on its way waits for the same fill). Stores write through
to L2 (updating a resident line, allocating one only with write_allocate). Where global loads are
not cached (`caches_global_loads: false`), loads still pass the tag port and the MSHRs but never hit."""

from __future__ import annotations

import heapq

from gpusim.config import Config
from gpusim.timing.interconnect import Interconnect


class L1Cache:
    def __init__(self, cfg: Config, noc: Interconnect, size_bytes: int | None = None):
        l1 = cfg.l1
        size = l1.size_bytes if size_bytes is None else size_bytes
        self.noc = noc
        self.ways = l1.ways
        self.size_bytes = size
        self.nsets = max(1, size // (l1.line_size_bytes * l1.ways))
        # per set: line -> valid sector mask; a set's dict is made on its first use (a kernel touches
        # few of the sets of all the SMs' L1s)
        self.sets: list[dict[int, int] | None] = [None] * self.nsets
        self.hit_latency = l1.hit_latency_cycles
        self.mshr_entries = l1.mshr_entries
        self._pending_limit = 4 * l1.mshr_entries  # forget arrived fills beyond this many lines
        self.caches_loads = l1.caches_global_loads and size > 0
        self.write_allocate = l1.write_allocate
        self.port_free = 0
        self.pending: dict[int, tuple[float, int]] = {}  # line -> (cycle its fill arrives, sectors coming)
        self._mshr: list[float] = []  # fill times of lines in flight (a heap)
        self.hits = self.misses = 0  # sectors
        self.requests = 0  # lines looked up (tag wavefronts)
        self.mshr_full_cycles = 0

    def _allocate_mshr(self, s: int) -> int:
        """An MSHR for a miss looked up at cycle `s`; returns when one is free (later if all are busy)."""
        mshr = self._mshr
        while mshr and mshr[0] <= s:
            heapq.heappop(mshr)
        if len(mshr) >= self.mshr_entries:
            free = int(heapq.heappop(mshr) + 0.999999)
            self.mshr_full_cycles += free - s
            s = free
        return s

    def load(self, t: int, lines: list[tuple[int, int]]) -> tuple[int, int]:
        """A warp's load of `lines` [(line, sector mask)] issued at cycle `t`. Returns (ready, accepted):
        the cycle the last sector is back, and the cycle the last line left the tag port (the LSU can
        take the next instruction then)."""
        ready = t
        port = self.port_free
        pending = self.pending
        caches = self.caches_loads
        hit = self.hit_latency
        self.requests += len(lines)
        for line, mask in lines:
            s = port if port > t else t
            port = s + 1
            nsec = mask.bit_count()
            if caches:
                i = line % self.nsets
                st = self.sets[i]
                if st is None:
                    st = self.sets[i] = {}
                valid = st.pop(line, None)
                if valid is None:
                    if len(st) >= self.ways:
                        del st[next(iter(st))]
                    valid = 0
                st[line] = valid | mask
                missing = mask & ~valid
            else:
                missing = mask
            inflight = pending.get(line)
            if inflight is not None and inflight[0] > s:
                fill, coming = inflight
                missing &= ~coming  # sectors already on their way are waited for, not fetched again
            else:
                fill = None
            if missing:
                nmiss = missing.bit_count()
                self.misses += nmiss
                self.hits += nsec - nmiss
                s2 = self._allocate_mshr(s)
                if s2 + 1 > port:
                    port = s2 + 1
                # fetch the missing sectors from the line's L2 slice (the L2 and DRAM count fractional cycles)
                done = self.noc.slice_of(line).read(float(s2), line, missing)
                if inflight is not None and inflight[0] > s2:
                    missing |= inflight[1]
                pending[line] = (done, missing)
                heapq.heappush(self._mshr, done)
                if len(pending) > self._pending_limit:
                    self.pending = pending = {k: v for k, v in pending.items() if v[0] > s2}
                if fill is not None and fill > done:
                    done = fill
            elif fill is not None:
                self.misses += nsec
                done = fill if fill > s + hit else s + hit
            else:
                self.hits += nsec
                done = s + hit
            if done > ready:
                ready = done
        self.port_free = port
        return int(ready + 0.999999), port

    def store(self, t: int, lines: list[tuple[int, int]]) -> tuple[int, int]:
        """A warp's store issued at `t`: returns (acknowledged, accepted)."""
        ack = t
        port = self.port_free
        self.requests += len(lines)
        for line, mask in lines:
            s = port if port > t else t
            port = s + 1
            i = line % self.nsets
            st = self.sets[i]
            if st is not None and line in st:
                st[line] |= mask
            elif self.write_allocate and self.caches_loads:
                if st is None:
                    st = self.sets[i] = {}
                elif len(st) >= self.ways:
                    del st[next(iter(st))]
                st[line] = mask
            done = self.noc.slice_of(line).write(float(s), line, mask)
            if done > ack:
                ack = done
        self.port_free = port
        return int(ack + 0.999999), port

    def atomic(self, t: int, lines: list[tuple[int, int]], operations: list[int]) -> tuple[int, int]:
        """Global atomics bypass the L1 (its copy of the line is dropped) and run at the L2 slice."""
        ready = t
        port = self.port_free
        for (line, mask), ops in zip(lines, operations, strict=False):
            s = port if port > t else t
            port = s + 1
            self.requests += 1
            st = self.sets[line % self.nsets]
            if st is not None:
                st.pop(line, None)
            done = self.noc.slice_of(line).atomic(float(s), line, mask, ops)
            if done > ready:
                ready = done
        self.port_free = port
        return int(ready + 0.999999), port
