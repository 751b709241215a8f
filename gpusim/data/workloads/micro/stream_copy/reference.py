"""stream_copy: dst = src (float32, bit-exact)."""

import numpy as np


def inputs(p, rng):
    n = p["n"]
    return {"src": rng.standard_normal(n, dtype=np.float32), "dst": np.zeros(n, dtype=np.float32), "n": n}


def reference(p, inputs):
    return {"dst": inputs["src"].copy()}
