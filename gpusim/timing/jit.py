"""How the timing model's hot code is compiled: Numba's `njit`, cached on disk, no fastmath (the
engine's floating-point cycle counts must match the plain-Python run bit for bit). With
NUMBA_DISABLE_JIT=1 the same functions run as ordinary Python, for a debugger or coverage."""

from __future__ import annotations

import os

import numba

njit = numba.njit(cache=True, nogil=True)

# The cycle the model never reaches: "no event" for a unit or warp. Cycles are 64-bit integers, so no
# kernel is cut short by the representation (2^62 cycles is about a century at 1.4 GHz).
NEVER = 1 << 62


def is_cached(dispatcher) -> bool:
    """Whether Numba's on-disk cache holds machine code for `dispatcher` (for any signature)."""
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:  # plain Python (NUMBA_DISABLE_JIT=1), or a Numba without this layout
        return True
