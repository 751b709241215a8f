"""256-bin histogram of bytes; u32 counts, compared exactly."""

from __future__ import annotations

import numpy as np

# the bytes are drawn this many at a time: the same values as one draw of n (numpy's Generator draws in
# sequence), without n float64 and their clipped copy at once (n = 2^28: 14 CPU s -> 2.5, mostly page faults)
CHUNK = 1 << 22


def inputs(p: dict, rng: np.random.Generator) -> dict:
    n = int(p["n"])
    # skewed toward low values, so that shared-memory atomics collide as on real data
    data = np.empty(n, dtype=np.uint8)
    for i in range(0, n, CHUNK):
        x = rng.exponential(48.0, min(CHUNK, n - i))
        data[i:i + x.size] = np.minimum(x, 255, out=x)
    return {"data": data, "n": n, "hist": np.zeros(256, dtype=np.uint32)}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    # counted CHUNK bytes at a time: bincount widens its input to 64-bit integers (n = 2^28: 2 GiB at once)
    data = inputs["data"]
    counts = np.zeros(256, dtype=np.int64)
    for i in range(0, data.size, CHUNK):
        counts += np.bincount(data[i:i + CHUNK], minlength=256)
    return {"hist": counts.astype(np.uint32)}
