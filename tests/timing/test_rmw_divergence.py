"""The memory-system and control-flow mechanisms of the kernel-fidelity work, unit by unit, state in and
reply out: the L2's read-modify-write of partly written sectors and of atomics (`l2.rmw_sector_cycles`,
`l2.atomic_op_cycles`), the coalescer's partial-sector masks, the shared-memory replays of a conflicted
access (`shared_memory.replay_cycles`), and the cost of a change of a warp's active threads
(`units.branch.divergence_cycles`)."""

from __future__ import annotations

import numpy as np
import pytest

import gpusim
from gpusim.config import load_config
from gpusim.data import data_dir
from gpusim.timing import dram as _dram
from gpusim.timing import interconnect as _noc
from gpusim.timing import l2 as _l2
from gpusim.timing import shared_memory as _smem
from gpusim.timing.coalescer import Coalescer
from gpusim.timing.decode import EXIT, code_arrays, decode
from gpusim.timing.feeder import _append_steps, _make_streams
from tests.timing.helpers import FLAT_DRAM

RMW, OP = 2.5, 1.5


def _slice(**more):
    """One slice, one partition; the port moves 64 B a cycle (a 32-byte sector in 0.5 cycles)."""
    cfg = load_config("a100", overrides={"l2.slices": 1, "l2.partitions": 1, "l2.size_bytes": 1 << 20,
                                         "l2.rmw_sector_cycles": RMW, "l2.atomic_op_cycles": OP, **FLAT_DRAM,
                                         **more})
    return cfg, _l2.make_l2(cfg), _dram.make_dram(cfg), _noc.make_interconnect(cfg)


def _port_free(l2) -> float:
    """When the slice's data port takes its next request (the FIFO server's last finish)."""
    return float(l2.port.free_at[0])


@pytest.mark.parametrize("mask,partial,busy", [
    (0b1111, 0b0000, 4 * 0.5),          # four whole sectors: their transfer, 32 B / 64 B a cycle each
    (0b0001, 0b0001, RMW),              # one sector written in part: one read-modify-write
    (0b1111, 0b0101, 2 * 0.5 + 2 * RMW),  # two whole, two in part
])
def test_a_partial_store_holds_the_slice_for_its_read_modify_writes(mask, partial, busy):
    cfg, l2, d, noc = _slice()
    t = 1000.0
    ack = _l2.write(l2, noc, d, 0, t, 7, mask, partial)
    assert _port_free(l2) - t == pytest.approx(busy)
    assert ack - t == cfg.l2.hit_latency_cycles  # acknowledged from the slice, as before
    # the next request waits for the port
    ack2 = _l2.write(l2, noc, d, 0, t, 8, 0b0001, 0)
    assert ack2 - t == pytest.approx(busy + cfg.l2.hit_latency_cycles)


def test_without_rmw_cycles_a_partial_store_costs_its_transfer():
    cfg, l2, d, noc = _slice(**{"l2.rmw_sector_cycles": 0.0})
    _l2.write(l2, noc, d, 0, 1000.0, 7, 0b0001, 0b0001)
    assert _port_free(l2) - 1000.0 == pytest.approx(0.5)


@pytest.mark.parametrize("mask,ops,busy", [
    (0b1111, 1, 4 * RMW),      # 32 lanes on 32 addresses of one line: four sectors read-modify-written
    (0b0001, 32, 32 * OP),     # 32 lanes on one address: applied one after another
    (0b0001, 1, RMW),          # one lane
])
def test_an_atomic_holds_the_slice_for_the_longer_of_its_sectors_and_its_serial_lanes(mask, ops, busy):
    cfg, l2, d, noc = _slice()
    t = 1000.0
    _l2.atomic(l2, noc, d, 0, t, 9, mask, 0)  # the line's sectors fetched once, before the timed one
    t = 2000.0
    back = _l2.atomic(l2, noc, d, 0, t, 9, mask, ops)
    assert _port_free(l2) - t == pytest.approx(busy)
    assert back - t == pytest.approx(busy + cfg.l2.hit_latency_cycles)


# -- the coalescer's partial sectors ------------------------------------------------------------


def _partial(rows, width):
    c = Coalescer(128, 32)
    rows = np.asarray(rows, dtype=np.int64)
    lines, masks, bounds = c.line_arrays(rows)
    out = np.ones(lines.size, np.int64)
    sel = np.arange(rows.shape[0])
    c.partial_masks(rows, sel, np.full(sel.size, width), lines, bounds[:-1], bounds[1:], out)
    return lines.tolist(), masks.tolist(), out.tolist()


def test_coalesced_four_byte_stores_write_whole_sectors():
    lines, masks, partial = _partial([np.arange(32) * 4 + 4096], 4)
    assert lines == [32] and masks == [0b1111] and partial == [0]


def test_a_transposed_store_writes_every_sector_in_part():
    lines, masks, partial = _partial([np.arange(32) * 4096], 4)  # a 1024-float row apart, as transpose writes
    assert lines == [32 * k for k in range(32)]
    assert masks == [1] * 32 and partial == [1] * 32


def test_half_a_warp_leaves_its_sectors_partial_and_vectors_fill_them():
    rows = np.full(32, -1)
    rows[:16] = np.arange(16) * 4          # lanes 0-15 write 64 bytes: sectors 0 and 1 whole
    rows[16] = 100                          # one lane alone in sector 3
    lines, masks, partial = _partial([rows], 4)
    assert masks == [0b1011] and partial == [0b1000]
    v4 = np.full(32, -1)
    v4[:2] = [0, 16]                         # two 16-byte lanes fill sector 0
    assert _partial([v4], 16)[2] == [0]
    same = np.zeros(32, np.int64)            # 32 lanes on one word: 4 bytes of the sector
    assert _partial([same], 4)[2] == [1]


def test_stores_carry_their_partial_masks_through_the_address_stage():
    """A transposed store's sectors all reach the L2 as partial writes: simulated, the naive transpose
    costs the slices a read-modify-write per element, the coalesced copy does not."""
    small = {"chip.sm_count": 8, "l2.slices": 2, "l2.partitions": 1}  # two slices: the stores queue there
    naive = gpusim.simulate("transpose_naive", load_config("h200", overrides=small), rows=256, cols=256)
    free = gpusim.simulate("transpose_naive", load_config("h200", overrides={**small, "l2.rmw_sector_cycles": 0.0}),
                           rows=256, cols=256)
    # 65,536 partial stores over 2 slices at 2.27 cycles each bound the kernel from below
    assert naive.cycles > 65536 * 2.27 / 2 > 2 * free.cycles, (naive.cycles, free.cycles)


# -- shared-memory replays ----------------------------------------------------------------------


@pytest.mark.parametrize("replay", [1, 2, 3])
def test_a_conflicted_access_replays_its_wavefronts_apart_but_the_pipe_takes_one_a_cycle(replay):
    cfg = load_config("h200", overrides={"shared_memory.replay_cycles": replay})
    m = _smem.make_shared_memory(cfg, 1)
    lat = cfg.shared_memory.latency_cycles
    assert _smem.access(m, 0, 100, 8, 1) == 100 + lat + replay * 7  # a lone warp's 8-way conflict
    assert int(m.free_at[0]) == 108                                   # the pipe: one wavefront a cycle
    assert _smem.access(m, 0, 100, 1, 1) == 108 + lat                 # the next warp's access after them


# -- divergence ------------------------------------------------------------------------------------


def _flags(G, pcs, masks, kinds, last, started, gone):
    """A chunk in issue order appended to fresh windows (handles 0..W-1): each entry's flag, in issue order,
    and each warp's window."""
    W = last.size
    st = _make_streams(W, 64, 1, 1)
    G = np.asarray(G, np.int64)
    z = np.zeros(0, np.int64)
    region = np.zeros(W, np.int64), np.zeros(W, np.int64)  # (every window's region empty: each moves)
    _append_steps(st, *region, 0, G, np.asarray(pcs, np.int32), np.asarray(masks, np.uint64), kinds,
                  last, started, gone, np.bincount(G, minlength=W), 0, z, z, z, z, z, z, 0, 0)
    seen = [0] * W
    where = []
    for w in G.tolist():  # (entry i is its warp's seen[w]-th of the chunk)
        where.append(int(st.pos[w]) + seen[w])
        seen[w] += 1
    return st.flag[where].tolist(), [st.pc[st.pos[w]:st.end[w]].tolist() for w in range(W)]


def test_mask_changes_mark_splits_switches_and_rejoins_but_not_exits():
    # one program: pc 0 alu, 1 bra, 2 alu, 3 exit
    kinds = np.array([0, 0, 0, EXIT], np.int64)
    full, low, high = 0xFFFFFFFF, 0x0000FFFF, 0xFFFF0000
    pcs = [0, 1, 2, 2, 0, 3, 0]
    masks = [full, full, low, high, full, full, low]  # split, switch, rejoin, exit, after
    last, started, gone = np.zeros(1, np.uint64), np.zeros(1, np.bool_), np.zeros(1, np.bool_)
    flags, windows = _flags([0] * 7, pcs, masks, kinds, last, started, gone)
    assert flags == [False, False, True, True, True, False, False] and windows == [pcs]
    # the next chunk compares with the warp's last instruction (an alu with mask `low`)
    more, _ = _flags([0, 0], [0, 0], [low, full], kinds, last, started, gone)
    assert more == [False, True]
    # two warps interleaved in issue order: each compared with its own previous instruction, and each
    # warp's entries kept in its stream's order
    z = lambda: (np.zeros(2, np.uint64), np.zeros(2, np.bool_), np.zeros(2, np.bool_))  # noqa: E731
    flags, windows = _flags([0, 1, 0, 1, 1], [0, 0, 2, 2, 3], [full, low, low, low, high], kinds, *z())
    assert flags == [False, False, True, False, True] and windows == [[0, 2], [0, 2, 3]]


def test_each_change_of_active_threads_costs_divergence_cycles():
    """diverge_paths, one warp: each path is a split (after the branch, which the warp waits for anyway:
    its latency, 4, and the issue cycle) and a rejoin, so each path costs d + (d - 5) more per iteration;
    a uniform kernel (one path) pays nothing."""
    def per_iter(paths, d):
        cfg = load_config("h200", overrides={"units.branch.divergence_cycles": d})
        c1, c2 = (gpusim.simulate("diverge_paths", cfg, paths=paths, iters=i).cycles for i in (2, 4))
        return (c2 - c1) / 2
    assert load_config("h200").units["branch"].latency_cycles == 4
    for d in (20, 40):
        assert per_iter(8, d) - per_iter(8, 0) == 8 * (d + d - 5)
    assert per_iter(1, 20) == per_iter(1, 0)


def test_divergence_cycles_belong_to_the_branch_unit_only(tmp_path):
    """In a YAML file the loader names the rule; as an override the resolver refuses the field and points
    to the branch unit's."""
    text = (data_dir("configs") / "h200.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    line = "  fp32:   {latency_cycles: 4,  lanes_per_subpartition: 32}"
    assert line in text
    bad.write_text(text.replace(line, line[:-1] + ", divergence_cycles: 5}"))
    with pytest.raises(gpusim.ConfigError, match="only the branch unit has divergence_cycles"):
        load_config(str(bad))
    with pytest.raises(gpusim.ConfigError, match="units.fp32.divergence_cycles: not a config field; did you mean "
                                                 "units.branch.divergence_cycles"):
        load_config("h200", overrides={"units.fp32.divergence_cycles": 5})


def test_decode_unchanged_by_the_new_fields():
    cfg = load_config("h200")
    prog = gpusim.load_workload("saxpy").program
    assert code_arrays(decode(prog, cfg)).kind.size == len(prog)


# -- shared-memory atomics ------------------------------------------------------------------------


def test_a_shared_atomic_holds_the_pipe_for_its_passes():
    cfg = load_config("h200", overrides={"shared_memory.atomic_replay_cycles": 12, "shared_memory.replay_cycles": 2})
    m = _smem.make_shared_memory(cfg, 1)
    lat = cfg.shared_memory.latency_cycles
    # three passes (distinct addresses in one bank): the pipe 1 + 2 x 12 cycles, the result as long after
    assert _smem.access(m, 0, 100, 3, 1, True) == 100 + lat + 2 * 12
    assert int(m.free_at[0]) == 100 + 1 + 2 * 12
    # a one-pass atomic (conflict-free, or all lanes on one address) costs what a load does
    assert _smem.access(m, 0, 200, 1, 1, True) == 200 + lat and int(m.free_at[0]) == 201


def test_lanes_on_one_shared_address_are_one_pass_of_an_atomic():
    """The address stage plans a shared atomic's passes as its bank wavefronts: 32 lanes on one word are one
    pass (ATOMS.POPC.INC), 32 distinct words in one bank 32, four words in four banks one."""
    from gpusim.timing.decode import decode
    from gpusim.timing.ldst import AddressStage
    from gpusim.timing.shared_memory import BankMap

    cfg = load_config("h200")
    prog = gpusim.load_workload("histogram").program
    info = decode(prog, cfg)
    pc = next(i.pc for i in prog.instructions if i.opcode == "red" and i.space == "shared")
    stage = AddressStage(info, Coalescer(128, 32), BankMap(cfg))
    rows = np.array([np.zeros(32), np.arange(32) * 128, np.arange(32) % 4 * 4], dtype=np.int64)
    plans = stage.plan(rows, np.full(3, pc))
    assert plans.lo.tolist() == [1, 32, 1]


# -- the L2 partitions' spill policy --------------------------------------------------------------


def _two_partitions(policy="spill"):
    """Two partitions of one slice each, one set of 2 ways (256 B of lines per slice)."""
    cfg = load_config("h200", overrides={"l2.slices": 2, "l2.partitions": 2, "l2.size_bytes": 512, "l2.ways": 2,
                                         "l2.partition_policy": policy, "interconnect.partition_latency_cycles": 100,
                                         **FLAT_DRAM})
    l2, d, noc = _l2.make_l2(cfg), _dram.make_dram(cfg), _noc.make_interconnect(cfg)
    assert (l2.nsets, l2.slices, l2.per_partition, l2.spill) == (1, 2, 1, policy == "spill")
    return cfg, l2, d, noc


def test_spill_keeps_a_partitions_victims_in_the_other_partition():
    cfg, l2, d, noc = _two_partitions()
    hit, cross = cfg.l2.hit_latency_cycles, 2 * 100
    dram = cfg.dram.latency_cycles
    t = 1000.0
    reply = lambda line: _l2.read(l2, noc, d, 0, t, line, 0b1111) - t  # noqa: E731  (slice 0: partition 0)
    first = reply(10)
    assert first >= dram + cross  # a miss everywhere: asked of the other partition, then DRAM
    t += 10000
    assert reply(10) == hit  # now near
    t += 10000
    reply(11)
    t += 10000
    reply(12)  # the set (2 ways) is full: line 10, the least recent, leaves for partition 1
    t += 10000
    assert _l2._tags.find(l2.tags, _l2._row(l2, 1, 10), 10) >= 0
    assert reply(10) == hit + cross  # found in the other partition: the far latency, and copied near
    # a write, at the line's home (slice 0: this partition), drops the other partition's copy
    t += 10000
    assert _noc.home_slice(noc, 10) == 0
    assert _l2.write(l2, noc, d, 0, t, 10, 0b0001, 0) - t == hit
    assert _l2._tags.find(l2.tags, _l2._row(l2, 1, 10), 10) == -1


@pytest.mark.parametrize("policy", ["home", "spill"])
def test_a_near_victim_is_dropped_at_home_and_kept_far_by_spill(policy):
    """Lines 10, 12, 14 are homed in partition 0 (even lines: slice 0), the reader's own. Reading 10, 12, 14
    in turn evicts 10 from the 2-way set: `home` drops it (its home is this partition: back to DRAM),
    `spill` moves it to partition 1 (back at the far latency)."""
    cfg, l2, d, noc = _two_partitions(policy)
    assert [_noc.home_slice(noc, x) for x in (10, 12, 14)] == [0, 0, 0]
    t = 1000.0
    for line in (10, 12, 14):
        _l2.read(l2, noc, d, 0, t, line, 0b1111)
        t += 10000
    again = _l2.read(l2, noc, d, 0, t, 10, 0b1111) - t
    far = cfg.l2.hit_latency_cycles + 200
    if policy == "home":  # a fourth miss, from DRAM
        assert again >= cfg.dram.latency_cycles and int(l2.misses.sum()) == 4 * 4
    else:  # found in the other partition
        assert again == far and int(l2.misses.sum()) == 3 * 4 and int(l2.far.sum()) == 4


def test_compaction_in_place_keeps_every_live_window_with_its_plans():
    """Windows out of pool order, a dead plan between live ones, a shared and two global plans: after
    _compact_in_place each window holds the same pcs and flags, and each access the same lines or
    wavefronts, packed at the start of the same arrays."""
    from gpusim.timing.decode import GLOBAL_LD, SHARED
    from gpusim.timing.feeder import _compact_in_place

    kinds = np.array([0, GLOBAL_LD, SHARED], np.int64)  # pc 0 alu, 1 global load, 2 shared
    pc = np.array([9, 9, 1, 0, 2, 9, 1, 1, 0, 9], np.int32)  # (9: issued, dead)
    flag = np.array([0, 0, 1, 0, 1, 0, 0, 1, 0, 0], np.bool_)
    acc = np.array([-1, -1, 1, -1, 3, -1, 0, 2, -1, -1], np.int64)
    # plan 0: lines 0:2, plan 1: lines 2:3, plan 2 (dead: its instruction was issued), plan 3 shared (4 waves, ideal 1)
    a_lo, a_hi = np.array([0, 2, 3, 4], np.int64), np.array([2, 3, 4, 1], np.int64)
    acc[7] = -1  # plan 2 is referred to by nothing live
    lines, masks, ops = (np.array([10, 11, 12, 13], np.int64), np.array([1, 2, 4, 8], np.int64),
                         np.array([1, 1, 1, 1], np.int64))
    pos, end = np.array([6, 2, 0], np.int64), np.array([9, 5, 0], np.int64)  # handle 0 lies after handle 1

    def windows():
        out = []
        for h in range(pos.size):
            w = []
            for i in range(pos[h], end[h]):
                a = acc[i]
                plan = None if a < 0 else ((int(a_lo[a]), int(a_hi[a])) if kinds[pc[i]] == SHARED else
                                           [(int(lines[k]), int(masks[k])) for k in range(a_lo[a], a_hi[a])])
                w.append((int(pc[i]), bool(flag[i]), plan))
            out.append(w)
        return out

    before = windows()
    top, atop, ltop = _compact_in_place(pos, end, pc, acc, flag, a_lo, a_hi, lines, masks, ops, kinds, 4)
    assert windows() == before
    assert (top, atop, ltop) == (6, 3, 3)  # 6 live instructions; plans 0, 1, 3 live; lines of 0 and 1
    assert pos.tolist() == [3, 0, 0] and end.tolist() == [6, 3, 0]  # handle 1 (lower in the pool) first


def test_pool_growth_fresh_arrays_only_where_room_runs_out_and_never_smaller():
    """The stream pool's compaction copies to fresh arrays only the kind (instructions, plans, lines) that
    the live data and the next chunk would fill more than half of: twice what it needs, at least half again
    its size; the other kinds keep their arrays (the same objects), and no array ever shrinks. What the fresh
    arrays held before never shows in a window."""
    from types import SimpleNamespace

    from gpusim.timing.feeder import Feeder

    f = Feeder([], None, SimpleNamespace(kind=np.zeros(1, np.int64)))  # (no handle holds anything: all dead)
    st0 = f.st
    sizes = lambda st: (st.pc.size, st.acc.size, st.flag.size, st.a_lo.size, st.a_hi.size, st.lines.size,  # noqa: E731
                        st.masks.size, st.ops.size)
    assert sizes(st0) == (1 << 16,) * 3 + (1 << 12,) * 2 + (1 << 14,) * 3
    f._compact(100_000, 0, 0)  # instructions: 2 * 100,000 needed
    assert sizes(f.st) == (200_000,) * 3 + (1 << 12,) * 2 + (1 << 14,) * 3
    assert f.st.a_lo is st0.a_lo and f.st.lines is st0.lines and f.grown == 1
    # the fresh arrays are not cleared (their pages are touched as the windows reach them): a region's room is
    # cleared when a window takes it, so whatever the arrays held never shows in a window
    f.st.acc[:], f.st.flag[:] = 7, True
    b = f._new_batch(SimpleNamespace(first_block=0, nblocks=2, wpb=1))
    f._append(b, np.array([0, 1, 0, 0], np.int64), np.zeros(4, np.int32), np.array([255, 255, 255, 15], np.uint64),
              None, None, None, np.zeros(2, bool))
    window = lambda w: slice(f.st.pos[w], f.st.end[w])  # noqa: E731
    assert f.st.acc[window(0)].tolist() == [-1, -1, -1] and f.st.acc[window(1)].tolist() == [-1]
    assert f.st.flag[window(0)].tolist() == [False, False, True] and f.st.flag[window(1)].tolist() == [False]
    room = slice(f.st.end[0], f.cap[0])
    assert room.stop > room.start and (f.st.acc[room] == -1).all() and not f.st.flag[room].any()
    st1 = f.st
    f._compact(10, 3_000, 0)  # plans: 6,000 needed, half again 4,096 is 6,144; instructions fit (not shrunk)
    assert sizes(f.st) == (200_000,) * 3 + (6_144,) * 2 + (1 << 14,) * 3
    assert f.st.pc is st1.pc and f.st.lines is st0.lines and f.grown == 2
    st2 = f.st
    f._compact(10, 10, 10)  # everything fits: nothing new
    assert f.st is st2 and f.grown == 2
