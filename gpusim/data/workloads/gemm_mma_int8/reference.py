"""gemm_mma_int8: C = A @ B for s8 A and B (Bt = B transposed), s32 accumulation: exact."""

import numpy as np


def inputs(p, rng):
    n = p["n"]
    return {
        "A": rng.integers(-128, 128, (n, n)).astype(np.int8),
        "Bt": rng.integers(-128, 128, (n, n)).astype(np.int8),
        "C": np.zeros((n, n), dtype=np.int32),
        "n": n,
        "stages": p["stages"],
    }


def reference(p, inputs):
    a, bt = inputs["A"].astype(np.int64), inputs["Bt"].astype(np.int64)
    return {"C": (a @ bt.T).astype(np.int32)}
