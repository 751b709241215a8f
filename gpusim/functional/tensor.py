"""What the warp-wide tensor-core and matrix-load instructions compute: `mma.sync.aligned` on the
fragments PTX lays out over a warp's 32 lanes (PTX ISA 9.7.13.4.8 m16n8k8, 9.7.13.4.9 m16n8k16,
9.7.13.4.10 m16n8k32), and `ldmatrix` (9.7.13.4.15). Each fragment element lives in (lane, register,
element within the 32-bit register); the tables below give its (row, column) in the matrix, from
groupID = lane >> 2 and threadID_in_group = lane % 4 as PTX writes them."""

from __future__ import annotations

import numpy as np

from gpusim.isa import floats
from gpusim.isa.opcodes import MMA_DIMS

LANES = 32
_LANE = np.arange(LANES)
_G, _T = _LANE >> 2, _LANE & 3


def _table(nregs: int, per_reg: int, rc) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of shape (lanes, nregs * per_reg), element i = reg * per_reg + e, from rc(i) ->
    (row, col) arrays over lanes."""
    rows = np.empty((LANES, nregs * per_reg), np.int64)
    cols = np.empty_like(rows)
    for i in range(nregs * per_reg):
        rows[:, i], cols[:, i] = rc(i)
    return rows, cols


# C and D (16x8, f32 or s32), four registers: c0 c1 in row g, c2 c3 in row g + 8, columns 2t, 2t + 1
ACC = _table(4, 1, lambda i: (_G + 8 * (i >= 2), 2 * _T + (i & 1)))
# A (16 x K, row-major) and B (K x 8, column-major) per shape
FRAGMENTS = {
    # f16 / bf16: two elements a register; a0 a1 a4 a5 in row g, the others in row g + 8
    "m16n8k16": (_table(4, 2, lambda i: (_G + 8 * ((i // 2) % 2), 2 * _T + (i & 1) + 8 * (i >= 4))),
                 _table(2, 2, lambda i: (2 * _T + (i & 1) + 8 * (i >= 2), _G))),
    # tf32: one element a register; a0 a2 in row g, a1 a3 in row g + 8; a0 a1 in column t, a2 a3 in t + 4
    "m16n8k8": (_table(4, 1, lambda i: (_G + 8 * (i % 2), _T + 4 * (i >= 2))),
                _table(2, 1, lambda i: (_T + 4 * i, _G))),
    # s8 / u8: four elements a register; a0..a3, a8..a11 in row g; a8..a15 in columns 16 + 4t ..
    "m16n8k32": (_table(4, 4, lambda i: (_G + 8 * ((i // 4) % 2), 4 * _T + (i & 3) + 16 * (i >= 8))),
                 _table(2, 4, lambda i: (4 * _T + (i & 3) + 16 * (i >= 4), _G))),
}


def _elements(words: np.ndarray, etype: str) -> np.ndarray:
    """(warps, lanes, regs) uint32 registers -> (warps, lanes, regs * per_reg) element values (float64 or
    int64), lower-addressed (lower-indexed) elements in the lower bits."""
    w = np.ascontiguousarray(words, dtype=np.uint32)
    if etype == "f16":
        return w.view(np.float16).reshape(*w.shape[:2], -1).astype(np.float64)
    if etype == "bf16":
        return floats.from_bf16(w.view(np.uint16)).reshape(*w.shape[:2], -1).astype(np.float64)
    if etype == "tf32":
        return floats.tf32_value(w).astype(np.float64)
    if etype in ("s8", "u8"):
        return w.view(np.int8 if etype == "s8" else np.uint8).reshape(*w.shape[:2], -1).astype(np.int64)
    raise ValueError(f"no mma element type .{etype}")


def _matrix(vals: np.ndarray, table, shape: tuple[int, int]) -> np.ndarray:
    rows, cols = table
    m = np.zeros((vals.shape[0], *shape), vals.dtype)
    m[:, rows.ravel(), cols.ravel()] = vals.reshape(vals.shape[0], -1)
    return m


def mma(shape: str, atype: str, btype: str, a: np.ndarray, b: np.ndarray, c: np.ndarray,
        satfinite: bool = False) -> np.ndarray:
    """D = A x B + C for `warps` warps at once. a: (warps, 32, 4) uint32, b: (warps, 32, 2) uint32, c:
    (warps, 32, 4) float32 or int32 (the registers as the lanes hold them). Returns D the same way as c.
    Floats: every product is exact and the sum is rounded once to f32 (PTX leaves the order of the
    additions to the implementation; the hardware's result agrees within f32 rounding). Integers: exact,
    the s32 result wraps (.satfinite: clamps to the s32 range)."""
    M, N, K = MMA_DIMS[shape]
    ta, tb = FRAGMENTS[shape]
    A = _matrix(_elements(a, atype), ta, (M, K))
    B = _matrix(_elements(b, btype), tb, (K, N))
    rows, cols = ACC
    if atype in ("s8", "u8"):
        D = np.einsum("wmk,wkn->wmn", A, B) + _matrix(np.asarray(c, np.int64), ACC, (M, N))
        out = D[:, rows, cols]
        if satfinite:
            return np.clip(out, -(2**31), 2**31 - 1).astype(np.int32)
        return out.astype(np.int64).astype(np.uint32).view(np.int32)  # (wraps)
    D = np.einsum("wmk,wkn->wmn", A, B) + _matrix(np.asarray(c, np.float64), ACC, (M, N))
    with np.errstate(over="ignore"):
        return D[:, rows, cols].astype(np.float32)


def ldmatrix(rows16: np.ndarray, count: int, trans: bool) -> np.ndarray:
    """rows16: (warps, count * 8, 8) uint16, row r of matrix i at [:, 8i + r] (the row lane 8i + r
    addressed). Returns (warps, 32, count) uint32: lane l's register d_i holds row l/4, elements
    2(l%4), 2(l%4)+1 of matrix i (.trans: of its transpose), the lower element in the low half."""
    m = rows16.reshape(rows16.shape[0], count, 8, 8)
    if trans:
        m = m.transpose(0, 1, 3, 2)
    lo = m[:, :, _LANE >> 2, 2 * (_LANE & 3)].astype(np.uint32)
    hi = m[:, :, _LANE >> 2, 2 * (_LANE & 3) + 1].astype(np.uint32)
    return (lo | (hi << np.uint32(16))).transpose(0, 2, 1)
