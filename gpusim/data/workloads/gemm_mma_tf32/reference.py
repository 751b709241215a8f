"""gemm_mma_tf32: C = A @ B for f32 A and B (Bt = B transposed), which the tensor cores read as tf32
(10 mantissa bits: the low 13 bits of each input are dropped). The reference is the exact product of the
f32 inputs: the tolerance of workload.yaml is tf32's (each input off by up to 2^-10 of itself)."""

import numpy as np


def inputs(p, rng):
    n = p["n"]
    return {
        "A": rng.standard_normal((n, n), dtype=np.float32),
        "Bt": rng.standard_normal((n, n), dtype=np.float32),
        "C": np.zeros((n, n), dtype=np.float32),
        "n": n,
        "stages": p["stages"],
    }


def reference(p, inputs):
    a, bt = inputs["A"].astype(np.float64), inputs["Bt"].astype(np.float64)
    return {"C": (a @ bt.T).astype(np.float32)}
