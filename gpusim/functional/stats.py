"""Counters of a functional execution."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


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
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "by_unit"}
        d["simt_efficiency"] = self.simt_efficiency
        d["warp_instructions_by_unit"] = {str(k): v for k, v in sorted(self.by_unit.items())}
        return d
