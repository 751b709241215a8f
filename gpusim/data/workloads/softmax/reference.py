"""Row-wise softmax, computed in float64 and rounded to float32."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    rows, cols = int(p["rows"]), int(p["cols"])
    return {
        "x": (3.0 * rng.standard_normal((rows, cols))).astype(np.float32),
        "y": np.zeros((rows, cols), dtype=np.float32),
        "cols": cols,
    }


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}
