"""The reduced-precision float formats the tensor cores read, as bit patterns: bfloat16 (f32's sign and
8-bit exponent with 7 mantissa bits: the top half of an f32) and TensorFloat-32 (f32's layout with 10
mantissa bits: an f32 whose low 13 bits are zero). Rounding an f32 to either is dropping low bits of its
pattern, with the rounding modes of PTX `cvt` (PTX ISA 9.7.9.21): .rn nearest-even, .rna nearest with
ties away from zero, .rz toward zero, .rm toward -inf, .rp toward +inf. NaN stays a (quiet) NaN."""

from __future__ import annotations

import numpy as np

ROUND_MODES = ("rn", "rna", "rz", "rm", "rp")


def round_f32_bits(x, drop: int, mode: str = "rn") -> np.ndarray:
    """The f32 values `x` rounded to `32 - drop` bits of pattern (the kept bits, as uint32, still in
    place: the low `drop` bits are zero)."""
    u = np.ascontiguousarray(np.asarray(x, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    sign = u & 0x80000000
    mag = u & 0x7FFFFFFF
    low = np.uint64((1 << drop) - 1)
    half = np.uint64(1 << (drop - 1))
    rem = mag & low
    base = mag - rem
    if mode == "rn":
        up = (rem > half) | ((rem == half) & (((base >> np.uint64(drop)) & 1) == 1))
    elif mode == "rna":
        up = rem >= half
    elif mode == "rz":
        up = np.zeros(mag.shape, bool)
    elif mode == "rp":
        up = (rem > 0) & (sign == 0)
    elif mode == "rm":
        up = (rem > 0) & (sign != 0)
    else:
        raise ValueError(f"rounding mode {mode!r}; expected one of {ROUND_MODES}")
    out = base + np.where(up, np.uint64(1 << drop), np.uint64(0))
    nan = mag > 0x7F800000
    out = np.where(nan, np.uint64(0x7FC00000), out)  # a NaN stays a NaN (quiet)
    return (out | sign).astype(np.uint32)


def to_bf16(x, mode: str = "rn") -> np.ndarray:
    """f32 values -> bf16 bit patterns (uint16)."""
    return (round_f32_bits(x, 16, mode) >> np.uint32(16)).astype(np.uint16)


def from_bf16(bits) -> np.ndarray:
    """bf16 bit patterns -> f32 values (exact)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_tf32(x, mode: str = "rna") -> np.ndarray:
    """f32 values -> tf32 bit patterns (uint32: the f32 pattern with its low 13 bits cleared)."""
    return round_f32_bits(x, 13, mode)


def tf32_value(bits) -> np.ndarray:
    """What a tensor core reads from a .tf32 operand register: the f32 pattern's upper 19 bits (the low
    13 mantissa bits are ignored, i.e. truncated), as f32 values."""
    return (np.asarray(bits).astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
