"""divergence: the kernel's three kinds of divergent control flow, replayed with numpy uint32 arithmetic
(wrapping, like the hardware)."""

import numpy as np

BRANCHES = 32  # length of the kernel's if / else-if chain


def inputs(p, rng):
    n = p["n"]
    return {
        "x": rng.integers(0, 2**32, n, dtype=np.uint32),
        "out": np.zeros(n, dtype=np.uint32),
        "n": n,
        "paths": p["paths"],
        "k": p["k"],
    }


def reference(p, inputs):
    u = np.uint32
    v = inputs["x"].copy()
    i = np.arange(p["n"], dtype=np.uint32)
    odd = (i & 1) == 1
    v = np.where(odd, v * u(3) + u(1), v >> u(1)).astype(np.uint32)
    # rem.u32 by 0 gives the dividend (trips = i for k = 0; branch i for paths = 0), as in the kernel
    trips = i % u(p["k"]) if p["k"] else i
    for t in range(int(trips.max(initial=0))):
        m = trips > t
        v[m] = v[m] * u(1664525) + u(1013904223)
    branch = i % u(p["paths"]) if p["paths"] else i
    for j in range(BRANCHES):
        m = branch == j
        w = v[m] * u(2 * j + 3) + u(7 * j + 1)
        w ^= w >> u(j % 13 + 3)
        w = w * u(4 * j + 5) + u(j + 11)
        w ^= w >> u(j % 7 + 9)
        v[m] = w
    return {"out": v}
