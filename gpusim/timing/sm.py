"""A streaming multiprocessor: sub-partitions with their warp schedulers and execution units, the
LD/ST path into the L1 data cache and shared memory, and the block barriers. It is one SimPy process
that sleeps until its next issue opportunity (a result landing, a unit freeing, a block arriving)
instead of ticking through idle cycles."""

from __future__ import annotations

from heapq import heappush

import simpy

from gpusim.config import Config
from gpusim.timing.decode import (
    ALU,
    BARRIER,
    BRANCH,
    EXIT,
    GLOBAL_ATOM,
    GLOBAL_LD,
    GLOBAL_ST,
    PORT,
    SHARED,
    SHFL,
    S,
    TimingInfo,
)
from gpusim.timing.l1 import L1Cache
from gpusim.timing.shared_memory import SharedMemory
from gpusim.timing.subpartition import NEVER, SubPartition
from gpusim.timing.warp import INF, Warp

BARRIER_STATE, DRAIN = S["barrier"], S["drain"]
LDST = PORT["ldst"]


class ResidentBlock:
    """A thread block placed on an SM: its live warps and its barrier."""

    __slots__ = ("id", "live", "waiting", "start", "end")

    def __init__(self, block_id: int, start: int):
        self.id = block_id
        self.live = 0
        self.waiting: list[Warp] = []  # warps at bar.sync
        self.start = start
        self.end = start


class SM:
    def __init__(self, env: simpy.Environment, index: int, gpc: int, cfg: Config, info: list[TimingInfo],
                 nregs: int, l1: L1Cache, on_block_done):
        self.env = env
        self.index = index
        self.gpc = gpc
        self.info = info
        self.nregs = nregs
        sched = cfg.scheduler
        nsp = cfg.sm.subpartitions
        self.sps = [SubPartition(i, index * nsp + i, sched.policy, sched.active_warps_two_level, sched.issue_width)
                    for i in range(nsp)]
        self.l1 = l1
        self.smem = SharedMemory(cfg)
        self.branch_latency = cfg.units["branch"].latency_cycles
        self.sync_latency = cfg.units["sync"].latency_cycles
        self.on_block_done = on_block_done  # callback(sm, block_id, end_cycle)
        self.pending: list[tuple[int, object]] = []  # (start cycle, BlockStream) delivered, not started
        self.next_start = INF  # the earliest start cycle in `pending`
        self.blocks: dict[int, ResidentBlock] = {}
        self.warps_resident = 0
        self.wake = INF  # a barrier release the sub-partitions do not know of yet
        self.sleeping_until = INF
        self.finished = False
        self.deferred: list[Warp] = []  # global accesses issued ahead of SimPy's clock
        self.must_yield = False  # a block retired: yield to the other SMs
        self.attention = False  # `pending`, `deferred`, `wake` or `must_yield` needs the loop's notice
        self.warp_age = 0
        self.blocks_run = 0
        self.warps_run = 0
        self.max_warps_resident = 0
        self.warp_cycles = 0  # resident warp-cycles, accounted when warps retire
        self.process = env.process(self.run())

    # -- blocks arriving ---------------------------------------------------------------------------
    def deliver(self, start: int, block) -> None:
        """The dispatcher places a block (its stream and the plans of its memory accesses) here; its
        warps may issue from cycle `start`."""
        self.pending.append((start, block))
        if start < self.next_start:
            self.next_start = start
        self.attention = True
        if self.env.active_process is self.process:
            return  # placed from this SM's own block retirement: its loop sees `pending` next
        if self.sleeping_until > start and self.process.is_alive and self.process.target is not None:
            self.sleeping_until = start
            self.process.interrupt()

    def _launch(self, start: int, handle) -> None:
        blk = ResidentBlock(handle.block, start)
        nsp = len(self.sps)
        for k in range(handle.warps):
            w = Warp(blk, k, self.nregs, start, self.warp_age)
            self.warp_age += 1
            handle.feed.attach(handle.local, k, w)
            if not w.has_next():
                continue
            w.info = w.code[w.pos]
            w.port = w.info.port
            blk.live += 1
            self.sps[(self.warps_run + k) % nsp].add(w, start)
        self.warps_run += handle.warps
        self.blocks[blk.id] = blk
        self.warps_resident += blk.live
        self.max_warps_resident = max(self.max_warps_resident, self.warps_resident)
        self.blocks_run += 1
        if blk.live == 0:
            self._block_done(blk, start)

    # -- the process --------------------------------------------------------------------------------
    def run(self):
        """Step the sub-partitions cycle by cycle, skipping cycles in which nothing can issue. The SM
        runs ahead of SimPy's clock as long as it touches nothing shared: before a global-memory access
        it waits for the clock to catch up (so every SM reaches the L2 and DRAM in time order), and
        after a block retires it yields to the other SMs."""
        env = self.env
        sps = self.sps
        issue = self.issue
        t = 0
        while True:
            if self.attention and self.next_start <= t:  # (blocks in `pending` keep `attention` set)
                keep = []
                for start, block in self.pending:
                    if start <= t:
                        # a block the GigaThread engine placed while this SM ran ahead starts now
                        self._launch(t, block)
                    else:
                        keep.append((start, block))
                self.pending = keep
                self.next_start = min([start for start, _ in keep], default=INF)
            nxt = NEVER
            for sp in sps:
                nt = sp.next_time
                if nt <= t:
                    sp.step(t, issue)
                    nt = sp.next_time
                if nt < nxt:
                    nxt = nt
            if self.attention:
                if self.deferred:
                    while env.now < t:
                        self.sleeping_until = t
                        try:
                            yield env.timeout(t - env.now)
                        except simpy.Interrupt:
                            pass
                    deferred, self.deferred = self.deferred, []
                    for w in deferred:
                        self._global(w, t)
                    for sp in sps:
                        if sp.next_time < nxt:
                            nxt = sp.next_time
                if self.wake != INF:
                    if self.wake < nxt:
                        nxt = self.wake
                    self.wake = INF
                start = self.next_start
                if start < nxt:
                    nxt = start if start > t else t + 1
                if self.must_yield:
                    # a block retired (the engine has placed the next one in `pending`): let the other SMs run
                    self.must_yield = False
                    self.sleeping_until = t + 1
                    yield env.timeout(0)  # (same-cycle L2 requests of the SMs keep their order)
                    start = self.next_start
                    if start < nxt:
                        nxt = start if start > t else t + 1
                self.attention = bool(self.pending)
            if nxt != NEVER:
                t = nxt
                continue
            self.sleeping_until = INF
            if self.finished:
                return
            try:
                yield env.event()  # idle until the dispatcher delivers a block
            except simpy.Interrupt:
                pass
            t = max(int(env.now), t + 1)

    # -- issuing -----------------------------------------------------------------------------------
    def issue(self, w: Warp, t: int) -> None:
        """Issue `w`'s next instruction at cycle `t`, then find when its following one may issue."""
        ti = w.info
        sp = w.sp
        free = sp.free
        free[ti.port] = t + ti.interval
        kind = ti.kind
        # `is` rather than `==` for the two tests that skip long bodies (kinds are small ints, and
        # CPython 3.11 cannot specialise a comparison whose jump needs an EXTENDED_ARG: `==` would run
        # the generic comparison on every issue)
        if kind is ALU:
            # The common case, with `_next` inlined (it is most of the simulator's time; inlining
            # saves about 5% of the interpreter's work): record the result's latency, then wait for
            # the next instruction.
            sb = w.scoreboard
            ready = sb.ready
            r = ti.write1
            if r >= 0:
                ready[r] = t + ti.latency
                sb.reason[r] = ti.dep_reason
            elif ti.writes:
                sb.write(ti.writes, t + ti.latency, ti.dep_reason)
            pos = w.pos + 1
            w.pos = pos
            if pos >= w.n:
                if not w.has_next():
                    self._retire(w, t)
                    return
                pos = w.pos  # (pulling more of the stream moves the window)
            ti = w.code[pos]
            w.info = ti
            w.port = ti.port
            at = t1 = t + 1  # (cycle numbers above 256 are new int objects: add once)
            for r in ti.deps:
                if ready[r] > at:
                    at = ready[r]
                    why = r
            if at > t1:
                sp.states[sb.reason[why]] += at - t1
        elif kind is BRANCH or kind is EXIT:
            # `_next` inlined as for ALU: the next instruction waits at least until the branch resolves
            pos = w.pos + 1
            w.pos = pos
            if pos >= w.n:
                if not w.has_next():
                    self._retire(w, t)
                    return
                pos = w.pos
            at, why = t + ti.latency, ti.dep_reason
            ti = w.code[pos]
            w.info = ti
            w.port = ti.port
            sb = w.scoreboard
            ready = sb.ready
            for r in ti.deps:
                if ready[r] > at:
                    at, why = ready[r], sb.reason[r]
            t1 = t + 1
            if at > t1:
                sp.states[why] += at - t1
        else:
            self._issue_other(w, t)
            return
        # the ALU and branch cases: the next instruction is ready at `at`
        w.ready = at
        if at == t1 and sp.fast_greedy:
            f = free[ti.port]
            if f <= at:
                sp.greedy = w
            else:  # its unit is busy: it waits for it in the heap (see _next)
                heappush(sp.waiting, (f, w.age, w))
        else:
            heappush(sp.waiting, (at, w.age, w))

    def _issue_other(self, w: Warp, t: int) -> None:
        """Issue a global or shared-memory access, a shuffle or a barrier (`issue` has taken its unit)."""
        ti = w.info
        sp = w.sp
        kind = ti.kind
        if kind <= GLOBAL_ATOM:  # (GLOBAL_LD, GLOBAL_ST or GLOBAL_ATOM)
            if t > self.env.now:
                w.ready = INF
                self.deferred.append(w)  # reaches the L2 once SimPy's clock is at t
                self.attention = True
            else:
                self._global(w, t)
            return
        elif kind == SHARED:
            wave, ideal = w.mem.pop(w.base + w.pos)
            ready = self.smem.access(t, wave, ideal)
            if ti.writes:
                w.scoreboard.write(ti.writes, ready, ti.dep_reason)
            busy_until = self.smem.free_at
            if busy_until > sp.free[LDST]:
                sp.free[LDST] = busy_until
        elif kind == SHFL:
            ready = self.smem.access(t, 1, 1)
            w.scoreboard.write(ti.writes, ready, ti.dep_reason)
        elif kind == BARRIER:
            w.pos += 1
            w.ready = INF
            w.mark = t + 1
            sp.scheduler.demote(w, sp.warps)  # two_level: its block-mates may be outside the active set
            self._arrive(w, t)
            return
        w.pos += 1
        self._next(w, t, t + 1, 0)

    def _global(self, w: Warp, t: int) -> None:
        """The L1/L2/DRAM part of a global load, store or atomic `w` issued at cycle `t`."""
        ti = w.info
        sp = w.sp
        pipes = sp.pipes
        kind = ti.kind
        if kind == GLOBAL_LD:
            ready, accepted = self.l1.load(t, w.mem.pop(w.base + w.pos))
            w.scoreboard.write(ti.writes, ready, ti.dep_reason)
            sp.scheduler.demote(w, sp.warps)
        elif kind == GLOBAL_ST:
            ack, accepted = self.l1.store(t, w.mem.pop(w.base + w.pos))
            if ack > w.drain:
                w.drain = ack
        else:
            lines, ops = w.mem.pop(w.base + w.pos)
            ready, accepted = self.l1.atomic(t, lines, ops)
            if ti.writes:
                w.scoreboard.write(ti.writes, ready, ti.dep_reason)
                sp.scheduler.demote(w, sp.warps)
            elif ready > w.drain:
                w.drain = ready
        if accepted > pipes.free[LDST]:
            pipes.free[LDST] = accepted
        w.pos += 1
        self._next(w, t, t + 1, 0)

    def _next(self, w: Warp, t: int, floor: int, floor_reason: int, issued: bool = True) -> None:
        """Point `w` at its next instruction and account the cycles it must wait for it."""
        if w.pos >= w.n and not w.has_next():
            self._retire(w, t)
            return
        ti = w.code[w.pos]
        w.info = ti
        w.port = ti.port
        sb = w.scoreboard
        ready = sb.ready
        at, why = floor, floor_reason
        for r in ti.deps:
            if ready[r] > at:
                at, why = ready[r], sb.reason[r]
        sp = w.sp
        t1 = t + 1
        if at > t1:
            sp.states[why] += at - t1
        w.ready = at
        if at == t1 and issued and sp.fast_greedy:
            # gto's greedy warp, ready again next cycle, if its unit is free then. If not, it waits in the
            # heap until the unit frees: a unit's free cycle never moves earlier, and no counter moves for
            # the warp before then (the ready lists count only the cycles a unit is free; its wait is
            # accounted from `ready`).
            f = sp.free[ti.port]
            if f <= at:
                sp.greedy = w
                if at < sp.next_time:
                    sp.next_time = at
                return
            at = f
        if at < sp.next_time:
            sp.next_time = at
        heappush(sp.waiting, (at, w.age, w))

    def _arrive(self, w: Warp, t: int) -> None:
        blk = w.block
        blk.waiting.append(w)
        if len(blk.waiting) < blk.live:
            return
        release = t + self.sync_latency
        for x in blk.waiting:
            x.sp.states[BARRIER_STATE] += release - x.mark
            self._next(x, release - 1, release, BARRIER_STATE, False)
        blk.waiting = []
        if release < self.wake:
            self.wake = release
            self.attention = True

    def _retire(self, w: Warp, t: int) -> None:
        end = max(t + 1, w.drain)
        sp = w.sp
        if end > t + 1:
            sp.states[DRAIN] += end - t - 1
        w.ready = INF
        w.entry = None  # (it refers back to the warp)
        w.feed.detach(w)
        sp.remove(w, end)
        self.warp_cycles += end - w.start
        self.warps_resident -= 1
        blk = w.block
        blk.live -= 1
        if end > blk.end:
            blk.end = end
        if blk.live == 0:
            self._block_done(blk, blk.end)
        elif blk.waiting and len(blk.waiting) == blk.live:
            raise RuntimeError(f"block {blk.id}: warps wait at a barrier no live warp will reach")

    def _block_done(self, blk: ResidentBlock, end: int) -> None:
        del self.blocks[blk.id]
        self.must_yield = True
        self.attention = True
        self.on_block_done(self, blk.id, blk.start, end)
