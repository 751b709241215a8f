"""256-bin histogram of bytes; u32 counts, compared exactly."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    n = int(p["n"])
    # skewed toward low values, so that shared-memory atomics collide as on real data
    data = np.minimum(rng.exponential(48.0, n), 255).astype(np.uint8)
    return {"data": data, "n": n, "hist": np.zeros(256, dtype=np.uint32)}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    return {"hist": np.bincount(inputs["data"], minlength=256).astype(np.uint32)}
