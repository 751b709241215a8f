"""latency_chase: the element at byte offset o holds (o + stride) mod footprint, as a uint64."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    fp, stride = int(p["footprint"]), int(p["stride"])
    if fp % 8 or stride % 8 or fp < 8:
        raise ValueError("footprint and stride must be positive multiples of 8 bytes")
    offsets = np.arange(0, fp, 8, dtype=np.uint64)
    return {"chain": (offsets + np.uint64(stride)) % np.uint64(fp), "steps": int(p["steps"]),
            "result": np.zeros(1, np.uint64)}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    steps = int(p["steps"]) // 4 * 4
    return {"result": np.array([steps * int(p["stride"]) % int(p["footprint"])], np.uint64)}
