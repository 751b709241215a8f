"""embedding: out[s, :] = sum over f < bag of table[idx[s * bag + f], :], float32 adds in f order."""

import numpy as np

DIM = 16  # floats per row: one 64-byte line


def inputs(p, rng):
    n, bag = int(p["n"]), int(p["bag"])
    return {
        "table": rng.standard_normal((n, DIM), dtype=np.float32),
        "idx": rng.integers(0, n, size=n * bag, dtype=np.uint32),
        "out": np.zeros((n, DIM), dtype=np.float32),
        "n": n,
        "bag": bag,
    }


def reference(p, inputs):
    n, bag = int(p["n"]), int(p["bag"])
    acc = np.zeros((n, DIM), dtype=np.float32)
    idx = inputs["idx"].reshape(n, bag)
    for f in range(bag):
        acc = acc + inputs["table"][idx[:, f]]
    return {"out": acc}
