"""Shared memory: a scratchpad of `banks` banks, each `bank_width_bytes` wide. Lanes of a warp that
touch distinct words of one bank are served in separate wavefronts (a bank conflict); lanes reading
the same word share it (broadcast). The SM's shared-memory pipe serves one wavefront per cycle."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.timing.jit import njit, struct_type


class SharedMemoryPipes(NamedTuple):
    """Every SM's shared-memory pipe: when it takes its next wavefront, and its counters."""

    free_at: np.ndarray  # int64 per SM
    requests: np.ndarray
    wavefronts: np.ndarray
    ideal_wavefronts: np.ndarray
    latency: int


struct_type(SharedMemoryPipes)


def make_shared_memory(cfg: Config, sms: int) -> SharedMemoryPipes:
    z = lambda: np.zeros(sms, dtype=np.int64)  # noqa: E731
    return SharedMemoryPipes(z(), z(), z(), z(), cfg.shared_memory.latency_cycles)


@njit
def access(m, sm, t, wavefronts, ideal):
    """Serve one warp access at cycle `t` on SM `sm`; returns the cycle its data is usable."""
    start = m.free_at[sm] if m.free_at[sm] > t else t
    m.free_at[sm] = start + wavefronts
    m.requests[sm] += 1
    m.wavefronts[sm] += wavefronts
    m.ideal_wavefronts[sm] += ideal
    return start + m.latency + wavefronts - 1


class BankMap:
    """How a warp's shared-memory addresses fall on the banks (the LD/ST address stage uses it)."""

    def __init__(self, cfg: Config):
        spec = cfg.shared_memory
        self.banks = spec.banks
        self.bank_width = spec.bank_width_bytes

    def wavefronts_of(self, rows: np.ndarray, width: int) -> tuple[list[int], list[int]]:
        """Per row of per-lane byte addresses (-1: inactive) accessing `width` bytes each: the wavefronts
        the access needs, and the wavefronts a conflict-free access of as many bytes would need."""
        m = rows.shape[0]
        if m == 0:
            return [], []
        bw, banks = self.bank_width, self.banks
        words_per_lane = max(1, width // bw)
        active = rows >= 0
        words = np.where(active, rows // bw, -1)
        if words_per_lane > 1:
            words = (words[:, :, None] + np.arange(words_per_lane)).reshape(m, -1)
            words[np.repeat(~active, words_per_lane, axis=1)] = -1
        words = np.sort(words, axis=1)
        first = np.empty(words.shape, dtype=bool)
        first[:, 0] = True
        np.not_equal(words[:, 1:], words[:, :-1], out=first[:, 1:])
        first &= words >= 0
        r, c = np.nonzero(first)
        per_bank = np.bincount(r * banks + words[r, c] % banks, minlength=m * banks).reshape(m, banks)
        wave = np.maximum(per_bank.max(axis=1), 1)
        nbytes = active.sum(axis=1) * width
        ideal = np.maximum(-(-nbytes // (banks * bw)), 1)
        return wave.tolist(), ideal.tolist()
