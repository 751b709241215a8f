"""Small helpers over a step's lanes, shared by the warp scheduler (`warps.py`) and the ISAs' instruction
semantics: a step's lanes are a slice (every lane of every warp of the batch) or an index array."""

from __future__ import annotations

from collections.abc import Callable

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


def _in_window(a: np.ndarray, size: int, width: int) -> bool:
    """Is every address of `a` within [0, size - width] and a multiple of `width`? (The usual access, told
    without a mask: where the window is a power of two bytes and the width too, by one reduction, the
    addresses' bits OR-ed together, which are within it and aligned just when every address is; else by two,
    the addresses as unsigned, where a negative one is huge, so that one comparison checks both ends.)"""
    if a.size == 0:
        return True
    if size & (size - 1) == 0 and width & (width - 1) == 0:
        bits = int(np.bitwise_or.reduce(a))
        return 0 <= bits <= size - width and not bits & (width - 1)
    return a.view(np.uint64).max() <= np.uint64(size - width) and (width == 1 or _aligned(a, width))


def _gather(arr: np.ndarray) -> Callable:
    """lanes -> the array's values at those lanes (a view for a slice; by `take`, a cheaper gather than
    indexing, for an index array)."""
    return lambda lanes: arr[lanes] if lanes.__class__ is slice else arr.take(lanes)


def _guard_lanes(pred: np.ndarray, negate: bool) -> list:
    """A guard over every lane of a batch: [where it holds (read-only), those lanes (None until asked for),
    how many]; [None, None, count] where it holds on every lane."""
    n = _count_true(pred, negate)
    if n == pred.size:
        return [None, None, n]
    keep = pred != negate
    keep.flags.writeable = False
    return [keep, None, n]
