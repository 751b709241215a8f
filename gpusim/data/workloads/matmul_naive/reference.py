"""matmul_naive: C = A @ B, square n x n float32 (accumulated in float64 by numpy, so compare with a
tolerance)."""

import numpy as np


def inputs(p, rng):
    n = p["n"]
    return {
        "A": rng.standard_normal((n, n), dtype=np.float32),
        "B": rng.standard_normal((n, n), dtype=np.float32),
        "C": np.zeros((n, n), dtype=np.float32),
        "n": n,
    }


def reference(p, inputs):
    return {"C": (inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)).astype(np.float32)}
