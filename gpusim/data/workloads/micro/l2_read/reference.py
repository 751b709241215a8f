"""l2_read: thread g sums src[g], src[g + T], ... below `words`, `passes` times (mod 2^32)."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    words = int(p["words"])
    return {"src": rng.integers(0, 1 << 20, words, dtype=np.uint32),
            "out": np.zeros(int(p["grid"]) * int(p["block"]), np.uint32),
            "words": words, "passes": int(p["passes"])}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    src, T = inputs["src"].astype(np.int64), int(p["grid"]) * int(p["block"])
    sums = np.zeros(T, np.int64)
    np.add.at(sums, np.arange(src.size) % T, src)
    return {"out": (sums * int(p["passes"]) & 0xFFFFFFFF).astype(np.uint32)}
