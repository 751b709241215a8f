"""Shared memory: a scratchpad of `banks` banks, each `bank_width_bytes` wide. Lanes of a warp that
touch distinct words of one bank are served in separate wavefronts (a bank conflict); lanes reading
the same word share it (broadcast). The SM's shared-memory pipe serves one wavefront per cycle."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.timing.jit import njit, sort_prefix, struct_type


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
        """`wavefront_arrays` as lists."""
        wave, ideal = self.wavefront_arrays(rows, width)
        return wave.tolist(), ideal.tolist()

    def wavefront_arrays(self, rows: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Per row of per-lane byte addresses (-1: inactive) accessing `width` bytes each: the wavefronts
        the access needs (the most distinct words any one bank serves; at least 1), and the wavefronts a
        conflict-free access of as many bytes would need."""
        return _wavefronts(np.ascontiguousarray(rows, dtype=np.int64), max(1, width // self.bank_width),
                           self.bank_width, self.banks, width)


@njit
def _wavefronts(rows, words_per_lane, bank_width, banks, width):
    m, lanes = rows.shape
    wave = np.empty(m, np.int64)
    ideal = np.empty(m, np.int64)
    words = np.empty(lanes * words_per_lane, np.int64)
    per_bank = np.zeros(banks, np.int64)
    for i in range(m):
        n = 0
        for lane in range(lanes):
            a = rows[i, lane]
            if a >= 0:
                w0 = a // bank_width
                for k in range(words_per_lane):
                    words[n] = w0 + k
                    n += 1
        sort_prefix(words, n)
        ws = words
        most = 1
        for j in range(n):
            if j == 0 or ws[j] != ws[j - 1]:  # each distinct word once (lanes reading one word share it)
                b = ws[j] % banks
                per_bank[b] += 1
                if per_bank[b] > most:
                    most = per_bank[b]
        for j in range(n):
            per_bank[ws[j] % banks] = 0
        wave[i] = most
        nbytes = (n // words_per_lane) * width
        ideal[i] = max(-(-nbytes // (banks * bank_width)), 1)
    return wave, ideal
