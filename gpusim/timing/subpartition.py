"""An SM sub-partition (processing block): a warp scheduler, its slice of the register file, and its
own execution units. Each step it finds the warps that may issue (scoreboard clear, unit free), lets
the scheduler pick, and accounts every resident warp's cycle to one Nsight Compute warp state."""

from __future__ import annotations

from bisect import insort
from heapq import heappop, heappush

from gpusim.timing.decode import PORTS, WARP_STATES, S
from gpusim.timing.pipelines import Pipelines
from gpusim.timing.scheduler import WarpScheduler

NOT_SELECTED, SELECTED = S["not_selected"], S["selected"]

# `next_time` of a sub-partition with nothing to do. An int, not INF: CPython 3.11 specialises
# comparisons of two small ints (below 2**30), not of an int and a float, and the SM's loop makes
# several a cycle. Times at or past NEVER are never acted on: GPU.run stops the kernel at HORIZON
# (NEVER - 1, about 0.76 s at 1.41 GHz) with a SimulationLimitError.
NEVER = (1 << 30) - 1


class SubPartition:
    def __init__(self, index: int, gid: int, policy: str, active_set: int, issue_width: int):
        self.index = index
        self.gid = gid  # index among all the chip's sub-partitions
        self.warps: list = []  # resident warps, oldest first (two_level: in priority order)
        # heap of (cycle, age, warp): warps whose next instruction waits, above a sentinel that never
        # comes up (so `waiting[0][0]` is always the next cycle a warp becomes ready, NEVER if none)
        self.waiting: list = [(NEVER, -1, None)]
        self.by_port: list[list] = [[] for _ in PORTS]  # ready warps' `entry` (age, warp) per unit, oldest first
        self.ports: list[int] = []  # units that have ready warps
        self.free_seen = [0] * len(PORTS)  # cycles each unit was free while warps were ready for it
        self.next_time = NEVER  # the next cycle this sub-partition has anything to do
        self.greedy = None  # gto: the warp that issued last cycle, ready again the next
        self.fast_greedy = policy == "gto" and issue_width == 1
        self.pipes = Pipelines()
        self.free = self.pipes.free  # cycle each unit accepts its next instruction
        self.scheduler = WarpScheduler(policy, active_set)
        self.issue_width = issue_width
        self.states = [0] * len(WARP_STATES)  # warp-cycles per state
        self.issued = 0  # instructions issued (counted from the streams: see feeder.UnitMix)
        self.eligible_sum = 0  # eligible warps summed over cycles
        self.active_cycles = 0  # cycles with at least one resident warp
        self._busy_since = 0

    def add(self, warp, t: int) -> None:
        if not self.warps:
            self._busy_since = t
        self.warps.append(warp)
        warp.sp = self
        heappush(self.waiting, (warp.ready, warp.age, warp))
        if warp.ready < self.next_time:
            self.next_time = warp.ready

    def remove(self, warp, t: int) -> None:
        self.warps.remove(warp)
        if self.scheduler.last is warp:
            self.scheduler.last = None
        if not self.warps:
            self.active_cycles += t - self._busy_since

    def tally(self, issued: int, busy: list[float]) -> None:
        """Once the kernel is done: the instructions issued here (one `selected` cycle each) and the
        cycles each unit was occupied."""
        self.issued = issued
        self.states[SELECTED] = issued
        self.pipes.busy = [round(c) for c in busy]

    def step(self, t: int, issue) -> None:
        """Issue at cycle `t` (through `issue(warp, t)`); sets `next_time`, the next cycle this
        sub-partition has anything to do.

        A ready warp waits for one of two reasons each cycle: its unit is busy (a throttle state) or
        its unit is free but another warp was chosen (not_selected). Which one depends only on the
        unit, so each unit counts the cycles it was free while warps were ready for it, and a warp's
        wait is split when it issues, without visiting every ready warp every cycle."""
        waiting = self.waiting
        ports = self.ports
        if waiting[0][0] > t:
            # (this way round the comparison's jump is short, which CPython 3.11 needs to specialise it)
            by_port = self.by_port
            seen = self.free_seen
        else:
            w = heappop(waiting)[2]
            if (not ports and self.greedy is None and self.fast_greedy and waiting[0][0] > t
                    and self.free[w.port] <= t):
                # gto, and the only warp that could issue: it does
                if t > w.ready:
                    self.states[w.info.throttle_reason] += t - w.ready
                self.eligible_sum += 1
                self.scheduler.last = w
                issue(w, t)
                self.next_time = t + 1 if self.greedy is not None else waiting[0][0]
                return
            by_port = self.by_port
            seen = self.free_seen
            while True:
                p = w.port
                lst = by_port[p]
                w.snap = seen[p]
                w.queued = True
                if not lst:
                    ports.append(p)
                    lst.append(w.entry)
                elif lst[-1][0] < w.age:
                    lst.append(w.entry)
                else:
                    insort(lst, w.entry)
                if waiting[0][0] > t:
                    break
                w = heappop(waiting)[2]
        free = self.free
        g = self.greedy
        if g is not None:
            # gto: the warp that issued last cycle is ready again; if its unit is free it issues
            self.greedy = None
            if free[g.port] <= t:
                n_eligible = 1
                for p in ports:
                    if free[p] <= t:
                        seen[p] += 1
                        n_eligible += len(by_port[p])
                self.eligible_sum += n_eligible
                issue(g, t)
                self._after_issue(t)
                return
            p = g.port
            g.snap = seen[p]
            g.queued = True
            lst = by_port[p]
            if not lst:
                ports.append(p)
            insort(lst, g.entry)
        if not ports:
            self.next_time = waiting[0][0]
            return
        if self.fast_greedy:
            # gto issuing one instruction a cycle (the common case, written out): the warp issued last if
            # it is ready and its unit free, else the oldest ready warp whose unit is free
            if len(ports) == 1:
                p = ports[0]
                f = free[p]
                if f > t:
                    first = waiting[0][0]
                    self.next_time = first if first < f else f
                    return
                seen[p] += 1
                lst = by_port[p]
                self.eligible_sum += len(lst)
                w = self.scheduler.last
                if w is None or not w.queued:
                    w = self.scheduler.last = lst[0][1]
                if len(lst) == 1:
                    lst.pop()
                    ports.pop()
                else:
                    lst.remove(w.entry)
            else:
                n_eligible = 0
                nxt = NEVER  # the earliest a busy unit frees
                oldest = None
                for p in ports:
                    f = free[p]
                    if f > t:
                        if f < nxt:
                            nxt = f
                    else:
                        seen[p] += 1
                        lst = by_port[p]
                        n_eligible += len(lst)
                        if oldest is None or lst[0] < oldest:
                            oldest = lst[0]
                if oldest is None:
                    first = waiting[0][0]
                    self.next_time = first if first < nxt else nxt
                    return
                self.eligible_sum += n_eligible
                w = self.scheduler.last
                if w is None or not w.queued or free[w.port] > t:
                    w = self.scheduler.last = oldest[1]
                p = w.port
                lst = by_port[p]
                lst.remove(w.entry)
                if not lst:
                    ports.remove(p)
            w.queued = False
            if t > w.ready:
                ns = seen[p] - w.snap - 1
                states = self.states
                states[NOT_SELECTED] += ns
                states[w.info.throttle_reason] += t - w.ready - ns
            issue(w, t)
            # the next cycle anything can change here (as in _after_issue)
            if self.greedy is not None:
                self.next_time = t + 1
                return
            nxt = waiting[0][0]
            for q in ports:
                f = free[q]
                if f <= t:
                    self.next_time = t + 1
                    return
                if f < nxt:
                    nxt = f
            self.next_time = nxt
            return
        open_ports = []
        n_eligible = 0
        nxt = NEVER  # the earliest a busy unit frees
        for p in ports:
            f = free[p]
            if f > t:
                if f < nxt:
                    nxt = f
            else:
                seen[p] += 1
                n_eligible += len(by_port[p])
                open_ports.append(p)
        if not open_ports:
            first = waiting[0][0]
            self.next_time = first if first < nxt else nxt
            return
        self.eligible_sum += n_eligible
        states = self.states
        for _ in range(self.issue_width):
            w = self.scheduler.choose(by_port, open_ports, self.warps)
            if w is None:
                break
            p = w.port
            lst = by_port[p]
            lst.remove(w.entry)
            w.queued = False
            if not lst:
                ports.remove(p)
            if t > w.ready:
                ns = seen[p] - w.snap - 1
                states[NOT_SELECTED] += ns
                states[w.info.throttle_reason] += t - w.ready - ns
            issue(w, t)
            # (a loop: in 3.11 a comprehension would make `t`, `free` and `by_port` cell variables)
            still_open = []
            for q in open_ports:
                if free[q] <= t and by_port[q]:
                    still_open.append(q)
            if not still_open:
                break
            open_ports = still_open
        self._after_issue(t)

    def _after_issue(self, t: int) -> None:
        """The next cycle anything can change here: the greedy warp issuing again, a waiting warp
        becoming ready, or a busy unit with ready warps freeing. Cycles in between are skipped; no
        counter moves in them."""
        if self.greedy is not None:
            self.next_time = t + 1
            return
        nxt = self.waiting[0][0]
        free = self.free
        for p in self.ports:
            f = free[p]
            if f <= t:
                self.next_time = t + 1
                return
            if f < nxt:
                nxt = f
        self.next_time = nxt

