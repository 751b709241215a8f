"""atomic_add: counters[(g mod spread) * pitch] += iters for every thread g of the grid."""

from __future__ import annotations

import math

import numpy as np


def _threads(p: dict) -> int:
    return math.ceil(int(p["n"]) / int(p["block"])) * int(p["block"])


def inputs(p: dict, rng: np.random.Generator) -> dict:
    spread, pitch = int(p["spread"]), int(p["pitch"])
    if spread < 1 or pitch < 1:
        raise ValueError("spread and pitch must be at least 1")
    return {"counters": np.zeros((spread - 1) * pitch + 1, np.uint32), "spread": spread, "pitch": pitch,
            "iters": int(p["iters"])}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    out = np.zeros_like(inputs["counters"], dtype=np.int64)
    g = np.arange(_threads(p))
    np.add.at(out, (g % int(p["spread"])) * int(p["pitch"]), int(p["iters"]))
    return {"counters": (out & 0xFFFFFFFF).astype(np.uint32)}
