"""reduce_sum_shfl: one float32 partial sum per block of `block` consecutive elements."""

import numpy as np


def _blocks(p):
    return -(-p["n"] // p["block"])


def inputs(p, rng):
    n = p["n"]
    return {
        "x": rng.standard_normal(n, dtype=np.float32),
        "partial": np.zeros(_blocks(p), dtype=np.float32),
        "n": n,
    }


def reference(p, inputs):
    padded = np.zeros(_blocks(p) * p["block"], dtype=np.float64)
    padded[: p["n"]] = inputs["x"]
    return {"partial": padded.reshape(-1, p["block"]).sum(axis=1).astype(np.float32)}
