"""SFU peak: the same four float32 chains with numpy's float32 functions, in the kernel's order."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    n = int(p["n"])
    return {
        "x": rng.uniform(0.5, 1.5, n).astype(np.float32),
        "out": np.zeros(n, dtype=np.float32),
        "n": n,
        "iters": int(p["iters"]),
    }


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    x = inputs["x"]
    s, c, e, r = x.copy(), x.copy(), x.copy(), x.copy()
    one = np.float32(1.0)
    for _ in range(int(p["iters"])):
        s = np.sin(s)
        c = np.cos(c)
        e = np.exp2(-e)
        r = one / np.sqrt(r)
    return {"out": ((s + c) + (e + r)).astype(np.float32)}
