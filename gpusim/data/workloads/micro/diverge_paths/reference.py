"""diverge_paths: every thread runs its own 16-FFMA chain once per iteration (its path, once)."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    if int(p["paths"]) < 1:
        raise ValueError("paths must be at least 1")
    return {"out": np.zeros(int(p["threads"]), np.float32), "paths": int(p["paths"]), "iters": int(p["iters"])}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    x = (np.arange(int(p["threads"]), dtype=np.float32) * np.float32(0.001)).astype(np.float32)
    for _ in range(16 * int(p["iters"])):
        x = (x.astype(np.float64) * 0.999 + np.float64(np.float32(0.001))).astype(np.float32)
    return {"out": x}
