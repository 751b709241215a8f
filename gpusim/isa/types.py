"""Scalar types of the ISA: the suffixes of `add.s32`, `ld.global.f16`, `.reg .u64`.

A type has a kind (`b` untyped bits, `u` unsigned, `s` signed, `f` float, `pred`), a width in
bits and the numpy dtype that holds it. Registers are declared with one of `REGISTER_TYPES`;
sub-word types (8/16-bit integers) only appear as memory widths of `ld`/`st`/`cvt`.

`bf16` (bfloat16: f32's sign and 8-bit exponent, 7 mantissa bits) and `tf32` (TensorFloat-32: f32's
layout, of which the tensor cores read the upper 19 bits) have no numpy type: their registers hold the
bit pattern (a uint16 / uint32 array) and `cvt` and `mma` encode and decode it. `f16x2` and `bf16x2`
(two halves in 32 bits) are only ever a destination type of `cvt` (`cvt.rn.f16x2.f32 d, a, b`), written into
a 32-bit register."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class ScalarType:
    name: str
    kind: str  # "b", "u", "s", "f", "pred"
    bits: int
    dtype: np.dtype

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_int(self) -> bool:
        return self.kind in ("b", "u", "s")

    @property
    def is_float(self) -> bool:
        return self.kind == "f"


def _t(name: str, kind: str, bits: int, dtype) -> ScalarType:
    return ScalarType(name, kind, bits, np.dtype(dtype))


TYPES: dict[str, ScalarType] = {
    t.name: t
    for t in (
        _t("pred", "pred", 1, np.bool_),
        _t("b8", "b", 8, np.uint8), _t("u8", "u", 8, np.uint8), _t("s8", "s", 8, np.int8),
        _t("b16", "b", 16, np.uint16), _t("u16", "u", 16, np.uint16), _t("s16", "s", 16, np.int16),
        _t("f16", "f", 16, np.float16), _t("bf16", "f", 16, np.uint16),
        _t("b32", "b", 32, np.uint32), _t("u32", "u", 32, np.uint32), _t("s32", "s", 32, np.int32),
        _t("f32", "f", 32, np.float32), _t("tf32", "f", 32, np.uint32),
        _t("b64", "b", 64, np.uint64), _t("u64", "u", 64, np.uint64), _t("s64", "s", 64, np.int64),
        _t("f64", "f", 64, np.float64),
        # two f16 / bf16 packed in 32 bits, the lower-indexed in the low half: only cvt writes them
        _t("f16x2", "f", 32, np.uint32), _t("bf16x2", "f", 32, np.uint32),
    )
}

REGISTER_TYPES = ("pred", "b16", "u16", "s16", "b32", "u32", "s32", "f16", "bf16", "f32", "b64", "u64", "s64",
                  "f64")
BITS_ONLY = frozenset({"bf16", "tf32", "f16x2", "bf16x2"})  # float types held as bit patterns (no numpy arithmetic)


def compatible(instr_type: ScalarType, reg_type: ScalarType) -> bool:
    """May a register of `reg_type` be an operand of an instruction of `instr_type`?
    As in PTX: the same type; signed/unsigned/bit integers of one width; any type of the width of a
    `.bN` instruction or register."""
    if instr_type == reg_type:
        return True
    if instr_type.kind == "pred" or reg_type.kind == "pred":
        return False
    if instr_type.bits != reg_type.bits:
        return False
    if instr_type.kind == "b" or reg_type.kind == "b":
        return True
    return instr_type.is_int and reg_type.is_int


def widened(t: ScalarType) -> ScalarType:
    """The double-width type of `mul.wide` / `mad.wide` results."""
    return TYPES[{"u": "u", "s": "s", "b": "b"}[t.kind] + str(t.bits * 2)]
