"""Small helpers over a step's lanes, shared by the warp scheduler (`warps.py`) and the ISAs' instruction
semantics: a step's lanes are a slice (every lane of every warp of the batch) or an index array."""

from __future__ import annotations

import numpy as np


def _aligned(a: np.ndarray, width: int) -> bool:
    """Is every address of `a` a multiple of `width` (for a power of two: their bits OR-ed together, one
    reduction)?"""
    if width & (width - 1) == 0:
        return a.size == 0 or not int(np.bitwise_or.reduce(a)) & (width - 1)
    return not (a % width).any()


def _count_true(pred: np.ndarray, negate: bool) -> int:
    """How many lanes of the predicate array `pred` hold (hold false, with `negate`)."""
    n = int(np.count_nonzero(pred))
    return pred.size - n if negate else n


def _count(lanes, b) -> int:
    return b.W * b.ws if isinstance(lanes, slice) else lanes.size


def _lane_at(lanes, i: int) -> int:
    return i if isinstance(lanes, slice) else int(lanes[i])


def _positions(G: np.ndarray, lanes, ws: int) -> np.ndarray:
    """Positions of `lanes` within the [len(G), ws] block of the warps in G (ws: the warp size)."""
    if isinstance(lanes, slice):
        return np.arange(G.size * ws)
    row = np.searchsorted(G, lanes // ws)
    return row * ws + lanes % ws


def _select(out: np.ndarray, G: np.ndarray, lanes, ws: int) -> np.ndarray:
    return out if isinstance(lanes, slice) else out[_positions(G, lanes, ws)]




def put(result, out):
    """`result`, or, where an `out` array is given, written into it (a step of every lane: the destination
    register itself) and `out`."""
    if out is None:
        return result
    out[...] = result
    return out
