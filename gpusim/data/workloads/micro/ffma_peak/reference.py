"""FFMA peak: the same eight float32 FMA chains in numpy, in the kernel's order. An FMA of float32
operands is exact in float64 up to the final rounding, so float64 multiply-add then a float32
rounding matches fma.rn.f32 (barring a double-rounding tie, hence a tolerance of an ulp or so)."""

from __future__ import annotations

import numpy as np

_M = np.float64(np.float32(0.999))
_C = np.float64(np.float32(0.001))


def inputs(p: dict, rng: np.random.Generator) -> dict:
    n = int(p["n"])
    return {
        "x": rng.uniform(-1.0, 1.0, n).astype(np.float32),
        "out": np.zeros(n, dtype=np.float32),
        "n": n,
        "iters": int(p["iters"]),
    }


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    x = inputs["x"]
    a = [x + np.float32(k / 8) for k in range(8)]  # float32 adds, as add.f32
    for _ in range(8 * int(p["iters"])):  # the kernel's loop is unrolled 8 times
        a = [(ak.astype(np.float64) * _M + _C).astype(np.float32) for ak in a]
    s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
    return {"out": s.astype(np.float32)}
