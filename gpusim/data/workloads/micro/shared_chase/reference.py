"""shared_chase: every load returns its own address, so thread t ends where it started."""

from __future__ import annotations

import numpy as np


def inputs(p: dict, rng: np.random.Generator) -> dict:
    return {"out": np.zeros(int(p["threads"]) * int(p["blocks"]), np.uint32), "stride": int(p["stride"]),
            "iters": int(p["iters"])}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    lane = np.arange(int(p["threads"]) * int(p["blocks"]), dtype=np.int64) % 32
    return {"out": ((lane * int(p["stride"])) % 1024 * 4).astype(np.uint32)}
