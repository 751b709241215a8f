"""The warm-L2 start (`GPU.run(..., warm_l2=f)`, `l2.prefill_dirty`): the L2 begins full of lines
no kernel address maps to, a fraction f of them dirty, as in the steady state of a long kernel whose
data overflows the L2 (docs/sampling.md).

By hand: the kernel below has each of `blocks` blocks of 32 threads store one u32 per thread, so
block b writes the 128 bytes of one line, all four sectors, and reads nothing. A cold (empty) L2
allocates each line in a set with room: nothing is evicted, DRAM writes nothing, and the lines stay
dirty at the end (blocks x 128 bytes). Warm with f = 1, every set already holds `ways` dirty lines, so
each of the kernel's allocations evicts one and writes back a whole line: DRAM writes blocks x 128
bytes. Warm with f = 0 the evicted lines are clean: DRAM writes nothing. The prefill itself is the
whole L2 (size_bytes) at f = 1 and none of it at f = 0; `dirty_bytes_at_end` counts only the
kernel's own lines."""

from __future__ import annotations

import numpy as np
import pytest

import gpusim
from gpusim.timing import GPU
from gpusim.timing.l2 import make_l2, prefill_dirty
from tests.timing.helpers import config

STORE = """
.kernel store_lines
.param .u64 out
.reg .u32 %r<3>
.reg .u64 %rd<3>
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.lo.u32 %r2, %r0, %r1, %tid.x;
    mul.wide.u32 %rd0, %r2, 4;
    ld.param.u64 %rd1, [out];
    add.u64 %rd2, %rd1, %rd0;
    st.global.u32 [%rd2], %r2;
    exit;
"""
BLOCKS = 8


def _run(warm):
    cfg = config("a100", {"chip.sm_count": 1})
    prog = gpusim.assemble(STORE, "warm_l2_test.sasm")
    mem = gpusim.GlobalMemory()
    args = {"out": mem.alloc_array(np.zeros(BLOCKS * 32, dtype=np.uint32), "out")}
    launch = gpusim.Launch.make(BLOCKS, 32)
    return cfg, GPU(cfg).run(prog, launch, gpusim.block_streams(prog, launch, args, mem, cfg=cfg), warm_l2=warm)


@pytest.mark.parametrize(("warm", "written_lines"), [(None, 0), (0.0, 0), (1.0, BLOCKS)])
def test_each_allocation_evicts_a_prefilled_line(warm, written_lines):
    cfg, t = _run(warm)
    line = cfg.l2.line_size_bytes
    assert t.dram["bytes_written"] == written_lines * line
    assert t.dram["bytes_read"] == 0
    assert t.l2["dirty_bytes_at_end"] == BLOCKS * line  # the kernel's own lines, still dirty
    if warm is None:
        assert "prefilled_dirty_bytes" not in t.l2
    else:
        assert t.l2["prefilled_dirty_bytes"] == round(warm * cfg.l2.size_bytes)


def _sets(c, sl):
    """Slice `sl`'s sets: the lines of each, in allocation order (the order they will be evicted in)."""
    tg = c.tags
    rows = range(sl * c.nsets, (sl + 1) * c.nsets)
    return [[int(tg.tag[r, w]) for w in np.argsort(tg.meta[r], kind="stable")] for r in rows]


def _dirty(c, sl):
    tg = c.tags
    rows = slice(sl * c.nsets, (sl + 1) * c.nsets)
    return {int(line) for line in tg.tag[rows][tg.dirty[rows] != 0].tolist()}


def test_prefill_fills_every_set_with_foreign_lines_at_the_fraction():
    cfg = config("a100", {"l2.partitions": 1})  # one partition: the fraction as given (below: two)
    c = make_l2(cfg)
    added = prefill_dirty(c, 0.25)
    sl = 3
    sets = _sets(c, sl)
    lines = [line for s in sets for line in s]
    assert all(len(s) == c.tags.ways for s in sets)
    assert all(line < 0 for line in lines) and len(set(lines)) == c.tags.ways * c.nsets
    assert all((line // c.slices) % c.nsets == i for i, s in enumerate(sets) for line in s)
    assert len(_dirty(c, sl)) == c.tags.ways * c.nsets // 4  # one line in four, whole lines
    assert added == sum(len(_dirty(c, i)) for i in range(c.slices)) * c.line_bytes
    with pytest.raises(ValueError):
        prefill_dirty(c, 1.5)


@pytest.mark.parametrize("fraction", [0.25, 0.5, 1 / 3, 0.7])
def test_prefill_spreads_the_dirty_lines_over_every_set_and_way(fraction):
    """Each set holds f x ways dirty lines (within one), and the first way to be evicted is dirty in
    a fraction f of the sets, of the even and of the odd ones alike: a kernel whose first allocations
    fall on some of the sets (transpose_shared's writes: 60 % on even sets) evicts dirty lines at f.
    (One L2 partition: with two, the share is adjusted, below.)"""
    cfg = config("a100", {"l2.partitions": 1})
    c = make_l2(cfg)
    prefill_dirty(c, fraction)
    sets, dirty = _sets(c, 5), _dirty(c, 5)
    ways = c.tags.ways
    per_set = [sum(line in dirty for line in s) for s in sets]
    assert min(per_set) >= int(fraction * ways) and max(per_set) <= int(fraction * ways) + 1
    first = np.array([s[0] in dirty for s in sets], dtype=float)
    for part in (first[0::2], first[1::2], first[0::4]):
        assert part.mean() == pytest.approx(fraction, abs=0.05)


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.7])
def test_prefill_with_two_partitions_dirties_halfway_to_the_even_sharing_share(fraction):
    # l2.prefill_dirty: a partition also holds clean copies of lines homed in the other, so the share
    # dirtied is halfway between f and (f / 2) / (1 - f + f / 2); f = 0.5: (0.5 + 1/3) / 2 = 5/12
    c = make_l2(config("a100"))
    assert c.partitions == 2
    prefill_dirty(c, fraction)
    share = (fraction + fraction / (2 * (1 - fraction) + fraction)) / 2
    dirty = int((c.tags.dirty != 0).sum())
    assert dirty / c.tags.dirty.size == pytest.approx(share, abs=0.01)
