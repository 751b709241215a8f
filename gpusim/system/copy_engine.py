"""A GPU's copy engines: DMA units that move data between host memory and device memory over PCIe."""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from gpusim.system.host import HostMemory
from gpusim.system.link import Stage
from gpusim.system.pcie import PcieLink

H2D, D2H = "h2d", "d2h"


@dataclass(frozen=True, slots=True)
class CopyEngine:
    """One DMA engine of one GPU. A copy holds its engine from start to end, so a GPU with one engine
    runs one copy at a time whatever its direction."""

    gpu: int
    index: int

    @property
    def name(self) -> str:
        return f"copy engine {self.index}"


class CopyEngines:
    """A GPU's `chip.copy_engines` engines; a copy takes the first free one (first come, first served)."""

    def __init__(self, env: simpy.Environment, gpu: int, count: int):
        self.pool = simpy.Store(env, capacity=count)
        self.pool.items.extend(CopyEngine(gpu, i) for i in range(count))

    def acquire(self) -> simpy.events.Event:
        """An event whose value is a free engine."""
        return self.pool.get()

    def release(self, engine: CopyEngine) -> None:
        self.pool.put(engine)


def copy_path(direction: str, nbytes: int, pinned: bool, link: PcieLink, host: HostMemory,
              name: str) -> tuple[list[Stage], int]:
    """The path of a host-device copy and its chunk size. A pinned buffer is DMA'd in one piece over the
    link; a pageable one moves in staging-buffer chunks, each passing the CPU memcpy and the link in turn
    (host memcpy first for H2D, last for D2H), the two overlapping on successive chunks."""
    channel = link.h2d if direction == H2D else link.d2h
    if pinned:
        return [(channel,)], max(nbytes, 1)
    memcpy = host.memcpy_stage(f"{name} staging memcpy")
    path = [memcpy, (channel,)] if direction == H2D else [(channel,), memcpy]
    return path, host.staging_buffer_bytes
