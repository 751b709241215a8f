"""Resident warps, one slot each (structure of arrays: slot `w` of SM `s` is `s * max_warps + j`):
where each stands in its instruction stream, when its next instruction may issue, and its
scoreboard — per register, the cycle its pending write lands and why a warp waiting for it waits
(a fixed-latency result: `wait`; an MIO result: `short_scoreboard`; an L1TEX result:
`long_scoreboard`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing.jit import njit, struct_type

# Where a warp is, as its sub-partition sees it.
OFF, WAITING, QUEUED, HELD = 0, 1, 2, 3  # not resident; waits for `wake`; ready, in the ready lists; at a
# barrier or with a global access not yet sent (no event of its own)


class Warps(NamedTuple):
    h: np.ndarray  # its stream's handle (gpusim.timing.stream)
    pc: np.ndarray  # the pc of its next instruction
    port: np.ndarray  # that instruction's issue port
    ready: np.ndarray  # earliest cycle it may issue (NEVER: at a barrier, or a global access in flight)
    wake: np.ndarray  # WAITING: the cycle it joins the ready lists (its unit may still be busy then)
    where: np.ndarray  # OFF / WAITING / QUEUED / HELD
    snap: np.ndarray  # QUEUED: its unit's free-cycle count when it joined
    age: np.ndarray  # launch order on its SM (the schedulers' "oldest")
    sp: np.ndarray  # its sub-partition (chip-wide index)
    blk: np.ndarray  # its block's slot (chip-wide index)
    index: np.ndarray  # warp index within its block
    start: np.ndarray  # cycle it became resident
    drain: np.ndarray  # cycle its last store is acknowledged
    mark: np.ndarray  # the cycle after it arrived at a barrier
    sb_ready: np.ndarray  # (slots, registers): cycle the register's pending write lands
    sb_reason: np.ndarray  # (slots, registers): the warp state of a warp waiting for it
    # cp.async: the cycle the copies of its open (uncommitted) group are in shared memory; its committed
    # groups still in flight (oldest first; past CP_GROUPS, the oldest two merge) and their count
    cp_open: np.ndarray
    cp_groups: np.ndarray  # (slots, CP_GROUPS)
    cp_n: np.ndarray


struct_type(Warps)

CP_GROUPS = 8  # committed copy groups tracked one by one per warp (wait_group takes N <= 7)


def make_warps(slots: int, nregs: int) -> Warps:
    """Cycles are 64-bit; what is small (a pc, a port, a place, a sub-partition, a block slot, a count, a warp
    state) is 32- or 8-bit: an SM's turn reads fewer cache lines (docs/bench.md, 2026-12-06, night)."""
    z = lambda: np.zeros(slots, dtype=np.int64)  # noqa: E731
    i = lambda: np.zeros(slots, dtype=np.int32)  # noqa: E731
    return Warps(z(), i(), i(), z(), z(), i(), z(), z(), i(), i(), i(), z(), z(), z(),
                 np.zeros((slots, nregs), np.int64), np.zeros((slots, nregs), np.int8),
                 z(), np.zeros((slots, CP_GROUPS), np.int64), i())


@njit
def cp_commit(W, w):
    """cp.async.commit_group: the open group of copies becomes the newest committed one."""
    n = W.cp_n[w]
    g = W.cp_groups
    if n == g.shape[1]:  # full: the two oldest merge (a wait for either waits for both)
        if g[w, 1] > g[w, 0]:
            g[w, 0] = g[w, 1]
        for k in range(1, n - 1):
            g[w, k] = g[w, k + 1]
        n -= 1
    g[w, n] = W.cp_open[w]
    W.cp_n[w] = n + 1
    W.cp_open[w] = 0


@njit
def cp_wait(W, w, keep):
    """cp.async.wait_group `keep` (-1: wait_all, which commits first): the cycle the copies of all but
    the `keep` newest committed groups are in shared memory (0: already); those groups are forgotten."""
    if keep < 0:
        cp_commit(W, w)
        keep = 0
    n = W.cp_n[w]
    if n <= keep:
        return 0
    g = W.cp_groups
    at = 0
    for k in range(n - keep):
        if g[w, k] > at:
            at = g[w, k]
    for k in range(keep):
        g[w, k] = g[w, n - keep + k]
    W.cp_n[w] = keep
    return at


@njit
def write_regs(W, code, w, pc, at, reason):
    """Record that the registers `pc` writes land at cycle `at` (a register with a later pending write keeps it: a
    SASS dependency barrier set by several instructions is released by the last; a PTX instruction waits for
    its destinations' pending writes before it issues, so for it the later write is always this one)."""
    writes, ready, why = code.writes, W.sb_ready, W.sb_reason
    for k in range(code.wr_off[pc], code.wr_off[pc + 1]):
        r = writes[k]
        if at >= ready[w, r]:
            ready[w, r] = at
            why[w, r] = reason


@njit
def deps_ready(W, code, w, pc, floor, floor_reason):
    """The cycle `pc` may issue for warp `w` (no earlier than `floor`), and the state it waits in
    until then: its sources' pending writes (RAW) and its destinations' (WAW)."""
    at = floor
    why = floor_reason
    deps, ready = code.deps, W.sb_ready
    for k in range(code.dep_off[pc], code.dep_off[pc + 1]):
        r = deps[k]
        if ready[w, r] > at:
            at = ready[w, r]
            why = W.sb_reason[w, r]
    return at, why
