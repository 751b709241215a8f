"""The chip's event loop inside one kernel. Each SM runs ahead on its own clock (sm.py `run_sm`) and
stops only when it must meet the others: before a global-memory access, until the chip's clock
reaches the access's cycle (so the L2 slices and DRAM channels see requests in time order), and after
a block retires, to let the others run. Each stop is an event (cycle, sequence number): the loop
always resumes the SM with the earliest one, ties in the order they were posted — the order SimPy
would process the same events in, so the engine reproduces the SimPy model it replaced cycle for
cycle. The loop leaves to Python (the feeder) when a warp needs more of its stream or too few blocks
are staged, and resumes where it stopped.

SimPy still runs what is coarse: kernels, copies, streams, events, several GPUs (gpusim/system)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing import l1 as _l1
from gpusim.timing import sm as _sm
from gpusim.timing.jit import JIT, NEVER, Borrowed, njit, prefetch, struct_type
from gpusim.timing.warp import HELD, OFF

# What `run` returns.
DONE, REFILL, LIMIT, ERROR, STALLED = 0, 1, 2, 3, 4


class Events(NamedTuple):
    time: np.ndarray  # per SM: the cycle of its pending event
    seq: np.ndarray  # per SM: its sequence number (ties: posted first, resumed first)
    on: np.ndarray  # per SM (bool): it has one
    counter: np.ndarray  # (1,)
    current: np.ndarray  # (1,) the SM being run when the engine left for the feeder (-1: none)
    # a tournament tree over the SMs' events: node i (1 .. leaves - 1) holds the SM whose event comes
    # first among those below it (-1: none), leaf leaves + s SM s if it has one; node 1 is the next event
    win: np.ndarray
    limit: int
    n: int  # SMs
    leaves: int


struct_type(Events)


def make_events(n: int, limit: int) -> Events:
    leaves = 1
    while leaves < n:
        leaves *= 2
    return Events(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.bool_), np.zeros(1, np.int64),
                  np.full(1, -1, np.int64), np.full(2 * leaves, -1, np.int64), limit, n, leaves)


@njit
def _replay(E, s):
    """SM `s`'s event was posted or taken: replay its matches up the tree (earlier cycle first, ties
    to the event posted first: the order the linear search over all SMs found)."""
    time, seq, win = E.time, E.seq, E.win
    i = E.leaves + s
    win[i] = s if E.on[s] else -1
    i >>= 1
    while i >= 1:
        a = win[2 * i]
        b = win[2 * i + 1]
        if a < 0 or (b >= 0 and (time[b] < time[a] or (time[b] == time[a] and seq[b] < seq[a]))):
            a = b
        win[i] = a
        i >>= 1


@njit
def post(E, s, at):
    E.time[s] = at
    E.seq[s] = E.counter[0]
    E.counter[0] += 1
    E.on[s] = True
    _replay(E, s)


# The machine and the events as the loop passes them to every function it calls: a bare pointer to their
# fields (jit.Borrowed) rather than the counted reference gpu.py hands in, so that a call on the issue path
# (several per warp instruction, each inlined) costs no atomic increment and decrement of their reference
# count (about a tenth of the engine's time on transpose_shared). gpu.py's references keep them alive.
if JIT:
    from numba import types as _types
    from numba.core.extending import intrinsic as _intrinsic
    from numba.experimental import structref as _structref

    @_intrinsic
    def borrow(typingctx, ref):
        """The fields of StructRef `ref` seen through a bare pointer (no reference count)."""
        if not isinstance(ref, _types.StructRef):
            return None

        def codegen(context, builder, sig, args):
            return _structref._Utils(context, builder, sig.args[0]).get_data_pointer(args[0])

        return Borrowed(ref)(ref), codegen
else:
    def borrow(ref):
        """(plain Python: the NamedTuple itself)"""
        return ref


@njit
def start(M, E):
    """Cycle 0: the GigaThread engine fills every SM up to the occupancy limit (see `_start`)."""
    _start(borrow(M), borrow(E))


@njit
def _start(M, E):
    """Cycle 0: the GigaThread engine fills every SM up to the occupancy limit, breadth first, and
    each SM that received a block wakes (in SM order)."""
    q = M.gte
    n = E.n
    for _ in range(q.blocks_per_sm):
        for s in range(n):
            if _sm._gte.staged(q) == 0:
                break
            block, h0, nw = _sm._gte.take(q)
            if not E.on[s]:
                M.sms.stage[s] = _sm.WOKEN
                post(E, s, 0)
            _sm.deliver(M, s, q.dispatch_cycles, block, h0, nw)
            q.outstanding[0] += 1
    if q.outstanding[0] == 0:
        q.all_done[0] = True


_SOON = 64  # cycles


@njit
def _prefetch_sm(M, s):
    """Before SM `s` runs: start loading, all at once, what its warps will read first — their slots'
    fields, its sub-partitions' rows and, for each warp that may issue within _SOON cycles or waits at a
    barrier or for the chip's clock (HELD), its next instruction's stream entry and scoreboard — rather
    than one cache miss after another as each warp issues: the other SMs' turns have evicted them (108
    SMs' state is far larger than a core's L2). Prefetches are hints: no value changes. (Not the entries'
    access plans: a second pass over the warps to read each entry for its plan cost more than the misses
    it saved, 5-10 % of the engine's time on transpose_shared, matmul_tiled and saxpy, 2026-12-07.)"""
    W, st, P, S_ = M.W, M.streams, M.P, M.sms
    nregs = W.sb_ready.shape[1]
    mw = S_.max_warps
    lo = s * mw
    soon = S_.now[0] + _SOON
    for off in range(0, 8 * mw, 64):  # (64-byte lines)
        prefetch(W.snap, lo, off)  # (int64 fields)
        prefetch(W.age, lo, off)
    for off in range(0, 4 * mw, 64):
        prefetch(W.pc, lo, off)  # (int32 fields)
        prefetch(W.port, lo, off)
        prefetch(W.where, lo, off)
        prefetch(W.sp, lo, off)
    g0 = s * S_.nsp
    for g in range(g0, g0 + S_.nsp):
        prefetch(P.queued, g, 0)
        prefetch(P.open, g, 0)
        prefetch(P.seen, g, 0)
        prefetch(P.free, g, 0)
        prefetch(P.busy, g, 0)
        prefetch(P.states, g, 0)
        prefetch(P.warps, g, 0)
        prefetch(P.wake_at, g, 0)
        prefetch(P.wake_w, g, 0)
    for w in range(lo, lo + mw):
        where = W.where[w]
        if where == HELD or (where != OFF and W.ready[w] <= soon):
            h = W.h[w]
            pos = st.pos[h]
            prefetch(st.pc, pos, 0)
            prefetch(st.flag, pos, 0)
            prefetch(st.acc, pos, 0)
            for off in range(0, 8 * nregs, 64):
                prefetch(W.sb_ready, w, off)  # (int64)
            prefetch(W.sb_reason, w, 0)  # (int8: the row's first and last byte)
            prefetch(W.sb_reason, w, nregs - 1)
    _prefetch_deferred(M, s)


@njit
def _prefetch_deferred(M, s):
    """The global accesses SM `s` deferred until the chip's clock reached them: start loading the lines'
    L1 and L2 sets (several accesses' misses then overlap rather than follow one another)."""
    W, st, S_ = M.W, M.streams, M.sms
    for k in range(S_.ndef[s]):
        w = S_.deferred[s, k]
        a = st.acc[st.pos[W.h[w]]]
        for i in range(st.a_lo[a], st.a_hi[a]):
            _l1.prefetch_line(M.l1, M.noc, M.l2, s, st.lines[i])


@njit
def run(M, E):
    """Run until the kernel is done (DONE), the feeder is needed (REFILL), the next event is at or past
    the cycle limit (LIMIT), an SM reports an error (ERROR), or no event is left (STALLED)."""
    return _run(borrow(M), borrow(E))


@njit
def _run(M, E):
    S_ = M.sms
    while True:
        if M.gte.all_done[0]:
            return DONE
        s = E.current[0]
        if s < 0:
            best = E.win[1]
            if best < 0:
                return STALLED
            if E.time[best] >= E.limit:
                S_.now[0] = E.limit
                return LIMIT
            if _sm.needs_feeder(M):
                return REFILL
            s = best
            E.on[s] = False  # (its leaf is replayed once it posts again or stops: nothing is taken meanwhile)
            S_.now[0] = E.time[s]
            E.current[0] = s
            if JIT:  # (plain Python has no caches to warm)
                _prefetch_sm(M, s)
        r = _sm.run_sm(M, s, S_.now[0])
        if r == _sm.R_REFILL:
            return REFILL
        E.current[0] = -1
        if r == _sm.R_YIELD:
            # back when the chip's clock reaches its deferred accesses, or (a yield) at once, after the others
            post(E, s, S_.t[s] if S_.stage[s] == _sm.DEFERRED else S_.now[0])
        else:
            _replay(E, s)
            if r == _sm.R_ERROR:
                return ERROR


__all__ = ["DONE", "REFILL", "LIMIT", "ERROR", "STALLED", "NEVER", "Events", "make_events", "start", "run"]
