"""How the compiled engine indexes a unit's arrays (gpusim/timing/jit.py): a multi-dimensional field
(a HeldArray) indexed by integers reads and writes the element numpy does, whatever its layout, and
the engine's prefetch hint changes nothing; the engine's borrowed view (no reference count) reads and
writes the unit's own arrays."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from gpusim.config import load_config
from gpusim.timing.engine import borrow
from gpusim.timing.jit import prefetch, to_struct
from gpusim.timing.subpartition import make_subpartitions

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the compiled engine's views")


@numba.njit
def _touch(P, rows, cols):
    """Sum queued + 1000 seen + 10^6 free over every element, set open where (g + p) % 3 == 0 and
    queued to 10 g + p; prefetch every row of each on the way (a hint: no value may change)."""
    total = 0
    for g in range(rows):
        prefetch(P.queued, g, 0)
        prefetch(P.seen, g, 64)
        prefetch(P.open, g, 0)
        for p in range(cols):
            total += P.queued[g, p] + 1000 * P.seen[g, p] + 1_000_000 * P.free[g, p]
            P.open[g, p] = (g + p) % 3 == 0
            P.queued[g, p] = 10 * g + p
    return total


def test_held_arrays_index_as_numpy_does():
    P = make_subpartitions(load_config("a100"), 3, 4)
    rows, cols = P.queued.shape
    queued = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)  # C order
    seen = np.asfortranarray(np.arange(rows * cols, dtype=np.int64).reshape(rows, cols) * 7)  # Fortran order
    free = (np.arange(rows * 2 * cols, dtype=np.int64).reshape(rows, 2 * cols) * 3)[:, 1::2]  # strided
    P = P._replace(queued=queued, seen=seen, free=free, open=np.zeros((rows, cols), np.bool_))
    expected = int((queued + 1000 * seen + 1_000_000 * free).sum())
    seen0, free0 = seen.copy(), free.copy()

    assert _touch(to_struct(P), rows, cols) == expected
    g, p = np.indices((rows, cols))
    assert np.array_equal(P.queued, 10 * g + p)
    assert np.array_equal(P.open, (g + p) % 3 == 0)
    assert np.array_equal(P.seen, seen0) and np.array_equal(P.free, free0)


@numba.njit
def _through_borrowed(ref, rows, cols):
    """Through the engine's borrowed view of `ref` (engine.borrow): sum queued over every element, then
    set free to queued + 100 and count one issue per row."""
    P = borrow(ref)
    total = 0
    for g in range(rows):
        for p in range(cols):
            total += P.queued[g, p]
            P.free[g, p] = P.queued[g, p] + 100
        P.issued[g] += 1
    return total


def test_borrowed_view_reads_and_writes_the_units_arrays():
    P = make_subpartitions(load_config("a100"), 3, 4)
    rows, cols = P.queued.shape
    P.queued[...] = np.arange(rows * cols).reshape(rows, cols) * 5
    P.issued[...] = [7, 8, 9]
    ref = to_struct(P)
    assert _through_borrowed(ref, rows, cols) == int(P.queued.sum())
    assert np.array_equal(P.free, P.queued + 100)
    assert P.issued.tolist() == [8, 9, 10]
    assert _through_borrowed(ref, rows, cols) == int(P.queued.sum())  # (the view costs the unit nothing)
    assert P.issued.tolist() == [9, 10, 11]
