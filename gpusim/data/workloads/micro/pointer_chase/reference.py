"""Pointer chase: chain[i] = (i + stride/4) mod (footprint/4), the element index of the next load.
The walk from index 0 wraps around the footprint, so it touches every stride-th element again and
again, as lat_mem_rd does."""

from __future__ import annotations

import numpy as np


def _chain(p: dict) -> np.ndarray:
    n = int(p["footprint"]) // 4
    step = max(1, int(p["stride"]) // 4)
    if n < 1:
        raise ValueError("footprint must be at least 4 bytes")
    return ((np.arange(n, dtype=np.int64) + step) % n).astype(np.uint32)


def inputs(p: dict, rng: np.random.Generator) -> dict:
    return {"chain": _chain(p), "steps": int(p["steps"]), "result": np.zeros(2, dtype=np.uint32)}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    chain = inputs["chain"]
    cur, total = 0, 0
    for _ in range(int(p["steps"])):
        cur = int(chain[cur])
        total = (total + cur) & 0xFFFFFFFF
    return {"result": np.array([cur, total], dtype=np.uint32)}
