"""SM sub-partitions (processing blocks): each has a warp scheduler, its slice of the register file
and its own execution units (`free[g, port]`: the cycle each unit accepts its next instruction; a
32-thread warp on a unit of L lanes occupies it ceil(32 / L) cycles). A cycle of a sub-partition:

1. `begin_cycle`: warps whose wait is over join the ready lists (the waiting warps are kept in a list
   with the earliest of their wake cycles, so a cycle in which no wait ends visits none of them); the
   units that are free and have ready warps are this cycle's open ports.
2. the scheduler policy picks among the eligible warps (ready, unit free); `take` removes the pick
   from the ready lists and accounts its wait; the SM issues it; with `issue_width` > 1, again while
   ports stay open.
3. `end_cycle`: the next cycle anything can change here — a waiting warp becoming ready, or a busy
   unit with ready warps freeing. Cycles in between are skipped; no counter moves in them.

Every resident warp-cycle goes to one Nsight Compute warp state. A ready warp waits for one of two
reasons each cycle: its unit is busy (a throttle state) or its unit is free but another warp was
chosen (not_selected). Which one depends only on the unit, so each unit counts the cycles it was
free while warps were ready for it (`seen`), and a warp's wait is split when it issues, without
visiting every ready warp every cycle."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config.vocab import PORTS, SCHEDULER_POLICIES, STATE, WARP_STATES
from gpusim.timing.jit import NEVER, lowest_bit, njit, struct_type
from gpusim.timing.warp import QUEUED, WAITING

NPORTS = len(PORTS)
NOT_SELECTED, SELECTED = STATE["not_selected"], STATE["selected"]


class SubPartitions(NamedTuple):
    warps: np.ndarray  # (sps, max warps): resident warp slots, oldest first (two_level: priority order)
    nw: np.ndarray
    queued: np.ndarray  # (sps, ports): ready warps per unit
    open: np.ndarray  # (sps, ports) bool: units free this cycle with ready warps (read only for `ports`)
    ports: np.ndarray  # per sub-partition: the set of units with ready warps (bit p: queued[g, p] > 0), so
    #                    that a cycle's work visits those units only
    seen: np.ndarray  # (sps, ports): cycles each unit was free while warps were ready for it
    free: np.ndarray  # (sps, ports): cycle each unit accepts its next instruction
    next_time: np.ndarray  # the next cycle this sub-partition has anything to do
    last: np.ndarray  # the scheduler's last pick (-1: none)
    states: np.ndarray  # (sps, warp states): warp-cycles per state
    issued: np.ndarray
    busy: np.ndarray  # (sps, ports): cycles each unit was occupied
    eligible_sum: np.ndarray  # eligible warps summed over cycles
    active_cycles: np.ndarray  # cycles with at least one resident warp
    busy_since: np.ndarray
    wake_at: np.ndarray  # (sps, max warps): the waiting warps' wake cycles, latest first ...
    wake_w: np.ndarray  # (sps, max warps): ... and which warp each is
    nwake: np.ndarray  # waiting warps
    soonest: np.ndarray  # the earliest of their wake cycles (NEVER: none waits)
    pc_states: np.ndarray  # (pcs, warp states): warp-cycles by the instruction the warp waited on (per_pc)
    policy: int  # index in vocab.SCHEDULER_POLICIES
    issue_width: int
    active_set: int  # two_level's active warps
    per_pc: bool  # charge warp states to instructions too (Nsight's source view); off: pc_states is empty
    log: np.ndarray  # (entries, 6): the issue log of the logged sub-partitions: cycle from, cycle to,
    #                  sub-partition, warp slot, pc, warp state (LAUNCH: a warp became resident)
    nlog: np.ndarray  # (1,): entries written (may pass the log's length: the rest were dropped)
    log_lo: int  # sub-partitions log_lo .. log_hi - 1 are logged (none when equal)
    log_hi: int


struct_type(SubPartitions)

LAUNCH = -1  # a log entry of a warp becoming resident in a slot: (cycle, warp in its block, g, slot, block, LAUNCH)


def make_subpartitions(cfg, n: int, max_warps: int, pcs: int = 0, log_sms: tuple[int, int] = (0, 0),
                       log_entries: int = 0) -> SubPartitions:
    """`n` sub-partitions of `max_warps` warp slots each; with `pcs` > 0 (the kernel's instruction
    count) warp states are also charged to the instruction each warp waited on (`pc_states`). SMs
    `log_sms` (first, end) keep an issue log of up to `log_entries` entries: every warp's states as
    intervals and every pick (`gpusim step --schedule`)."""
    nsp = cfg.sm.subpartitions
    z = lambda *s: np.zeros((n, *s), dtype=np.int64)  # noqa: E731
    s = cfg.scheduler
    return SubPartitions(z(max_warps), z(), z(NPORTS), np.zeros((n, NPORTS), np.bool_), z(), z(NPORTS), z(NPORTS),
                         np.full(n, NEVER, np.int64), np.full(n, -1, np.int64),
                         z(len(WARP_STATES)), z(), z(NPORTS), z(), z(), z(), z(max_warps), z(max_warps), z(),
                         np.full(n, NEVER, np.int64), np.zeros((pcs, len(WARP_STATES)), np.int64),
                         SCHEDULER_POLICIES.index(s.policy), s.issue_width, s.active_warps_two_level, pcs > 0,
                         np.zeros((log_entries, 6), np.int64), np.zeros(1, np.int64),
                         log_sms[0] * nsp, log_sms[1] * nsp if log_entries else log_sms[0] * nsp)


@njit
def log(P, g, w, pc, state, t0, t1):
    """Warp slot `w` of sub-partition `g` spent cycles t0 .. t1 - 1 in `state` at instruction `pc`
    (kept only for the logged sub-partitions, while the log has room)."""
    if P.log_lo <= g < P.log_hi:
        i = P.nlog[0]
        P.nlog[0] = i + 1
        if i < P.log.shape[0]:
            P.log[i, 0] = t0
            P.log[i, 1] = t1
            P.log[i, 2] = g
            P.log[i, 3] = w
            P.log[i, 4] = pc
            P.log[i, 5] = state


@njit
def wait_until(P, W, w, at):
    """Warp `w` waits until cycle `at`, then joins its sub-partition's ready lists."""
    g = W.sp[w]
    W.where[w] = WAITING
    W.wake[w] = at
    _push_wake(P, g, at, w)
    if at < P.next_time[g]:
        P.next_time[g] = at


@njit
def _push_wake(P, g, at, w):
    """Insert `w`, waking at `at`, into the list of waiting warps, kept latest first: the warps whose wait
    is over are then its tail, which `begin_cycle` takes without looking at the others. (Most waits are
    the shortest, an instruction's issue latency: those go at the tail, past nothing.)"""
    keys, ws = P.wake_at, P.wake_w
    i = P.nwake[g]
    P.nwake[g] = i + 1
    while i > 0 and keys[g, i - 1] < at:
        keys[g, i] = keys[g, i - 1]
        ws[g, i] = ws[g, i - 1]
        i -= 1
    keys[g, i] = at
    ws[g, i] = w
    if at < P.soonest[g]:
        P.soonest[g] = at


@njit
def earliest_wake(P, g):
    """The earliest wake cycle of sub-partition `g`'s waiting warps (NEVER: none waits)."""
    return P.soonest[g]


@njit
def add(P, W, g, w, t):
    if P.nw[g] == 0:
        P.busy_since[g] = t
    P.warps[g, P.nw[g]] = w
    P.nw[g] += 1
    W.sp[w] = g
    wait_until(P, W, w, W.ready[w])


@njit
def remove(P, W, g, w, t):
    n = P.nw[g]
    warps = P.warps
    k = 0
    while warps[g, k] != w:
        k += 1
    while k < n - 1:
        warps[g, k] = warps[g, k + 1]
        k += 1
    P.nw[g] = n - 1
    if P.last[g] == w:
        P.last[g] = -1
    if n == 1:
        P.active_cycles[g] += t - P.busy_since[g]


@njit
def begin_cycle(P, W, g, t):
    """Move the warps whose wait is over into the ready lists and open this cycle's ports. Returns
    whether any port is open; if none, `next_time` is set."""
    queued, seen, free, open_ = P.queued, P.seen, P.free, P.open
    lowest = P.soonest[g]
    if lowest <= t:  # (else no waiting warp's wait is over: the ready lists stand)
        where, port, snap, keys, ws = W.where, W.port, W.snap, P.wake_at, P.wake_w
        n = P.nwake[g]
        while n > 0 and keys[g, n - 1] <= t:  # (the list's tail: latest first; the order they join in
            n -= 1                             # changes nothing, `seen` stands meanwhile)
            w = ws[g, n]
            where[w] = QUEUED
            p = port[w]
            snap[w] = seen[g, p]
            queued[g, p] += 1
            P.ports[g] |= 1 << p
        P.nwake[g] = n
        lowest = keys[g, n - 1] if n > 0 else NEVER
        P.soonest[g] = lowest
    n_eligible = 0
    busy_until = NEVER  # the earliest a busy unit with ready warps frees
    any_open = False
    ports = P.ports[g]
    while ports:
        p = lowest_bit(ports)
        ports &= ports - 1
        f = free[g, p]
        if f > t:
            open_[g, p] = False
            if f < busy_until:
                busy_until = f
        else:
            seen[g, p] += 1
            n_eligible += queued[g, p]
            open_[g, p] = True
            any_open = True
    if not any_open:
        P.next_time[g] = lowest if lowest < busy_until else busy_until
        return False
    P.eligible_sum[g] += n_eligible
    return True


@njit
def take(P, W, code, g, w, t):
    """The scheduler picked `w`: it leaves the ready lists, and its wait since it was ready is split
    between not_selected (its unit free, another warp chosen) and its unit's throttle state. With
    per_pc, both and the issue cycle (selected) are charged to the instruction it issues."""
    p = W.port[w]
    pc = W.pc[w]
    P.queued[g, p] -= 1
    if P.queued[g, p] == 0:
        P.ports[g] &= ~(1 << p)
    W.where[w] = 0
    if t > W.ready[w]:
        ns = P.seen[g, p] - W.snap[w] - 1
        throttle = code.throttle_reason[pc]
        P.states[g, NOT_SELECTED] += ns
        P.states[g, throttle] += t - W.ready[w] - ns
        if P.per_pc:
            P.pc_states[pc, NOT_SELECTED] += ns
            P.pc_states[pc, throttle] += t - W.ready[w] - ns
    if P.per_pc:
        P.pc_states[pc, SELECTED] += 1
    P.issued[g] += 1
    P.busy[g, p] += code.interval[pc]


@njit
def log_pick(P, W, code, g, w, t):
    """The log of a pick (logged sub-partitions only): `w` selected at cycle `t`, and each other ready
    warp of `g` not selected (its unit free this cycle, another warp chosen) or in its unit's throttle
    state (its unit busy). The waiting warps' states are logged as their waits are accounted."""
    if not P.log_lo <= g < P.log_hi:
        return
    log(P, g, w, W.pc[w], SELECTED, t, t + 1)
    for k in range(P.nw[g]):
        x = P.warps[g, k]
        if x != w and W.where[x] == QUEUED:
            pc = W.pc[x]
            log(P, g, x, pc, NOT_SELECTED if P.open[g, W.port[x]] else code.throttle_reason[pc], t, t + 1)


@njit
def still_open(P, g, t):
    """After an issue: which ports stay open this cycle (another warp may issue on them)."""
    any_open = False
    open_, free = P.open, P.free
    ports = P.ports[g]
    while ports:
        p = lowest_bit(ports)
        ports &= ports - 1
        if open_[g, p]:
            if free[g, p] <= t:
                any_open = True
            else:
                open_[g, p] = False
    return any_open


@njit
def end_cycle(P, g, t):
    """The next cycle anything can change here: a waiting warp becoming ready, or a busy unit with
    ready warps freeing (t + 1 if a unit with ready warps is still free)."""
    nxt = earliest_wake(P, g)
    free = P.free
    ports = P.ports[g]
    while ports:
        p = lowest_bit(ports)
        ports &= ports - 1
        f = free[g, p]
        if f <= t:
            P.next_time[g] = t + 1
            return
        if f < nxt:
            nxt = f
    P.next_time[g] = nxt


@njit
def account(P, g, w, pc, state, t0, t1):
    """Warp `w` of sub-partition `g` spent cycles t0 .. t1 - 1 in warp state `state`, waiting on
    instruction `pc` (charged to it with per_pc)."""
    cycles = t1 - t0
    log(P, g, w, pc, state, t0, t1)
    P.states[g, state] += cycles
    if P.per_pc:
        P.pc_states[pc, state] += cycles


@njit
def dispatch(P, g, port, until):
    """An instruction issues to unit `port` of sub-partition `g`: the unit takes the next one at `until`."""
    P.free[g, port] = until


@njit
def occupy(P, g, port, until):
    """Unit `port` of sub-partition `g` accepts no instruction before cycle `until`."""
    if until > P.free[g, port]:
        P.free[g, port] = until
