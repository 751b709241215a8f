"""stream_copy_v4: dst = src over n float4 elements (4n floats), exactly."""

import numpy as np


def inputs(p, rng):
    n = int(p["n"])
    return {"src": rng.standard_normal(4 * n, dtype=np.float32), "dst": np.zeros(4 * n, np.float32), "n": n}


def reference(p, inputs):
    return {"dst": inputs["src"].copy()}
