"""Counters of a functional execution."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ExecStats:
    warp_size: int = 32  # lanes per warp (the config's sm.warp_size)
    blocks: int = 0
    warps: int = 0
    threads: int = 0
    warp_instructions: int = 0
    thread_instructions: int = 0  # active lanes (SIMT mask) summed over issued warp instructions
    predicated_off: int = 0  # active lanes whose guard predicate was false
    branches: int = 0
    divergent_branches: int = 0
    barriers: int = 0
    atomics: int = 0
    global_requests: int = 0  # warp instructions that access global memory (ld/st/atom/red): Nsight's requests
    global_bytes_read: int = 0
    global_bytes_written: int = 0
    shared_bytes_read: int = 0
    shared_bytes_written: int = 0
    by_unit: Counter = field(default_factory=Counter)
    per_pc: PcStats | None = field(default=None, repr=False, compare=False)  # per-instruction, when asked for

    def count_bytes(self, space: str, read: int = 0, written: int = 0) -> None:
        if space == "global":
            self.global_bytes_read += read
            self.global_bytes_written += written
        else:
            self.shared_bytes_read += read
            self.shared_bytes_written += written

    @property
    def simt_efficiency(self) -> float:
        """Active lanes per issued warp instruction, over the warp width (1.0: no divergence)."""
        return self.thread_instructions / (self.warp_size * self.warp_instructions) if self.warp_instructions else 0.0

    @property
    def global_bytes(self) -> int:
        return self.global_bytes_read + self.global_bytes_written

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("by_unit", "per_pc")}
        d["simt_efficiency"] = self.simt_efficiency
        d["warp_instructions_by_unit"] = {str(k): v for k, v in sorted(self.by_unit.items())}
        return d


@dataclass
class PcStats:
    """Per-instruction counters (index: pc), Nsight Compute's source counters: tallied from the warps'
    instruction streams (`tally`, one StreamChunk at a time). `sectors` and `wavefronts` depend on the
    memory's geometry and are added by whoever plans the accesses (gpusim.stats.source)."""

    warp_instructions: np.ndarray  # warps that executed it (inst_executed)
    thread_instructions: np.ndarray  # active lanes summed over them (thread_inst_executed)
    access_lanes: np.ndarray  # lanes that accessed memory (guard true), summed
    sectors: np.ndarray  # global: the sectors (l1.sector_size_bytes) each warp access touched, summed
    wavefronts: np.ndarray  # shared: the wavefronts each warp access needed, summed
    ideal_wavefronts: np.ndarray  # shared: the wavefronts a conflict-free access of as many bytes would need

    @classmethod
    def zeros(cls, pcs: int) -> PcStats:
        return cls(*(np.zeros(pcs, np.int64) for _ in range(6)))

    def tally(self, chunk) -> None:
        """Add a StreamChunk's instructions (gpusim.functional.stream): per pc the warps, their active
        lanes and the lanes of their memory accesses."""
        n = self.warp_instructions.size
        if chunk.pcs.size:
            self.warp_instructions += np.bincount(chunk.pcs, minlength=n)
            lanes = np.bitwise_count(chunk.masks).astype(np.int64)
            self.thread_instructions += np.bincount(chunk.pcs, weights=lanes, minlength=n).astype(np.int64)
        acc = chunk.accesses
        if acc is not None and acc.pcs.size:
            on = (acc.rows >= 0).sum(axis=1)
            self.access_lanes += np.bincount(acc.pcs, weights=on, minlength=n).astype(np.int64)
