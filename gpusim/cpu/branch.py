"""The branch predictor: each conditional branch (per hardware thread and pc) is predicted to go the way
it went last time; its first execution is predicted taken if it jumps backwards (a loop) and not taken if
forwards. A SIMD group's branch is taken when the functional executor's warp went to the target next (for
a divergent branch, the side the masked code runs first). Each misprediction costs
`cpu.branch_mispredict_penalty_cycles`. Data-dependent branches (a lane's parity, a hash) mispredict about
half the time; loop branches twice per loop (exit and re-entry)."""

from __future__ import annotations

import numpy as np


def mispredictions(h: np.ndarray, seq: np.ndarray, pcs: np.ndarray, taken: np.ndarray, target: np.ndarray,
                   threads: int) -> np.ndarray:
    """Mispredicted branches per hardware thread."""
    if not h.size:
        return np.zeros(threads, dtype=np.int64)
    order = np.lexsort((seq, pcs, h))
    hh, pp, tk = h[order], pcs[order], taken[order]
    predicted = target[pp] <= pp  # the static guess: backward taken
    again = np.zeros(hh.size, dtype=bool)
    again[1:] = (hh[1:] == hh[:-1]) & (pp[1:] == pp[:-1])
    predicted[1:] = np.where(again[1:], tk[:-1], predicted[1:])
    return np.bincount(hh[predicted != tk], minlength=threads)
