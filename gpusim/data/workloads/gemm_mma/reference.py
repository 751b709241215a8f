"""gemm_mma: C = A @ B for f16 A and B (Bt = B transposed, n x n each), accumulated in f32 by the tensor
cores. numpy's reference sums the exact products in float64: the kernel's f32 accumulation (one rounding
per mma of 16 products) stays within the tolerance of workload.yaml."""

import numpy as np


def inputs(p, rng):
    n = p["n"]
    return {
        "A": rng.standard_normal((n, n)).astype(np.float16),
        "Bt": rng.standard_normal((n, n)).astype(np.float16),
        "C": np.zeros((n, n), dtype=np.float32),
        "n": n,
        "stages": p["stages"],
    }


def reference(p, inputs):
    a, bt = inputs["A"].astype(np.float64), inputs["Bt"].astype(np.float64)
    return {"C": (a @ bt.T).astype(np.float32)}
