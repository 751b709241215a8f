"""Atomic read-modify-write on a typed memory view. Lanes that hit the same address apply one after
another in lane order, each seeing the previous one's result, as the memory system serialises them."""

from __future__ import annotations

import numpy as np

OPS = ("add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec")


def _combine(op: str, old: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    if op == "add":
        return np.add(old, b, dtype=old.dtype)
    if op == "min":
        return np.fmin(old, b) if old.dtype.kind == "f" else np.minimum(old, b)
    if op == "max":
        return np.fmax(old, b) if old.dtype.kind == "f" else np.maximum(old, b)
    if op == "exch":
        return b
    if op == "cas":
        return np.where(old == b, c, old)
    if op == "inc":  # CUDA atomicInc: wrap to 0 past b
        return np.where(old >= b, 0, old + 1).astype(old.dtype)
    if op == "dec":  # CUDA atomicDec: wrap to b below 0 (or above b)
        return np.where((old == 0) | (old > b), b, old - 1).astype(old.dtype)
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](old, b)


def apply(view: np.ndarray, idx: np.ndarray, op: str, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    """Apply `op` at element indices `idx` (lane order) of `view`; return each lane's old value."""
    n = idx.size
    if n == 0:
        return view[idx]
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    first = np.ones(n, dtype=bool)
    first[1:] = sidx[1:] != sidx[:-1]
    if first.all():
        old = view[idx].copy()
        view[idx] = _combine(op, old, b, c)
        return old
    sb = b[order]
    sc = c[order] if c is not None else None
    starts = np.flatnonzero(first)
    group = np.cumsum(first) - 1
    if op == "add" and view.dtype.kind in "iu":
        csum = np.cumsum(sb, dtype=view.dtype)
        excl = csum - sb
        excl = excl - excl[starts][group]  # exclusive prefix within each address group
        old_sorted = view[sidx] + excl
        last = np.r_[starts[1:], n] - 1
        view[sidx[starts]] = old_sorted[last] + sb[last]
    else:
        rank = np.arange(n) - starts[group]
        old_sorted = np.empty(n, dtype=view.dtype)
        for r in range(int(rank.max()) + 1):
            sel = rank == r
            i = sidx[sel]
            old = view[i].copy()
            view[i] = _combine(op, old, sb[sel], sc[sel] if sc is not None else None)
            old_sorted[sel] = old
    out = np.empty(n, dtype=view.dtype)
    out[order] = old_sorted
    return out
