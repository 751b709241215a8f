"""Shared bank conflicts: buf[j] = j, so each thread sums 8 * `iters` copies of its own index."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    n = int(p["n"])
    return {"out": np.zeros(n, dtype=np.uint32), "n": n, "stride": int(p["stride"]), "iters": int(p["iters"])}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    n, block = int(p["n"]), int(p["block"])
    t = np.arange(n, dtype=np.int64) % block
    idx = (t * int(p["stride"])) % 1024
    return {"out": ((idx * 8 * int(p["iters"])) & 0xFFFFFFFF).astype(np.uint32)}
