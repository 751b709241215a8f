"""Acceptance 9: the coalescer (per-lane addresses -> 128-byte lines and their 32-byte sectors) and
BankMap.wavefronts_of (bank conflicts) as units."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.timing.coalescer import Coalescer
from gpusim.timing.shared_memory import BankMap
from tests.timing.helpers import config

LANES = np.arange(32, dtype=np.int64)
BASE = 1 << 20  # 128-byte aligned


def _lines(*rows):
    return Coalescer(128, 32).lines(np.array(rows, dtype=np.int64))


def test_fully_coalesced_4_bytes():
    (ls,) = _lines(BASE + 4 * LANES)
    assert ls == [(BASE // 128, 0b1111)]  # 1 line, all 4 sectors


def test_stride_128_bytes_touches_32_lines():
    (ls,) = _lines(BASE + 128 * LANES)
    assert len(ls) == 32
    assert ls == [(BASE // 128 + i, 0b0001) for i in range(32)]  # one sector each, in address order


def test_misaligned_access_spans_two_lines():
    (ls,) = _lines(BASE + 16 + 4 * LANES)  # bytes 16..143 of the line pair
    assert ls == [(BASE // 128, 0b1111), (BASE // 128 + 1, 0b0001)]


def test_8_byte_accesses_two_lines():
    (ls,) = _lines(BASE + 8 * LANES)
    assert ls == [(BASE // 128, 0b1111), (BASE // 128 + 1, 0b1111)]


def test_inactive_lanes_ignored():
    row = BASE + 4 * LANES
    row[16:] = -1  # upper half inactive: bytes 0..63, sectors 0 and 1
    (ls,) = _lines(row)
    assert ls == [(BASE // 128, 0b0011)]
    strided = BASE + 128 * LANES
    strided[::2] = -1
    (ls,) = _lines(strided)
    assert len(ls) == 16 and all(m == 1 for _, m in ls)


def test_all_lanes_inactive_gives_no_lines():
    assert _lines(np.full(32, -1)) == [[]]


def test_same_address_is_one_sector_and_rows_independent():
    got = _lines(np.full(32, BASE + 36), BASE + 4 * LANES, BASE + 128 * LANES)
    assert got[0] == [(BASE // 128, 0b0010)]
    assert got[1] == [(BASE // 128, 0b1111)]
    assert len(got[2]) == 32


def test_unsorted_lanes_give_sorted_lines():
    rng = np.random.default_rng(0)
    row = BASE + 128 * rng.permutation(32)
    (ls,) = _lines(row)
    assert [ln for ln, _ in ls] == sorted(ln for ln, _ in ls)
    assert len(ls) == 32


def test_rows_of_every_shape_against_their_sectors_grouped_by_line():
    """Rows ascending (the usual, one pass), ascending with a lane out of order, descending, with repeats and
    inactive lanes, and random: each row's lines are its distinct sectors grouped by line, in line order."""
    rng = np.random.default_rng(5)
    up = BASE + 4 * LANES
    late = up.copy()
    late[20] = BASE - 64  # one lane below the others, late in the row
    rows = [up, late, up[::-1], BASE + 8 * (LANES // 3), np.where(LANES % 3 == 0, -1, up), np.full(32, -1),
            np.where(LANES < 16, BASE + 4 * LANES, BASE + 4096 + 4 * LANES)]
    rows += [np.where(rng.random(32) < 0.2, -1, BASE + rng.integers(0, 2048, 32)) for _ in range(200)]
    rows += [np.sort(BASE + rng.integers(0, 1024, 32)) for _ in range(200)]
    for row, got in zip(rows, _lines(*rows), strict=True):
        sectors = sorted({int(a) // 32 for a in row if a >= 0})
        expect = {}
        for sec in sectors:
            expect[sec // 4] = expect.get(sec // 4, 0) | 1 << (sec % 4)
        assert got == sorted(expect.items())


def test_empty_batch():
    assert Coalescer(128, 32).lines(np.zeros((0, 32), dtype=np.int64)) == []


def test_lanes_per_address():
    assert Coalescer.lanes_per_address(np.full(32, BASE)) == 32
    assert Coalescer.lanes_per_address(BASE + 4 * LANES) == 1
    assert Coalescer.lanes_per_address(BASE + 4 * (LANES % 4)) == 8
    assert Coalescer.lanes_per_address(np.full(32, -1)) == 0


# --- shared memory: 32 banks x 4 bytes ----------------------------------------------------------------
@pytest.fixture(scope="module")
def smem():
    sm = BankMap(config("a100"))
    assert (sm.banks, sm.bank_width) == (32, 4)
    return sm


def _wave(smem, row, width=4):
    wave, ideal = smem.wavefronts_of(np.array([row], dtype=np.int64), width)
    return wave[0], ideal[0]


@pytest.mark.parametrize("stride,expect", [(1, 1), (2, 2), (3, 1), (4, 4), (8, 8), (16, 16), (32, 32), (33, 1)])
def test_shared_stride_conflicts(smem, stride, expect):
    # word i*stride lands in bank (i*stride) mod 32: a gcd(stride, 32)-way conflict
    wave, ideal = _wave(smem, 4 * stride * LANES)
    assert wave == expect
    assert ideal == 1  # 128 bytes: one wavefront's worth


def test_shared_broadcast(smem):
    assert _wave(smem, np.full(32, 64)) == (1, 1)
    # two distinct words in one bank, 16 lanes each: 2 wavefronts
    row = np.where(LANES < 16, 0, 128)
    assert _wave(smem, row)[0] == 2


def test_shared_8_byte_accesses(smem):
    # contiguous 8-byte lanes: 256 bytes, 2 words in every bank: 2 wavefronts, also the ideal
    assert _wave(smem, 8 * LANES, 8) == (2, 2)
    # 8-byte lanes at a 16-byte stride: words 4i, 4i+1 -> banks 0,1,4,5,...: 4 distinct words per bank
    assert _wave(smem, 16 * LANES, 8) == (4, 2)
    # all lanes read the same 8 bytes: a broadcast of two words, one wavefront. The ideal is defined
    # (docstring) as the wavefronts of as many bytes conflict-free: 32 x 8 = 256 bytes -> 2, so here
    # the actual count is below the "ideal" one.
    assert _wave(smem, np.full(32, 40), 8) == (1, 2)


def test_shared_16_byte_accesses(smem):
    assert _wave(smem, 16 * LANES, 16) == (4, 4)  # 512 bytes, 4 words per bank


def test_shared_16_byte_accesses_are_served_a_half_warp_at_a_time(smem):
    # shared_memory.wide_access_lanes 16 (a100, h200): the three patterns Nsight Compute measured on sm_86
    # and sm_90 (docs/config.md cites them)
    assert smem.wide_lanes == 16
    # contiguous: each half-warp's 256 bytes put 2 words in every bank -> 2 + 2
    assert _wave(smem, 16 * LANES, 16)[0] == 4
    # lanes 0-15 on one 16-byte address, 16-31 on another: one wavefront per half (a whole-warp broadcast
    # model says 1)
    assert _wave(smem, np.where(LANES < 16, 0, 32), 16)[0] == 2
    # 16 addresses 32 bytes apart, lane i and lane i + 16 on the same one: within a half, addresses 0, 128,
    # 256, 384 share banks 0-3 -> 4 a half, 8 in all (a whole-warp model, sharing the words across the
    # halves, says 4)
    assert _wave(smem, 32 * (LANES % 16), 16)[0] == 8
    # the whole warp on one address: one wavefront per half
    assert _wave(smem, np.full(32, 64), 16)[0] == 2
    # a half with no active lane costs nothing
    row = np.where(LANES < 16, 0, -1)
    assert _wave(smem, row, 16)[0] == 1
    # narrower accesses are served by the whole warp: a broadcast is one wavefront
    assert _wave(smem, np.where(LANES < 16, 0, 32), 8)[0] == 1
    # a config without the field serves 128-bit accesses by the whole warp
    assert BankMap(config("gtx980")).wavefronts_of(np.array([np.where(LANES < 16, 0, 32)]), 16)[0] == [1]


def test_shared_inactive_lanes(smem):
    row = 4 * 32 * LANES  # stride 32: 32-way
    row[8:] = -1  # only 8 lanes active: 8-way
    assert _wave(smem, row) == (8, 1)
    assert _wave(smem, np.full(32, -1))[0] == 1  # no active lane still costs a wavefront slot


def test_shared_batch_rows_independent(smem):
    rows = np.stack([4 * LANES, 4 * 32 * LANES, np.full(32, 8), 4 * 2 * LANES])
    wave, ideal = smem.wavefronts_of(rows, 4)
    assert wave == [1, 32, 1, 2]
    assert ideal == [1, 1, 1, 1]


def test_shared_repeated_rows_take_the_results_of_the_rows_they_equal(smem):
    """A batch where rows repeat (as a block's warps repeat every other block's addresses), among them rows
    that differ in one lane only and more distinct rows than the table keeps: each row's wavefronts are those
    it has alone, and those of the hand-derived patterns."""
    rng = np.random.default_rng(3)
    patterns = [4 * LANES, 4 * 32 * LANES, np.full(32, 8), 4 * 2 * LANES]
    patterns += [p.copy() for p in patterns]
    for k, p in enumerate(patterns[4:]):
        p[5] = -1 if k % 2 else p[5] + 4 * 32 * (k + 1)  # one lane differs
    patterns += [rng.integers(0, 1 << 10, 32) * 4 for _ in range(600)]  # past the table's 256 slots
    order = rng.integers(0, len(patterns), 5000)
    rows = np.stack([patterns[i] for i in order])
    for width in (4, 8, 16):
        wave, ideal = smem.wavefront_arrays(rows, width)
        alone = [smem.wavefronts_of(p[None, :], width) for p in patterns]
        assert wave.tolist() == [alone[i][0][0] for i in order]
        assert ideal.tolist() == [alone[i][1][0] for i in order]
    wave, _ = smem.wavefront_arrays(rows, 4)
    first = {int(i): w for i, w in zip(order, wave.tolist(), strict=True)}
    assert [first.get(i) for i in range(4)] == [1, 32, 1, 2]
    assert first.get(5) in (None, 31)  # lane 5 inactive: a 31-way conflict


def test_shared_access_serialises_wavefronts(smem):
    # a fresh unit: two back-to-back accesses of 32 and 1 wavefronts at cycle 0
    from gpusim.timing.shared_memory import access, make_shared_memory

    m = make_shared_memory(config("a100"), sms=2)
    lat = m.latency
    assert access(m, 1, 0, 32, 1) == lat + 31
    assert access(m, 1, 0, 1, 1) == 32 + lat  # waits for the 32 wavefronts ahead of it
    assert (m.requests[1], m.wavefronts[1], m.ideal_wavefronts[1]) == (2, 33, 2)
    assert m.requests[0] == 0  # the other SM's pipe is its own


def _bank_model(row, width, banks=32, bank_width=4, wide=16):
    """Independent reading of the bank rule: lanes served `wide` at a time for 16-byte accesses (else all
    together), each group's wavefronts the most distinct words any one bank holds among its active lanes'
    words; at least one wavefront."""
    group = wide if width >= 16 else len(row)
    words = max(1, width // bank_width)
    total = 0
    for g0 in range(0, len(row), group):
        per_bank: dict[int, set[int]] = {}
        for a in row[g0:g0 + group]:
            if a >= 0:
                for k in range(words):
                    w = int(a) // bank_width + k
                    per_bank.setdefault(w % banks, set()).add(w)
        total += max((len(s) for s in per_bank.values()), default=0)
    return max(total, 1)


def test_shared_wavefronts_of_data_dependent_rows_match_the_bank_rule(smem):
    """Rows as data decides them (a histogram's bins: random words, repeats, inactive lanes), rows whose
    words lie 2,048 words apart (one slot of the table that finds repeated words: the exact way is taken
    for them), strided and broadcast rows: each row's wavefronts are the bank rule's, for every width."""
    rng = np.random.default_rng(11)
    rows = [rng.integers(0, 256, 32) * 4 for _ in range(300)]  # random bins of a 256-word table
    rows += [np.where(rng.random(32) < 0.3, -1, rng.integers(0, 64, 32) * 4) for _ in range(200)]
    rows += [(rng.integers(0, 4, 32) * 2048 + rng.integers(0, 8, 32) * 32) * 4 for _ in range(200)]  # clashes
    rows += [4 * s * LANES for s in (1, 2, 3, 8, 16, 17, 32, 33)] + [np.full(32, 12), np.full(32, -1)]
    rows = np.stack(rows).astype(np.int64)
    for width in (4, 8, 16):
        wave, _ = smem.wavefront_arrays(rows, width)
        assert wave.tolist() == [_bank_model(r.tolist(), width) for r in rows]


def test_a_mixed_chunk_is_planned_row_by_row_as_each_access_alone():
    """One chunk of loads, stores, global atomics, 4-, 8- and 16-byte shared accesses and a parameter load,
    in random order: each global row's lines are the coalescer's for it alone, with 1 per line for a load,
    the lanes on the line's busiest address for an atomic (counted here from the addresses), the sectors
    written only in part for a store (here: fewer distinct 4-byte words than a sector holds); each shared
    row's wavefronts are the bank rule's."""
    from gpusim.timing.decode import ALU, GLOBAL_ATOM, GLOBAL_LD, GLOBAL_ST, SHARED, TimingInfo
    from gpusim.timing.ldst import AddressStage

    kinds = [(GLOBAL_LD, 4), (GLOBAL_ST, 4), (GLOBAL_ATOM, 4), (SHARED, 4), (SHARED, 8), (SHARED, 16), (ALU, 4)]
    info = [TimingInfo(k, 0, 1, 1, (), (), 0, 0, w, True, k == GLOBAL_ATOM, (), pc)
            for pc, (k, w) in enumerate(kinds)]
    smem = BankMap(config("a100"))
    stage = AddressStage(info, Coalescer(128, 32), smem)
    rng = np.random.default_rng(5)
    pcs = rng.integers(0, len(kinds), 400)
    rows = []
    for _ in pcs:  # coalesced, strided, a few repeated words, scattered; a fifth of the lanes off
        offsets = [4 * LANES, 4 * 32 * LANES, rng.integers(0, 16, 32) * 4, rng.integers(0, 1 << 12, 32) * 4]
        rows.append(np.where(rng.random(32) < 0.2, -1, BASE + offsets[rng.integers(0, 4)]))
    rows = np.stack(rows).astype(np.int64)
    plans = stage.plan(rows, pcs)
    for j, p in enumerate(pcs.tolist()):
        kind, width = kinds[p]
        row = rows[j]
        if kind == SHARED:
            assert plans.lo[j] == _bank_model(row.tolist(), width)
            continue
        alone = Coalescer(128, 32).lines(row[None, :])[0]
        got = list(zip(plans.lines[plans.lo[j]:plans.hi[j]].tolist(), plans.masks[plans.lo[j]:plans.hi[j]].tolist(),
                       strict=True))
        assert got == alone
        ops = plans.ops[plans.lo[j]:plans.hi[j]].tolist()
        a = row[row >= 0]
        if kind == GLOBAL_ATOM:
            assert ops == [max(np.unique(a[a // 128 == ln], return_counts=True)[1]) for ln, _ in alone]
        elif kind == GLOBAL_ST:
            want = []
            for ln, mask in alone:
                part = 0
                for sec in range(4):
                    words = np.unique(a[a // 32 == ln * 4 + sec])
                    if mask >> sec & 1 and words.size * 4 < 32:
                        part |= 1 << sec
                want.append(part)
            assert ops == want
        else:
            assert ops == [1] * len(alone)
