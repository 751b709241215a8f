"""Atomic read-modify-write on a typed memory view. Lanes that hit the same address apply one after
another in lane order, each seeing the previous one's result, as the memory system serialises them."""

from __future__ import annotations

import numpy as np

OPS = ("add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec")


# The operations whose result is a ufunc of the old value and the lane's operand (float min/max: fmin/fmax).
# A reduction (`red`, no old value returned) applies them with the ufunc's unbuffered `at`, which updates
# element by element in lane order, each lane on the previous one's result, as the memory system serialises them.
_BITWISE = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _ufunc(op: str, dtype: np.dtype):
    if op == "add":
        return np.add
    if op in ("min", "max"):
        if dtype.kind == "f":
            return np.fmin if op == "min" else np.fmax
        return np.minimum if op == "min" else np.maximum
    return _BITWISE.get(op)


def _combine(op: str, old: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    f = _ufunc(op, old.dtype)
    if f is not None:
        return f(old, b, dtype=old.dtype)
    if op == "exch":
        return b
    if op == "cas":
        return np.where(old == b, c, old)
    if op == "inc":  # CUDA atomicInc: wrap to 0 past b
        return np.where(old >= b, 0, old + 1).astype(old.dtype)
    # dec, CUDA atomicDec: wrap to b below 0 (or above b)
    return np.where((old == 0) | (old > b), b, old - 1).astype(old.dtype)


def _lane_order(idx: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The lanes sorted by address, lanes of one address in lane order (None where no two lanes share an
    address), and the sorted addresses. The addresses of one instruction usually span a small range (a
    block's shared bins): offset to 16-bit keys there, which numpy sorts stably by radix (a third of the
    time of a 64-bit merge sort), after a count that tells whether any address repeats at all."""
    lo, hi = int(idx.min()), int(idx.max())
    if hi - lo < 1 << 16:
        key = (idx - lo).astype(np.uint16)
        if np.bincount(key).max() == 1:
            return None, None
        order = np.argsort(key, kind="stable")
        return order, idx[order]
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    if (sidx[1:] != sidx[:-1]).all():
        return None, None
    return order, sidx


def apply(view: np.ndarray, idx: np.ndarray, op: str, b: np.ndarray, c: np.ndarray | None = None,
          old: bool = True) -> np.ndarray | None:
    """Apply `op` at element indices `idx` (lane order) of `view`; return each lane's old value (None when
    `old` is False: a reduction, which returns nothing)."""
    n = idx.size
    if n == 0:
        return view[idx] if old else None
    f = None if old else _ufunc(op, view.dtype)
    if f is not None:
        f.at(view, idx, np.asarray(b, view.dtype))
        return None
    order, sidx = _lane_order(idx)
    if order is None:
        prev = view[idx]  # (a fresh array: indexing by an array copies)
        view[idx] = _combine(op, prev, b, c)
        return prev
    first = np.ones(n, dtype=bool)
    first[1:] = sidx[1:] != sidx[:-1]
    if op == "add" and view.dtype.kind in "iu":  # (modular: the old values by prefix sums within each address)
        return _add_in_order(view, order, sidx, first, b)
    sb = b[order]
    sc = c[order] if c is not None else None
    starts = np.flatnonzero(first)
    rank = np.arange(n) - starts[np.cumsum(first) - 1]
    old_sorted = np.empty(n, dtype=view.dtype)
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        i = sidx[sel]
        prev = view[i]
        view[i] = _combine(op, prev, sb[sel], sc[sel] if sc is not None else None)
        old_sorted[sel] = prev
    out = np.empty(n, dtype=view.dtype)
    out[order] = old_sorted
    return out


def _add_in_order(view: np.ndarray, order: np.ndarray, sidx: np.ndarray, first: np.ndarray, b: np.ndarray
                  ) -> np.ndarray:
    """Integer atomic add of lanes sorted by address (`order`, `sidx`; `first`: a group's first lane): each
    lane's old value is the element's plus the lane's exclusive prefix sum within its group, modulo the
    type's width; each element ends at its last lane's old value plus that lane's operand."""
    n = sidx.size
    pos = np.arange(n)
    start = np.where(first, pos, 0)  # the group's first position, carried to its other lanes
    np.maximum.accumulate(start, out=start)
    if b.strides == (0,):  # one operand for every lane (an immediate): the prefix is the rank times it
        sb = b[:1]
        excl = (pos - start).astype(view.dtype)
        excl *= sb
    else:
        sb = b[order]
        excl = np.cumsum(sb, dtype=view.dtype)
        excl -= sb
        excl -= excl[start]
    old_sorted = view[sidx]
    old_sorted += excl
    last = np.flatnonzero(np.r_[first[1:], True])
    view[sidx[last]] = old_sorted[last] + (sb if sb.size == 1 else sb[last])
    out = np.empty(n, dtype=view.dtype)
    out[order] = old_sorted
    return out
