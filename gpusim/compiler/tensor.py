"""Tensor types: a shape and one of five dtypes, and their numpy equivalents. bf16 is ml_dtypes'
bfloat16 (a numpy scalar type: f32's sign and exponent, 7 mantissa bits, round to nearest even on
`astype`); i8 is numpy's int8, the storage type of quantised tensors (docs/compiler.md, "Precision")."""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from gpusim.compiler.errors import GraphError

NUMPY_DTYPES: dict[str, type[np.generic]] = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
                                             "i32": np.int32, "i8": np.int8}
DTYPES = tuple(NUMPY_DTYPES)
FLOAT_DTYPES = ("f32", "f16", "bf16")


def is_float(dtype: np.dtype) -> bool:
    """Whether a numpy dtype is a float type, bfloat16 included (numpy sees it as kind 'V')."""
    return dtype.kind == "f" or dtype == np.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True, slots=True)
class TensorType:
    """A tensor's shape (a tuple of non-negative ints; `()` is a scalar) and dtype (DTYPES)."""

    shape: tuple[int, ...]
    dtype: str = "f32"

    def __post_init__(self):
        if self.dtype not in NUMPY_DTYPES:
            raise GraphError(f"unknown dtype '{self.dtype}' (known: {', '.join(DTYPES)})")
        if not isinstance(self.shape, tuple) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in self.shape):
            raise GraphError(f"a shape is a tuple of non-negative ints, not {self.shape!r}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(NUMPY_DTYPES[self.dtype]).itemsize

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(NUMPY_DTYPES[self.dtype])

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


def dtype_of(array: np.ndarray) -> str:
    """The IR dtype of a numpy array: float arrays are f32 unless f16 or bf16, integer arrays i32 unless
    int8."""
    if array.dtype == np.float16:
        return "f16"
    if array.dtype == np.dtype(ml_dtypes.bfloat16):
        return "bf16"
    if array.dtype == np.int8:
        return "i8"
    if np.issubdtype(array.dtype, np.floating):
        return "f32"
    if np.issubdtype(array.dtype, np.integer):
        return "i32"
    raise GraphError(f"no IR dtype for numpy {array.dtype} (known: {', '.join(DTYPES)})")
