"""saxpy: y = a*x + y (float32; the kernel fuses the multiply-add, so compare with a tolerance)."""

import numpy as np


def inputs(p, rng):
    n = p["n"]
    return {
        "x": rng.standard_normal(n, dtype=np.float32),
        "y": rng.standard_normal(n, dtype=np.float32),
        "a": 2.5,
        "n": n,
    }


def reference(p, inputs):
    x, y = inputs["x"].astype(np.float64), inputs["y"].astype(np.float64)
    return {"y": (inputs["a"] * x + y).astype(np.float32)}
