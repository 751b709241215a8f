"""vecadd: c = a + b (float32)."""

import numpy as np


def inputs(p, rng):
    n = p["n"]
    return {
        "a": rng.standard_normal(n, dtype=np.float32),
        "b": rng.standard_normal(n, dtype=np.float32),
        "c": np.zeros(n, dtype=np.float32),
        "n": n,
    }


def reference(p, inputs):
    return {"c": inputs["a"] + inputs["b"]}
