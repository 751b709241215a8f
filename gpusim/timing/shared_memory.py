"""Shared memory: a scratchpad of `banks` banks, each `bank_width_bytes` wide. Lanes of a warp that
touch distinct words of one bank are served in separate wavefronts (a bank conflict); lanes reading
the same word share it (broadcast). The SM's shared-memory pipe serves one wavefront per cycle."""

from __future__ import annotations

import numpy as np

from gpusim.config import Config


class SharedMemory:
    def __init__(self, cfg: Config):
        spec = cfg.shared_memory
        self.banks = spec.banks
        self.bank_width = spec.bank_width_bytes
        self.latency = spec.latency_cycles
        self.free_at = 0
        self.requests = 0
        self.wavefronts = 0
        self.ideal_wavefronts = 0

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

    def access(self, t: int, wavefronts: int, ideal: int) -> int:
        """Serve one warp access at cycle `t`; returns the cycle its data is usable."""
        start = self.free_at if self.free_at > t else t
        self.free_at = start + wavefronts
        self.requests += 1
        self.wavefronts += wavefronts
        self.ideal_wavefronts += ideal
        return start + self.latency + wavefronts - 1
