"""gemm_tiled: C = A @ B for float32 A (m x k) and B (k x n) (accumulated in float64 by numpy, so compare
with a tolerance)."""

import numpy as np


def inputs(p, rng):
    m, k, n = p["m"], p["k"], p["n"]
    return {
        "A": rng.standard_normal((m, k), dtype=np.float32),
        "B": rng.standard_normal((k, n), dtype=np.float32),
        "C": np.zeros((m, n), dtype=np.float32),
        "m": m,
        "k": k,
        "n": n,
    }


def reference(p, inputs):
    return {"C": (inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)).astype(np.float32)}
