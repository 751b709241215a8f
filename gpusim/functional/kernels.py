"""Lane loops that numpy would run as several passes over a batch's lanes (each through memory), written
once as plain Python and compiled by Numba the first time they are called, in a process that has Numba
loaded already (`numba_loaded`: a simulation, whose timing engine needs it); under NUMBA_DISABLE_JIT=1 they
run as written."""

from __future__ import annotations

import sys

import numpy as np


def numba_loaded() -> bool:
    """Whether Numba is in this process already (the timing engine imports it): only then do the executor's
    instructions take their compiled loops. A functional-only run (`gpusim run --functional`) does not
    import Numba for them, and keeps numpy's passes (tests check that both give the same results)."""
    return "numba" in sys.modules


class lazy_njit:  # noqa: N801 - used as a decorator
    """`numba.njit(cache=True)` of the function, made at its first call."""

    def __init__(self, fn):
        self.py_func = fn
        self._compiled = None
        self.__doc__ = fn.__doc__

    @property
    def dispatcher(self):
        if self._compiled is None:
            import numba

            self._compiled = numba.njit(cache=True, nogil=True)(self.py_func)
        return self._compiled

    def __call__(self, *args):
        return self.dispatcher(*args)


def _load_shared_lanes(base, offset, row, lane_smem, shift, size, width, view, dst):
    """Every lane of a shared-memory load at [base + offset]: each lane's byte address (its register widened
    to 64 bits, as numpy's int64 sum widens it) into the recorder's `row`; if every address lies in the
    block's window (0 .. size - width) and is a multiple of `width` (a power of two), each lane's element
    gathered into `dst` from `view`, the batch's shared memory (the lane's block's region starts at byte
    lane_smem[i]). Returns whether it gathered (False: some address is out of the window or misaligned,
    nothing gathered, for the caller's checks to name the lane)."""
    ok = True
    top = size - width
    for i in range(row.size):
        a = np.int64(base[i]) + offset
        row[i] = a
        if a < 0 or a > top or (a & (width - 1)) != 0:
            ok = False
    if not ok:
        return False
    for i in range(row.size):
        dst[i] = view[(row[i] + lane_smem[i]) >> shift]
    return True


load_shared_lanes = lazy_njit(_load_shared_lanes)
