"""The tag store of a sectored, set-associative cache, shared by the L1s and the L2 slices: per line
its tag, its valid sectors and (for a write-back cache) its dirty sectors, and per way the
replacement policy's metadata. Row `r` is one set of one cache (`cache * nsets + set`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing.jit import njit, prefetch, struct_type
from gpusim.timing.policies import replacement

EMPTY = np.iinfo(np.int64).min  # no line (line numbers may be negative: the warm L2's foreign lines)


class Tags(NamedTuple):
    tag: np.ndarray  # (rows, ways) int64
    valid: np.ndarray  # (rows, ways) int64: valid sector mask
    dirty: np.ndarray  # (rows, ways) int64: dirty sector mask
    meta: np.ndarray  # (rows, ways) int64: the replacement policy's state
    clock: np.ndarray  # (1,) int64: accesses so far (the policies' notion of time)
    ways: int
    policy: int  # index in vocab.REPLACEMENT_POLICIES


struct_type(Tags)


def make_tags(rows: int, ways: int, policy: int) -> Tags:
    shape = (max(1, rows), ways)
    return Tags(np.full(shape, EMPTY, dtype=np.int64), np.zeros(shape, np.int64), np.zeros(shape, np.int64),
                np.zeros(shape, np.int64), np.zeros(1, np.int64), ways, policy)


@njit
def find(c, row, line):
    """The way holding `line` in set `row`, or -1."""
    tag = c.tag
    for w in range(tag.shape[1]):
        if tag[row, w] == line:
            return w
    return -1


@njit
def touch(c, row, way):
    c.clock[0] += 1
    replacement.on_hit(c.policy, c.meta, row, way, c.clock[0])


@njit
def allocate(c, row, line):
    """Place `line` (absent) in set `row`: into an empty way, else in the policy's victim's way.
    Returns (way, evicted line or EMPTY, the evicted line's dirty sectors)."""
    way = -1
    tag = c.tag
    for w in range(tag.shape[1]):
        if tag[row, w] == EMPTY:
            way = w
            break
    old = EMPTY
    old_dirty = 0
    if way < 0:
        way = replacement.victim(c.policy, c.meta, row, c.ways)
        old = c.tag[row, way]
        old_dirty = c.dirty[row, way]
    c.tag[row, way] = line
    c.valid[row, way] = 0
    c.dirty[row, way] = 0
    c.clock[0] += 1
    replacement.on_fill(c.policy, c.meta, row, way, c.clock[0])
    return way, old, old_dirty


@njit
def victim_valid(c, row):
    """The valid sectors of the line `allocate` would evict from set `row` next (0: an empty way)."""
    tag = c.tag
    for w in range(tag.shape[1]):
        if tag[row, w] == EMPTY:
            return 0
    return c.valid[row, replacement.victim(c.policy, c.meta, row, c.ways)]


@njit
def invalidate(c, row, way):
    c.tag[row, way] = EMPTY
    c.valid[row, way] = 0
    c.dirty[row, way] = 0


@njit
def prefetch_set(c, row):
    """Start loading set `row`'s tags, sector masks and replacement state (a hint: no value changes)."""
    for off in range(0, 8 * c.ways, 64):  # (64-byte lines of int64 ways)
        prefetch(c.tag, row, off)
        prefetch(c.valid, row, off)
        prefetch(c.meta, row, off)
        prefetch(c.dirty, row, off)
