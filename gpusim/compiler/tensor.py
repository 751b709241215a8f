"""Tensor types: a shape and one of three dtypes, and their numpy equivalents."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpusim.compiler.errors import GraphError

NUMPY_DTYPES: dict[str, type[np.generic]] = {"f32": np.float32, "f16": np.float16, "i32": np.int32}
DTYPES = tuple(NUMPY_DTYPES)
FLOAT_DTYPES = ("f32", "f16")


@dataclass(frozen=True, slots=True)
class TensorType:
    """A tensor's shape (a tuple of non-negative ints; `()` is a scalar) and dtype ("f32", "f16", "i32")."""

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
    """The IR dtype of a numpy array: float arrays are f32 unless f16, integer arrays i32."""
    if array.dtype == np.float16:
        return "f16"
    if np.issubdtype(array.dtype, np.floating):
        return "f32"
    if np.issubdtype(array.dtype, np.integer):
        return "i32"
    raise GraphError(f"no IR dtype for numpy {array.dtype} (known: {', '.join(DTYPES)})")
