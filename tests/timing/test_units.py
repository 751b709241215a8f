"""The timing model's units alone, TVM-style: a hand-built state and a request in, the state and the
reply cycle out, each expectation derived by hand in a comment. Policies are tested by name (their
index looked up in the vocabulary), so adding a policy to the vocabulary breaks none of these.

- cache replacement (tags.py + policies/replacement_*.py), and the L2 with two policies;
- warp schedulers (policies/scheduler_*.py) on a hand-made sub-partition;
- (the DRAM controller has its own file, test_dram.py; the L2's partitions test_l2_partitions.py);
- a sub-partition's cycle (begin_cycle / take / end_cycle) and its warp-state accounting."""

from __future__ import annotations

import pytest

import gpusim
from gpusim.config import load_config
from gpusim.config.vocab import PORT, REPLACEMENT_POLICIES, STATE
from gpusim.timing import dram as _dram
from gpusim.timing import interconnect as _noc
from gpusim.timing import l2 as _l2
from gpusim.timing import subpartition as _sp
from gpusim.timing import tags as _tags
from gpusim.timing.decode import code_arrays, decode
from gpusim.timing.jit import NEVER
from gpusim.timing.policies import scheduler
from gpusim.timing.warp import QUEUED, WAITING, make_warps
from tests.timing.helpers import FLAT_DRAM

# -- replacement policies ---------------------------------------------------------------------------

LINES = {name: 100 + i for i, name in enumerate("ABCDEFGH")}
NAMES = {v: k for k, v in LINES.items()}


def _drive_tags(policy: str, sequence: str):
    """Run `sequence` (one letter a line) through a single 4-way set the way the caches do (find; a hit
    touches, a miss allocates). Returns one token per access — 'h' hit, '-' miss into an empty way,
    else the letter of the line the miss evicted — and the letters resident per way afterwards."""
    c = _tags.make_tags(rows=1, ways=4, policy=REPLACEMENT_POLICIES.index(policy))
    out = []
    for ch in sequence:
        line = LINES[ch]
        way = _tags.find(c, 0, line)
        if way >= 0:
            _tags.touch(c, 0, way)
            out.append("h")
        else:
            way, old, dirty = _tags.allocate(c, 0, line)
            assert c.tag[0, way] == line and dirty == 0
            out.append("-" if old == _tags.EMPTY else NAMES[int(old)])
    return " ".join(out), "".join(NAMES[int(x)] for x in c.tag[0]), c


# Ways fill in order: A->way 0, B->1, C->2, D->3. Then:
#
# "ABCDAE"
#   lru:   A's hit makes it the most recent; the least recent is then B.             E evicts B.
#   fifo:  hits change nothing; A was allocated first.                               E evicts A.
#   srrip: fills enter at RRPV 2 -> [2,2,2,2]; A's hit sets 0 -> [0,2,2,2]; E: no way at 3, so all
#          age by one -> [1,3,3,3]; the first way at 3 is way 1.                     E evicts B.
#
# "ABCDAEFGHA" (continuing the above)
#   lru:   recency after E: C D A E -> F evicts C, G evicts D, H evicts A, and A (miss) evicts E.
#          Ways: E->1, F->2, G->3, H->0, A->1                                  resident H A F G.
#   fifo:  allocation order A B C D -> E evicts A (way 0), F B, G C, H D; A (miss) evicts the oldest
#          fill now, E (way 0)                                                 resident A F G H.
#   srrip: after E (way 1): [1,2,3,3]; F takes way 2 (C at 3) -> [1,2,2,3]; G takes way 3 (D) ->
#          [1,2,2,2]; H: none at 3, age -> [2,3,3,3], first at 3 is way 1 (E) -> [2,2,3,3]; A is still
#          in way 0: a hit -> [0,2,3,3]. The reused line survives the scan.  resident A H F G.
REPLACEMENT_CASES = [
    ("lru", "ABCDAE", "- - - - h B", "AECD"),
    ("fifo", "ABCDAE", "- - - - h A", "EBCD"),
    ("srrip", "ABCDAE", "- - - - h B", "AECD"),
    ("lru", "ABCDAEFGHA", "- - - - h B C D A E", "HAFG"),
    ("fifo", "ABCDAEFGHA", "- - - - h A B C D E", "AFGH"),
    ("srrip", "ABCDAEFGHA", "- - - - h B C D E h", "AHFG"),
    # the victim comes back: it misses, and evicts the next victim (lru: recency C D A E; fifo: fill
    # order B C D E; srrip: [1,2,3,3] after E, so way 2)
    ("lru", "ABCDAEB", "- - - - h B C", "AEBD"),
    ("srrip", "ABCDAEB", "- - - - h B C", "AEBD"),
    ("fifo", "ABCDAEA", "- - - - h A B", "EACD"),
    ("fifo", "ABCDAEB", "- - - - h A h", "EBCD"),  # B survives under fifo
]


@pytest.mark.parametrize("policy,sequence,expected,resident", REPLACEMENT_CASES,
                         ids=[f"{p}-{s}" for p, s, _, _ in REPLACEMENT_CASES])
def test_replacement_hits_and_victims(policy, sequence, expected, resident):
    got, ways, _ = _drive_tags(policy, sequence)
    assert got == expected
    assert ways == resident


def test_srrip_rrpvs_after_scan():
    # the derivation above, state out: A hit (0), H filled (2), F and G aged to distant (3)
    _, _, c = _drive_tags("srrip", "ABCDAEFGHA")
    assert c.meta[0].tolist() == [0, 2, 3, 3]


def test_invalidated_way_is_refilled_before_any_victim():
    for policy in ("lru", "fifo", "srrip"):
        c = _tags.make_tags(rows=1, ways=4, policy=REPLACEMENT_POLICIES.index(policy))
        for ch in "ABCD":
            _tags.allocate(c, 0, LINES[ch])
        _tags.invalidate(c, 0, 2)  # C leaves (an atomic dropped it)
        way, old, _ = _tags.allocate(c, 0, LINES["E"])
        assert (way, old) == (2, _tags.EMPTY), policy
        assert _tags.find(c, 0, LINES["C"]) == -1


def _tiny_l2(policy: str):
    # one slice of one 16-way set: 2048 B = 1 set x 16 ways x 128 B lines
    cfg = load_config("a100", overrides={"l2.replacement": policy, "l2.size_bytes": 2048, "l2.slices": 1,
                                         "l2.partitions": 1, **FLAT_DRAM})
    l2, d = _l2.make_l2(cfg), _dram.make_dram(cfg)
    assert (l2.nsets, l2.tags.ways, l2.slices) == (1, 16, 1)
    return cfg, l2, d, _noc.make_interconnect(cfg)


# Lines 0..15 fill the set; line 0 is read again (a hit for all), then line 16 misses and evicts:
# lru the least recent, line 1; fifo the first allocated, line 0; srrip (all at RRPV 2, line 0 at 0
# after its hit; ageing makes line 1 the first at 3) line 1. The last read of line 0 therefore hits
# under lru and srrip and misses under fifo. Whole lines (4 sectors of 32 B) each time:
#   lru/srrip: hit sectors 2 x 4 = 8, miss sectors 17 x 4 = 68; fifo: 4 and 18 x 4 = 72.
# Reads 1000 cycles apart queue nowhere: a hit is back hit_latency (200) after the request, a miss
# DRAM's latency (400, a DRAM without its bank model: tests/timing/helpers.py FLAT_DRAM) after it (the
# slice sends the DRAM read when its port takes the request); a 4-sector miss is one 128-byte burst,
# 96 bytes longer than the 32 bytes dram.latency_cycles includes: 96 / (1555 x 0.97 / 1.41 / 10) =
# 0.8974 cycles more.
L2_SEQUENCE = [*range(16), 0, 16, 0]
MISS_BURST = 96 / (1555 * 0.97 / 1.41 / 10)


@pytest.mark.parametrize("policy,hits,misses,last_reply", [
    ("lru", 8, 68, 200), ("fifo", 4, 72, 400 + MISS_BURST), ("srrip", 8, 68, 200),
])
def test_l2_replacement_policy_changes_hits(policy, hits, misses, last_reply):
    cfg, l2, d, noc = _tiny_l2(policy)
    replies = []
    for k, line in enumerate(L2_SEQUENCE):
        t = 1000.0 * k
        replies.append(_l2.read(l2, noc, d, 0, t, line, 0b1111) - t)
    assert (int(l2.hits[0]), int(l2.misses[0])) == (hits, misses)
    assert replies[:16] == pytest.approx([cfg.dram.latency_cycles + MISS_BURST] * 16)  # cold misses
    assert replies[16] == cfg.l2.hit_latency_cycles  # line 0's first reuse
    assert replies[-1] == pytest.approx(last_reply)
    assert int(d.bytes_read.sum()) == misses * 32


def test_l2_fifo_and_lru_differ_on_reuse():
    hits = {p: _tiny_l2_hits(p) for p in ("lru", "fifo")}
    assert hits["lru"] > hits["fifo"], hits


def _tiny_l2_hits(policy):
    _, l2, d, noc = _tiny_l2(policy)
    for k, line in enumerate(L2_SEQUENCE):
        _l2.read(l2, noc, d, 0, 1000.0 * k, line, 0b1111)
    return int(l2.hits[0])


# -- warp schedulers --------------------------------------------------------------------------------

# Sub-partition 0 holds four warps. Their slots are not in age order, so a policy that confused slot
# and age would pick the wrong one: P.warps (oldest first) = slots [3, 1, 0, 2], ages 0, 1, 2, 3.
ORDER = [3, 1, 0, 2]
AGE = {3: 0, 1: 1, 0: 2, 2: 3}
FP32, LDST = PORT["fp32"], PORT["ldst"]


def _subpartition(policy: str, last: int, waiting=(), port_busy=()):
    """The four warps QUEUED on the (open) FP32 port, except `waiting` (still WAITING) and `port_busy`
    (QUEUED for the LD/ST unit, which is busy: not open). two_level's active set: 2 warps."""
    cfg = load_config("a100", overrides={"scheduler.policy": policy, "scheduler.active_warps_two_level": 2})
    P = _sp.make_subpartitions(cfg, 1, 8)
    W = make_warps(8, 4)
    P.warps[0, :4] = ORDER
    P.nw[0] = 4
    for w in ORDER:
        W.sp[w] = 0
        W.age[w] = AGE[w]
        W.port[w] = LDST if w in port_busy else FP32
        W.where[w] = WAITING if w in waiting else QUEUED
    P.open[0, FP32] = True
    P.open[0, LDST] = False
    P.last[0] = last
    return P, W


# (policy, last pick, waiting, port busy, expected pick, expected P.last after)
SCHEDULER_CASES = [
    # gto: the warp issued last while it stays eligible; else the oldest eligible, which becomes "last"
    ("gto", 0, (), (), 0, 0),  # greedy: slot 0 (age 2), not the oldest (slot 3)
    ("gto", 0, (0,), (), 3, 3),  # slot 0 waits: the oldest
    ("gto", 0, (), (0,), 3, 3),  # slot 0's unit is busy: the oldest
    ("gto", 0, (0, 3), (), 1, 1),  # the oldest eligible (age 1)
    ("gto", -1, (), (), 3, 3),
    ("gto", 0, (0, 1, 2, 3), (), -1, -1),
    # lrr: the first eligible younger than the last pick, in age order, wrapping round to the oldest
    ("lrr", 1, (), (), 0, 0),  # age 1 -> age 2 (slot 0)
    ("lrr", 0, (), (), 2, 2),  # age 2 -> age 3 (slot 2)
    ("lrr", 2, (), (), 3, 3),  # age 3 is the youngest -> wrap to age 0 (slot 3)
    ("lrr", 1, (0,), (), 2, 2),  # age 2 waits -> age 3
    ("lrr", 1, (), (0, 2), 3, 3),  # ages 2 and 3 busy -> wrap to age 0
    ("lrr", 1, (3,), (0, 2), 1, 1),  # only the last pick itself is eligible
    ("lrr", -1, (), (), 3, 3),
    ("lrr", 1, (0, 1, 2, 3), (), -1, -1),
    # two_level, active set = the first 2 of P.warps = slots 3 (age 0) and 1 (age 1); round robin there
    ("two_level", -1, (), (), 3, 3),
    ("two_level", 3, (), (), 1, 1),
    ("two_level", 1, (), (), 3, 3),  # wraps within the set: slot 0 (age 2) is outside it
    ("two_level", 3, (1,), (), 3, 3),
    ("two_level", 3, (3,), (1,), -1, 3),  # active set stalled: nothing, though slots 0 and 2 are eligible
    # oldest_first: the oldest eligible, whatever issued last
    ("oldest_first", 0, (), (), 3, 3),
    ("oldest_first", 3, (3,), (), 1, 1),
    ("oldest_first", 2, (), (3, 1, 0), 2, 2),
    ("oldest_first", 0, (0, 1, 2, 3), (), -1, -1),
]


@pytest.mark.parametrize("policy,last,waiting,port_busy,pick,last_after", SCHEDULER_CASES,
                         ids=[f"{c[0]}-last{c[1]}-wait{''.join(map(str, c[2]))}-busy{''.join(map(str, c[3]))}"
                              for c in SCHEDULER_CASES])
def test_scheduler_pick(policy, last, waiting, port_busy, pick, last_after):
    P, W = _subpartition(policy, last, waiting, port_busy)
    before = P.warps.copy(), W.where.copy()
    assert scheduler.pick(P, W, 0, 17) == pick
    assert P.last[0] == last_after
    # picking is a choice only: the ready lists and the priority order are `take`'s and the SM's
    assert (P.warps == before[0]).all() and (W.where == before[1]).all()


def test_two_level_long_latency_moves_warp_to_end():
    P, W = _subpartition("two_level", 1)
    # slot 3 (in the active set) waits on global memory: it drops to the end; slot 0 moves in
    scheduler.on_long_latency(P, 0, 3)
    assert P.warps[0, :4].tolist() == [1, 0, 2, 3]
    # the active set is now slots 1 (age 1) and 0 (age 2): after slot 1 comes slot 0
    assert scheduler.pick(P, W, 0, 0) == 0 and P.last[0] == 0
    # after slot 0 (the set's youngest): wrap to slot 1, not the oldest warp (slot 3, now outside)
    assert scheduler.pick(P, W, 0, 1) == 1 and P.last[0] == 1
    # the last warp of the list moving to the end changes nothing
    scheduler.on_long_latency(P, 0, 3)
    assert P.warps[0, :4].tolist() == [1, 0, 2, 3]
    scheduler.on_long_latency(P, 0, 1)
    assert P.warps[0, :4].tolist() == [0, 2, 3, 1]


@pytest.mark.parametrize("policy", ["gto", "lrr", "oldest_first"])
def test_single_level_policies_ignore_long_latency(policy):
    P, W = _subpartition(policy, -1)
    scheduler.on_long_latency(P, 0, 3)
    assert P.warps[0, :4].tolist() == ORDER
    assert scheduler.pick(P, W, 0, 0) == 3  # still the oldest first


@pytest.fixture(scope="module")
def a100():
    return load_config("a100")


# -- a sub-partition's cycle -------------------------------------------------------------------------

KERNEL = """.kernel t
.param .u64 p
.reg .f32 %a
.reg .u64 %b
    fma.rn.f32 %a, %a, %a, %a;
    ld.global.f32 %a, [%b];
"""


@pytest.fixture(scope="module")
def code(a100):
    prog = gpusim.assemble(KERNEL, "t.sasm")
    c = code_arrays(decode(prog, a100))
    # what the decoder says of the two instructions (a100: FP32 16 lanes, LD/ST 8 lanes per sub-partition)
    assert c.port[:2].tolist() == [FP32, LDST]
    assert c.interval[:2].tolist() == [2, 4]
    assert c.throttle_reason[:2].tolist() == [STATE["math_pipe_throttle"], STATE["lg_throttle"]]
    return c


def _run(P, W, code, t):
    """Step sub-partition 0 as the SM's loop does (sm._step), from cycle `t` until nothing is left to
    do; `issue` reduced to taking the unit for the instruction's interval. Returns the (warp, cycle)
    pairs issued and the cycles stepped (the others are skipped)."""
    issued, stepped = [], []
    while t < NEVER:
        stepped.append(t)
        if _sp.begin_cycle(P, W, 0, t):
            for _ in range(P.issue_width):
                w = scheduler.pick(P, W, 0, t)
                if w < 0:
                    break
                _sp.take(P, W, code, 0, w, t)
                P.free[0, code.port[W.pc[w]]] = t + code.interval[W.pc[w]]
                issued.append((int(w), int(t)))
                if not _sp.still_open(P, 0, t):
                    break
            _sp.end_cycle(P, 0, t)
        assert P.next_time[0] > t
        t = int(P.next_time[0])
    return issued, stepped


def _warps(a100, pcs_ready):
    P = _sp.make_subpartitions(a100, 1, 4)
    W = make_warps(4, 4)
    for w, (pc, ready) in enumerate(pcs_ready):
        W.pc[w], W.port[w], W.ready[w], W.age[w] = pc, [FP32, LDST][pc], ready, w
        _sp.add(P, W, 0, w, 0)
    return P, W


def _states(P):
    return {name: int(P.states[0, i]) for name, i in STATE.items() if P.states[0, i]}


@pytest.mark.parametrize("pc,state", [(0, "math_pipe_throttle"), (1, "lg_throttle")])
def test_ready_warp_waits_for_its_busy_unit(a100, code, pc, state):
    # a warp ready at 5 whose unit is busy until 8: cycle 5 opens nothing and sets the next cycle to 8
    # (6 and 7 are skipped); it issues at 8, cycles 5, 6, 7 accounted to its throttle state
    P, W = _warps(a100, [(pc, 5)])
    port = code.port[pc]
    P.free[0, port] = 8
    assert P.next_time[0] == 5 and W.where[0] == WAITING
    assert not _sp.begin_cycle(P, W, 0, 5)
    assert (W.where[0], P.queued[0, port], P.next_time[0]) == (QUEUED, 1, 8)
    assert _run(P, W, code, 8) == ([(0, 8)], [8])
    assert _states(P) == {state: 3}
    assert (P.issued[0], P.busy[0, port], P.queued[0, port]) == (1, code.interval[pc], 0)
    assert P.next_time[0] == NEVER
    assert P.eligible_sum[0] == 1  # one eligible warp, in one cycle (8)


def test_ready_warps_split_wait_between_not_selected_and_throttle(a100, code):
    # two FP32 warps ready at 5 on a free unit (interval 2): gto picks the older (0) at 5; warp 1's
    # cycle 5 is not_selected (its unit was free, another warp chosen), cycle 6 math_pipe_throttle
    # (unit busy until 7); it issues at 7
    P, W = _warps(a100, [(0, 5), (0, 5)])
    assert _run(P, W, code, 5) == ([(0, 5), (1, 7)], [5, 7])
    assert _states(P) == {"not_selected": 1, "math_pipe_throttle": 1}
    assert P.seen[0, FP32] == 2 and P.busy[0, FP32] == 4
    assert P.eligible_sum[0] == 2 + 1  # two warps eligible at 5, one at 7


def test_warps_on_different_units_issue_back_to_back(a100, code):
    # an FP32 and an LD/ST warp both ready at 5: issue width 1, so one per cycle; the LD/ST warp
    # (younger) waits cycle 5 as not_selected although its unit was free, and issues at 6
    P, W = _warps(a100, [(0, 5), (1, 5)])
    assert _run(P, W, code, 5) == ([(0, 5), (1, 6)], [5, 6])
    assert _states(P) == {"not_selected": 1}


def test_run_from_the_start_skips_to_the_busy_units_release(a100, code):
    # the same warp driven from cycle 0: nothing until its wake (5), then nothing until its unit (8)
    P, W = _warps(a100, [(1, 5)])
    P.free[0, LDST] = 8
    assert _run(P, W, code, int(P.next_time[0])) == ([(0, 8)], [5, 8])
    assert _states(P) == {"lg_throttle": 3}


def test_sub_partition_wakes_at_each_waiting_warps_cycle(a100, code):
    # FP32 warps ready at 5, 11 and 10 (slot order): after issuing warp 0 at 5 (unit busy until 7) the
    # next cycle is the earliest wake, 10 (warp 2 issues; unit busy until 12); at 11 warp 1 joins but
    # its unit is busy, so the next cycle is 12, when it issues after one math_pipe_throttle cycle
    P, W = _warps(a100, [(0, 5), (0, 11), (0, 10)])
    assert _run(P, W, code, 5) == ([(0, 5), (2, 10), (1, 12)], [5, 10, 11, 12])
    assert _states(P) == {"math_pipe_throttle": 1}


def test_waiting_warps_list_is_latest_first_and_begin_cycle_takes_its_tail(a100, code):
    # warps 0..3 wait until 9, 4, 12, 4 (pushed in that order): the list holds them latest first (ties in
    # either order), its soonest is 4; cycle 4 queues warps 1 and 3 only, leaving 12, 9 and a soonest of 9;
    # a warp pushed to wait until 10 goes between them; cycle 12 queues the other three
    P, W = _warps(a100, [(0, 9), (0, 4), (0, 12), (0, 4)])
    n = int(P.nwake[0])
    assert n == 4 and P.wake_at[0, :n].tolist() == [12, 9, 4, 4]
    assert sorted(P.wake_w[0, 2:4].tolist()) == [1, 3] and P.wake_w[0, :2].tolist() == [2, 0]
    assert P.soonest[0] == 4
    assert _sp.begin_cycle(P, W, 0, 4)
    assert [int(W.where[w]) for w in range(4)] == [WAITING, QUEUED, WAITING, QUEUED]
    assert (P.queued[0, FP32], P.nwake[0], P.soonest[0]) == (2, 2, 9)
    assert P.wake_at[0, :2].tolist() == [12, 9]
    W.where[1] = 0  # (as `take` leaves a warp it picked)
    P.queued[0, FP32] -= 1
    _sp.wait_until(P, W, 1, 10)
    assert P.wake_at[0, :3].tolist() == [12, 10, 9] and P.wake_w[0, :3].tolist() == [2, 1, 0]
    assert _sp.begin_cycle(P, W, 0, 12)
    assert (P.nwake[0], P.soonest[0], P.queued[0, FP32]) == (0, NEVER, 4)
    assert all(W.where[w] == QUEUED for w in range(4))
