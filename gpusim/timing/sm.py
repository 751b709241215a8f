"""A streaming multiprocessor: its sub-partitions with their warp schedulers and execution units, the
LD/ST path into the L1 data cache and shared memory, and its resident blocks with their barriers.

The life of one warp instruction, in the order the code does it:

1. The feeder has put the warp's stream in the pool; when its block was launched (`launch`) the warp
   took a slot, its first instruction's pc and port, and `ready` = the launch cycle.
2. Its sub-partition's `begin_cycle` at `wake` moves it into the ready lists; the scheduler policy
   (`policies/scheduler_*.py`) picks it once its unit is free (`take` accounts the cycles it waited
   as not_selected or its unit's throttle state).
3. `issue`: its unit is busy for `interval` cycles. An ALU instruction records when its result lands
   in the scoreboard; a branch holds the warp for its latency; a shared-memory access or shuffle is
   served by the SM's shared-memory pipe (bank conflicts: wavefronts); a global access goes through
   the L1 (`l1.py`), the crossbar, an L2 slice and DRAM (`global_access`) once the SM's clock has caught
   up with the rest of the chip; a barrier parks the warp until its block's last live warp arrives.
4. `next_instr`: the warp moves to its next instruction, which may issue once its source and
   destination registers' pending writes have landed (and not before `floor`); the cycles until then
   go to the state of the register it waits for, and the warp waits until that cycle.
5. With no instruction left the warp retires (`retire`) once its stores are acknowledged (drain); the
   block's last warp retiring frees the block's resources and the GigaThread engine places the next
   block here (`block_done`).

`run_sm` is the SM's loop: it steps the sub-partitions cycle by cycle, skipping cycles in which
nothing can happen. It runs ahead of the chip's clock as long as it touches nothing shared: before a
global-memory access it yields until the clock catches up (so every SM reaches the L2 and DRAM in
time order), and after a block retires it yields to the other SMs (engine.py)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing import dispatcher as _gte
from gpusim.timing import l1 as _l1
from gpusim.timing import shared_memory as _smem
from gpusim.timing import subpartition as _sp
from gpusim.timing.decode import (
    ALU,
    BARRIER,
    BRANCH,
    CP_COMMIT,
    CP_WAIT,
    EXIT,
    GLOBAL_ATOM,
    GLOBAL_LD,
    GLOBAL_ST,
    PORT,
    SHARED,
    SHFL,
    S,
)
from gpusim.timing.jit import NEVER, njit, njit_inline, struct_type
from gpusim.timing.policies import scheduler
from gpusim.timing.stream import advance, check_hunger
from gpusim.timing.warp import HELD, OFF, cp_commit, cp_wait, deps_ready, write_regs

# (as int64 values, not Python ints: Numba would compile a function once more for each constant it is
# passed, next_instr four times over)
BARRIER_STATE, DRAIN, LONG_SB, BRANCH_RESOLVING = (np.int64(S[k]) for k in ("barrier", "drain", "long_scoreboard",
                                                                           "branch_resolving"))
WAIT_STATE = np.int64(S["wait"])  # a warp held by its last instruction's stall count (SASS; 1 cycle, no wait, for PTX)
LDST = PORT["ldst"]

# Where an SM's loop resumes (`stage`): at the top of a cycle; after waiting for the chip's clock to
# reach its global accesses; after yielding to the other SMs; woken from idle by the first block.
TOP, DEFERRED, YIELDED, WOKEN, FINISHED = 0, 1, 2, 3, 4
_TAIL, _SETTLE, _NEXT = 5, 6, 7  # (inside the loop: the attention tail, its last step, the next cycle)
# What `run_sm` returns to the engine.
R_IDLE, R_YIELD, R_REFILL, R_ERROR = 0, 1, 2, 3
# Errors (`SMs.error[0]`), reported by gpu.py.
E_BARRIER, E_STARVED = 1, 2


class SMs(NamedTuple):
    t: np.ndarray  # the SM's own clock (it runs ahead of the chip's)
    nxt: np.ndarray  # where its loop was going next when it yielded
    stage: np.ndarray
    attention: np.ndarray  # bool: pending blocks, deferred accesses, a barrier wake or a yield need the loop's notice
    must_yield: np.ndarray  # bool: a block retired
    wake: np.ndarray  # a barrier release the sub-partitions do not know of yet (NEVER: none)
    next_start: np.ndarray  # earliest start of its pending blocks (NEVER: none)
    pend_start: np.ndarray  # (sms, blocks): blocks placed here, not yet launched
    pend_id: np.ndarray
    pend_h0: np.ndarray
    pend_nw: np.ndarray
    npend: np.ndarray
    deferred: np.ndarray  # (sms, warps): warps whose global access waits for the chip's clock
    ndef: np.ndarray
    free_slots: np.ndarray  # (sms, warps): free warp slots (a stack)
    nfree: np.ndarray
    blk_id: np.ndarray  # per block slot (sm * blocks + b)
    blk_live: np.ndarray
    blk_start: np.ndarray
    blk_end: np.ndarray
    blk_used: np.ndarray
    blk_wait: np.ndarray  # (block slots, warps per block): warps at bar.sync, in arrival order
    blk_nwait: np.ndarray
    warp_age: np.ndarray
    warps_resident: np.ndarray
    max_warps_resident: np.ndarray
    blocks_run: np.ndarray
    warps_run: np.ndarray
    warp_cycles: np.ndarray  # resident warp-cycles, accounted when warps retire
    now: np.ndarray  # (1,) the chip's clock (the event being handled)
    error: np.ndarray  # (2,) kind, detail (block id)
    nsp: int  # sub-partitions per SM
    blocks: int  # block slots per SM
    max_warps: int  # warp slots per SM
    sync_latency: int
    refill_below: int  # the engine stops for the feeder when fewer blocks are staged
    divergence: int  # cycles a change of a warp's active threads costs (units.branch.divergence_cycles)


struct_type(SMs)


def make_sms(n: int, nsp: int, blocks: int, max_warps: int, wpb: int, sync_latency: int, divergence: int = 0) -> SMs:
    z = lambda *s: np.zeros((n, *s), dtype=np.int64)  # noqa: E731
    nb = n * blocks
    free = np.tile(np.arange(max_warps, dtype=np.int64)[::-1], (n, 1)) + (np.arange(n) * max_warps)[:, None]
    return SMs(z(), z(), np.full(n, FINISHED, np.int64), np.zeros(n, np.bool_), np.zeros(n, np.bool_),
               np.full(n, NEVER, np.int64), np.full(n, NEVER, np.int64), z(blocks), z(blocks), z(blocks),
               z(blocks), z(), z(max_warps), z(), free, np.full(n, max_warps, np.int64),
               np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb, np.int64),
               np.zeros(nb, np.bool_), np.zeros((nb, max(1, wpb)), np.int64), np.zeros(nb, np.int64),
               z(), z(), z(), z(), z(), z(), np.zeros(1, np.int64), np.zeros(2, np.int64),
               nsp, blocks, max_warps, sync_latency, 2 * blocks + 2, divergence)


class Machine(NamedTuple):
    """Every unit's state, as the engine passes it around."""

    code: object
    W: object  # warps
    P: object  # sub-partitions
    sms: SMs
    l1: object
    smem: object
    noc: object
    l2: object
    dram: object
    streams: object
    gte: object  # the GigaThread engine (dispatcher)


struct_type(Machine)


# -- blocks ---------------------------------------------------------------------------------------

@njit
def deliver(M, s, start, block, h0, nw):
    """The GigaThread engine places `block` (its warps' streams from handle h0) on SM `s`; its warps
    may issue from cycle `start`."""
    S_ = M.sms
    k = S_.npend[s]
    S_.pend_start[s, k] = start
    S_.pend_id[s, k] = block
    S_.pend_h0[s, k] = h0
    S_.pend_nw[s, k] = nw
    S_.npend[s] = k + 1
    if start < S_.next_start[s]:
        S_.next_start[s] = start
    S_.attention[s] = True


@njit
def launch(M, s, t, block, h0, nw):
    S_, W, P, st = M.sms, M.W, M.P, M.streams
    b = s * S_.blocks
    while S_.blk_used[b]:
        b += 1
    S_.blk_used[b] = True
    S_.blk_id[b] = block
    S_.blk_live[b] = 0
    S_.blk_start[b] = t
    S_.blk_end[b] = t
    S_.blk_nwait[b] = 0
    nsp = S_.nsp
    for k in range(nw):
        h = h0 + k
        age = S_.warp_age[s]
        S_.warp_age[s] = age + 1
        if st.pos[h] >= st.end[h]:
            if st.done[h]:
                continue  # a warp with no instructions never becomes resident
            S_.error[0] = E_STARVED
            return
        S_.nfree[s] -= 1
        w = S_.free_slots[s, S_.nfree[s]]
        W.h[w] = h
        W.age[w] = age
        W.blk[w] = b
        W.index[w] = k
        W.start[w] = t
        W.drain[w] = t
        W.mark[w] = t
        W.ready[w] = t
        W.sb_ready[w, :] = 0
        W.sb_reason[w, :] = 0
        W.cp_open[w] = 0
        W.cp_n[w] = 0
        pc = st.pc[st.pos[h]]
        W.pc[w] = pc
        W.port[w] = M.code.port[pc]
        check_hunger(st, h)
        S_.blk_live[b] += 1
        g = s * nsp + (S_.warps_run[s] + k) % nsp
        _sp.log(P, g, w, block, _sp.LAUNCH, t, k)  # (a launch's entry: the block in pc, its warp in "to")
        _sp.add(P, W, g, w, t)
    S_.warps_run[s] += nw
    S_.warps_resident[s] += S_.blk_live[b]
    if S_.warps_resident[s] > S_.max_warps_resident[s]:
        S_.max_warps_resident[s] = S_.warps_resident[s]
    S_.blocks_run[s] += 1
    if S_.blk_live[b] == 0:
        block_done(M, s, b, t)


@njit
def block_done(M, s, b, end):
    """Block slot `b`'s last warp has retired (drained by `end`): free it and place the next block here."""
    S_, q = M.sms, M.gte
    S_.blk_used[b] = False
    S_.must_yield[s] = True
    S_.attention[s] = True
    _gte.record(q, S_.blk_id[b], s, S_.blk_start[b], end)
    if _gte.staged(q) > 0:
        block, h0, nw = _gte.take(q)
        deliver(M, s, end + q.dispatch_cycles, block, h0, nw)
        q.outstanding[0] += 1
    elif q.exhausted[0]:
        if q.outstanding[0] == 0:
            q.all_done[0] = True
    else:
        S_.error[0] = E_STARVED


# -- warps ----------------------------------------------------------------------------------------

@njit
def retire(M, w, t):
    S_, W, P = M.sms, M.W, M.P
    g = W.sp[w]
    s = g // S_.nsp
    end = t + 1 if t + 1 > W.drain[w] else W.drain[w]
    if end > t + 1:
        _sp.account(P, g, w, W.pc[w], DRAIN, t + 1, end)  # (charged to its exit)
    W.ready[w] = NEVER
    W.where[w] = OFF
    _sp.remove(P, W, g, w, end)
    S_.warp_cycles[s] += end - W.start[w]
    S_.warps_resident[s] -= 1
    S_.free_slots[s, S_.nfree[s]] = w
    S_.nfree[s] += 1
    b = np.int64(W.blk[w])  # (a 32-bit field; block_done is compiled for the 64-bit slot launch passes)
    S_.blk_live[b] -= 1
    if end > S_.blk_end[b]:
        S_.blk_end[b] = end
    if S_.blk_live[b] == 0:
        block_done(M, s, b, S_.blk_end[b])
    elif S_.blk_nwait[b] and S_.blk_nwait[b] == S_.blk_live[b]:
        S_.error[0] = E_BARRIER
        S_.error[1] = S_.blk_id[b]


@njit
def next_instr(M, w, t, floor, floor_reason):
    """Point `w` at its next instruction and account the cycles it must wait for it (no earlier than
    `floor`, in `floor_reason` unless a register holds it longer); with none left it retires. A wait
    for a register is charged to the instruction that reads it (the next one); the floor's own wait
    (a branch resolving) to the instruction that set it, whose pc the warp has not yet left."""
    W, st, code = M.W, M.streams, M.code
    h = W.h[w]
    prev = W.pc[w]
    pos = st.pos[h]
    if pos >= st.end[h]:
        if st.done[h]:
            retire(M, w, t)
        else:
            M.sms.error[0] = E_STARVED
        return
    pc = st.pc[pos]
    W.pc[w] = pc
    W.port[w] = code.port[pc]
    check_hunger(st, h)
    if st.flag[pos] and t + M.sms.divergence > floor:
        # the warp's active threads change here (a divergent branch, the switch to its other side, the
        # rejoin): the convergence barrier's cost, charged as the branch resolving
        floor = t + M.sms.divergence
        floor_reason = BRANCH_RESOLVING
    at, why = deps_ready(W, code, w, pc, floor, floor_reason)
    if at > t + 1:
        _sp.account(M.P, W.sp[w], w, prev if at == floor else pc, why, t + 1, at)
    W.ready[w] = at
    _sp.wait_until(M.P, W, w, at)


@njit_inline
def issue(M, w, t):
    """Issue `w`'s next instruction at cycle `t` (its sub-partition's scheduler picked it)."""
    W, P, code = M.W, M.P, M.code
    pc = W.pc[w]
    g = W.sp[w]
    _sp.dispatch(P, g, code.port[pc], t + code.interval[pc])
    kind = code.kind[pc]
    if code.yields[pc]:  # (SASS's yield bit)
        scheduler.on_yield(P, g, w)
    if kind == ALU:
        write_regs(W, code, w, pc, t + code.latency[pc], code.dep_reason[pc])
        advance(M.streams, W.h[w])
        next_instr(M, w, t, t + code.stall[pc], WAIT_STATE)
    elif kind == BRANCH or kind == EXIT:
        advance(M.streams, W.h[w])
        next_instr(M, w, t, t + code.latency[pc], code.dep_reason[pc])
    else:
        _issue_other(M, w, t, pc, g, kind)


@njit_inline
def _issue_other(M, w, t, pc, g, kind):
    """A global or shared-memory access, a shuffle or a barrier (`issue` has taken its unit)."""
    W, P, code, st, S_ = M.W, M.P, M.code, M.streams, M.sms
    s = g // S_.nsp
    if kind == GLOBAL_LD or kind == GLOBAL_ST or kind == GLOBAL_ATOM:
        if t > S_.now[0]:
            # reaches the L2 once the chip's clock is at t
            W.ready[w] = NEVER
            W.where[w] = HELD
            S_.deferred[s, S_.ndef[s]] = w
            S_.ndef[s] += 1
            S_.attention[s] = True
        else:
            global_access(M, w, t)
        return
    if kind == SHARED:
        a = st.acc[st.pos[W.h[w]]]
        ready = _smem.access(M.smem, s, t, st.a_lo[a], st.a_hi[a], code.atomic[pc] != 0)
        write_regs(W, code, w, pc, ready, code.dep_reason[pc])
        busy_until = M.smem.free_at[s]
        _sp.occupy(P, g, LDST, busy_until)
    elif kind == SHFL:
        ready = _smem.access(M.smem, s, t, 1, 1)
        write_regs(W, code, w, pc, ready, code.dep_reason[pc])
    elif kind == CP_COMMIT:
        cp_commit(W, w)
    elif kind == CP_WAIT:
        # the warp waits (long scoreboard, charged to the wait) until the older groups' copies have landed
        at = cp_wait(W, w, code.groups[pc])
        advance(st, W.h[w])
        next_instr(M, w, t, at if at > t + 1 else t + 1, LONG_SB)
        return
    elif kind == BARRIER:
        h = W.h[w]
        advance(st, h)
        check_hunger(st, h)
        W.ready[w] = NEVER
        W.where[w] = HELD
        W.mark[w] = t + 1
        scheduler.on_long_latency(P, g, w)  # two_level: its block-mates may be outside the active set
        _arrive(M, w, t)
        return
    advance(st, W.h[w])
    next_instr(M, w, t, t + code.stall[pc], WAIT_STATE)


@njit_inline
def global_access(M, w, t):
    """The L1/L2/DRAM part of a global load, store or atomic `w` issued at cycle `t`."""
    W, P, code, st = M.W, M.P, M.code, M.streams
    pc = W.pc[w]
    g = W.sp[w]
    s = g // M.sms.nsp
    kind = code.kind[pc]
    a = st.acc[st.pos[W.h[w]]]
    lo, hi = st.a_lo[a], st.a_hi[a]
    if kind == GLOBAL_LD:
        ready, accepted = _l1.load(M.l1, M.noc, M.l2, M.dram, s, t, st.lines, st.masks, lo, hi)
        if code.wr_off[pc + 1] > code.wr_off[pc]:
            write_regs(W, code, w, pc, ready, code.dep_reason[pc])
            scheduler.on_long_latency(P, g, w)
        else:  # cp.async: the data goes to shared memory; the warp's open copy group waits for it
            if ready > W.cp_open[w]:
                W.cp_open[w] = ready
            if ready > W.drain[w]:
                W.drain[w] = ready
    elif kind == GLOBAL_ST:
        ack, accepted = _l1.store(M.l1, M.noc, M.l2, M.dram, s, t, st.lines, st.masks, st.ops, lo, hi)
        if ack > W.drain[w]:
            W.drain[w] = ack
    else:
        ready, accepted = _l1.atomic(M.l1, M.noc, M.l2, M.dram, s, t, st.lines, st.masks, st.ops, lo, hi)
        if code.wr_off[pc + 1] > code.wr_off[pc]:
            write_regs(W, code, w, pc, ready, code.dep_reason[pc])
            scheduler.on_long_latency(P, g, w)
        elif ready > W.drain[w]:
            W.drain[w] = ready
    _sp.occupy(P, g, LDST, accepted)
    advance(st, W.h[w])
    next_instr(M, w, t, t + code.stall[pc], WAIT_STATE)


@njit
def _arrive(M, w, t):
    S_, W = M.sms, M.W
    b = W.blk[w]
    n = S_.blk_nwait[b]
    S_.blk_wait[b, n] = w
    n += 1
    S_.blk_nwait[b] = n
    if n < S_.blk_live[b]:
        return
    release = t + S_.sync_latency
    for i in range(n):
        x = S_.blk_wait[b, i]
        _sp.account(M.P, W.sp[x], x, W.pc[x], BARRIER_STATE, W.mark[x], release)  # (charged to its bar.sync)
        next_instr(M, x, release - 1, release, BARRIER_STATE)
    S_.blk_nwait[b] = 0
    s = W.sp[w] // S_.nsp
    if release < S_.wake[s]:
        S_.wake[s] = release
        S_.attention[s] = True


# -- the loop -------------------------------------------------------------------------------------

@njit_inline
def _step(M, g, t):
    """One cycle of sub-partition `g`: issue up to `issue_width` instructions."""
    P = M.P
    if not _sp.begin_cycle(P, M.W, g, t):
        return
    for _ in range(P.issue_width):
        w = scheduler.pick(P, M.W, g, t)
        if w < 0:
            break
        _sp.log_pick(P, M.W, M.code, g, w, t)
        _sp.take(P, M.W, M.code, g, w, t)
        issue(M, w, t)
        if not _sp.still_open(P, g, t):
            break
    _sp.end_cycle(P, g, t)


@njit
def _launch_pending(M, s, t):
    """Launch the blocks placed here whose start has come (a block placed by a retirement during these
    launches is considered too), keep the others."""
    S_ = M.sms
    k = 0
    keep = 0
    nxt = NEVER
    while k < S_.npend[s]:
        start, block, h0, nw = S_.pend_start[s, k], S_.pend_id[s, k], S_.pend_h0[s, k], S_.pend_nw[s, k]
        if start <= t:
            # a block the GigaThread engine placed while this SM ran ahead starts now
            launch(M, s, t, block, h0, nw)
        else:
            S_.pend_start[s, keep] = start
            S_.pend_id[s, keep] = block
            S_.pend_h0[s, keep] = h0
            S_.pend_nw[s, keep] = nw
            keep += 1
            if start < nxt:
                nxt = start
        k += 1
    S_.npend[s] = keep
    S_.next_start[s] = nxt


@njit
def needs_feeder(M):
    """Whether the engine must stop for the feeder: a warp is hungry, or too few blocks are staged."""
    q = M.gte
    return M.streams.nhungry[0] > 0 or (_gte.staged(q) < M.sms.refill_below and not q.exhausted[0])


@njit_inline
def run_sm(M, s, now):
    """Run SM `s` from where it stopped until it must wait for the chip's clock (R_YIELD, with its
    resume cycle in `t`/`nxt`/`stage`), has nothing to do (R_IDLE), or needs the feeder (R_REFILL)."""
    S_, P = M.sms, M.P
    stage = S_.stage[s]
    t = S_.t[s]
    nxt = S_.nxt[s]
    nsp = S_.nsp
    if stage == WOKEN:
        t = now if now > t + 1 else t + 1
        stage = TOP
    while True:
        if stage == TOP:
            if needs_feeder(M):
                S_.t[s] = t
                S_.stage[s] = TOP
                return R_REFILL
            if S_.attention[s] and S_.next_start[s] <= t:
                _launch_pending(M, s, t)
            nxt = NEVER
            next_time = P.next_time
            for i in range(nsp):
                g = s * nsp + i
                if next_time[g] <= t:
                    _step(M, g, t)
                if next_time[g] < nxt:
                    nxt = next_time[g]
            if S_.error[0]:
                return R_ERROR
            if S_.attention[s]:
                if S_.ndef[s]:
                    if now < t:
                        S_.t[s] = t
                        S_.nxt[s] = nxt
                        S_.stage[s] = DEFERRED
                        return R_YIELD
                    stage = DEFERRED
                else:
                    stage = _TAIL  # no deferred accesses
            else:
                stage = _NEXT
        if stage == DEFERRED:
            n = S_.ndef[s]
            S_.ndef[s] = 0
            for k in range(n):
                global_access(M, S_.deferred[s, k], t)
            for i in range(nsp):
                if P.next_time[s * nsp + i] < nxt:
                    nxt = P.next_time[s * nsp + i]
            if S_.error[0]:
                return R_ERROR
            stage = _TAIL
        if stage == _TAIL:
            if S_.wake[s] != NEVER:
                if S_.wake[s] < nxt:
                    nxt = S_.wake[s]
                S_.wake[s] = NEVER
            start = S_.next_start[s]
            if start < nxt:
                nxt = start if start > t else t + 1
            if S_.must_yield[s]:
                # a block retired (the engine has placed the next one in `pending`): let the other SMs run
                S_.must_yield[s] = False
                S_.t[s] = t
                S_.nxt[s] = nxt
                S_.stage[s] = YIELDED
                return R_YIELD
            stage = _SETTLE
        if stage == YIELDED:
            start = S_.next_start[s]
            if start < nxt:
                nxt = start if start > t else t + 1
            stage = _SETTLE
        if stage == _SETTLE:
            S_.attention[s] = S_.npend[s] > 0
        if nxt != NEVER:
            t = nxt
            stage = TOP
            continue
        S_.t[s] = t
        S_.stage[s] = WOKEN
        return R_IDLE
