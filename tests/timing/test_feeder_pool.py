"""The feeder's stream pool (gpusim/timing/feeder.py): each warp's window, appended to chunk after chunk
while the engine issues from its front, holds exactly the warp's stream still to issue, through window
moves, growth in place and compactions; a window moves about once each time it doubles, not at each
chunk; and the compaction's pool order is the windows' order in the pool."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from gpusim.timing.decode import EXIT
from gpusim.timing.feeder import Feeder, _make_streams, _pool_order

KINDS = np.array([0, 0, 0, EXIT], np.int64)  # pcs 0-2 plain, 3 an exit


def _feeder(W: int):
    f = Feeder([], None, SimpleNamespace(kind=KINDS))
    f.st, f.base, f.cap = _make_streams(64, 256, 16, 16), np.zeros(64, np.int64), np.zeros(64, np.int64)
    f.least = (256, 16, 16)  # (a small pool: it fills, and is compacted, soon)
    b = f._new_batch(SimpleNamespace(first_block=0, nblocks=W, wpb=1))
    return f, b


def _append(f, b, G, pcs, masks):
    G = np.asarray(G, np.int64)
    f._append(b, G, np.asarray(pcs, np.int32), np.asarray(masks, np.uint64), None, None, None,
              np.zeros(b.W, bool))


def test_windows_hold_each_warps_stream_through_moves_growth_and_compactions():
    """Random chunks (warps interleaved in issue order) appended while random prefixes of the windows are
    issued: every window always holds its warp's pcs not yet issued, with the flags a per-warp reading of
    the masks gives (set where the mask differs from the warp's previous one, unless that was an exit), and
    the room its region has left holds no plan and no flag."""
    rng = np.random.default_rng(7)
    W = 24
    f, b = _feeder(W)
    todo = [[] for _ in range(W)]  # per warp: (pc, flag) not yet issued
    last = [None] * W  # per warp: (mask, was an exit) of its last instruction
    compactions = []
    compact = f._compact
    f._compact = lambda *a: (compactions.append(f.top), compact(*a))  # noqa: E731
    for _ in range(1200):
        n = int(rng.integers(1, 200))
        G = rng.integers(0, W, n)
        pcs = rng.integers(0, 4, n)
        masks = rng.choice([0xFFFFFFFF, 0xFFFF, 0xFF00], n)
        for w, p, m in zip(G.tolist(), pcs.tolist(), masks.tolist(), strict=True):
            flag = last[w] is not None and m != last[w][0] and not last[w][1]
            todo[w].append((p, flag))
            last[w] = (m, p == 3)
        _append(f, b, G, pcs, masks)
        st = f.st
        for w in range(W):
            window = list(zip(st.pc[st.pos[w]:st.end[w]].tolist(), st.flag[st.pos[w]:st.end[w]].tolist(),
                              strict=True))
            assert window == todo[w]
            k = int(rng.integers(0, len(todo[w]) // 2 + 1))  # the engine issues k of them
            st.pos[w] += k
            del todo[w][:k]
            room = slice(st.end[w], f.cap[w])
            assert (st.acc[room] == -1).all() and not st.flag[room].any()
    assert len(compactions) >= 3  # (the pool filled, grew to its least size, filled again and again)


def test_a_window_moves_when_it_doubles_not_at_every_chunk():
    """Two warps appended one instruction each per chunk, nothing issued: the first one's window is never the
    pool's last region, so it moves whenever its region is full. Regions twice the window: 400 chunks take
    a pool of a few times the 800 instructions (a move at every chunk would take 2 * (1 + 2 + ... + 400))."""
    f, b = _feeder(2)
    for _ in range(400):
        _append(f, b, [0, 1], [0, 0], [1, 1])
    st = f.st
    assert (st.end - st.pos)[:2].tolist() == [400, 400]
    assert f.top <= 4 * 800


def test_a_window_issued_from_its_front_slides_back_in_its_region():
    """Two warps fed one instruction each per chunk, the engine issuing all but their last: the windows stay
    short, and each slides back to its region's base instead of taking new room at the pool's top, which
    stays where the first chunks left it (a move at each fill would take new room every few chunks)."""
    f, b = _feeder(2)
    tops = []
    for k in range(1000):
        _append(f, b, [0, 1], [k % 3, k % 3], [1, 1])
        st = f.st
        assert st.pc[st.end[0] - 1] == k % 3 and st.pc[st.end[1] - 1] == k % 3
        st.pos[:2] = st.end[:2] - 1
        tops.append(f.top)
    assert max(tops) <= 16 and tops[-1] == tops[10]


def test_pool_order_is_the_windows_order_in_the_pool():
    """The handles whose windows hold something, by window start (a radix sort, starts up to 2^23 and
    beyond 11 bits a pass), against numpy's argsort; empty windows are set to 0:0."""
    rng = np.random.default_rng(1)
    for n in (0, 1, 5, 3000):
        pos = rng.permutation(1 << 23)[:n].astype(np.int64)
        end = pos + rng.integers(0, 3, n)
        live = end > pos
        expect = np.flatnonzero(live)[np.argsort(pos[live])]
        got = _pool_order(pos, end)
        assert got.tolist() == expect.tolist()
        assert not pos[~live].any() and not end[~live].any()
