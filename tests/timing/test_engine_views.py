"""How the compiled engine indexes a unit's arrays (gpusim/timing/jit.py): a multi-dimensional field
(a HeldArray) indexed by integers reads and writes the element numpy does, whatever its layout, and
the engine's prefetch hint changes nothing."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from gpusim.config import load_config
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
