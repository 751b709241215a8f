"""The GigaThread engine: hands thread blocks to SMs in block order. It first fills every SM up to
the occupancy limit, breadth first across GPCs, then places the next block on an SM as soon as one
of that SM's blocks retires. Placing a block takes `block_dispatch_cycles`.

An SM runs ahead of SimPy's clock, so a retirement is answered at once (in the SM's own call) rather
than by a message the engine would read some events later: the SM must know of its next block before it
moves its own clock on."""

from __future__ import annotations

from collections.abc import Iterator

import simpy


class GigaThreadEngine:
    def __init__(self, env: simpy.Environment, sms: list, blocks: Iterator, blocks_per_sm: int,
                 dispatch_cycles: int):
        self.env = env
        self.sms = sms  # in dispatch order (interleaved over GPCs)
        self.blocks = blocks
        self.blocks_per_sm = blocks_per_sm
        self.dispatch_cycles = dispatch_cycles
        self.timeline: list[tuple[int, int, int, int]] = []  # (block, sm, start, end)
        self.end = 0
        self.outstanding = 0  # blocks placed and not yet retired
        self.all_done = env.event()
        self.process = env.process(self.run())

    def block_done(self, sm, block: int, start: int, end: int) -> None:
        """Called by an SM when a block's last warp has retired (and drained by `end`): place the next
        block there."""
        self.timeline.append((block, sm.index, start, end))
        self.outstanding -= 1
        self.end = max(self.end, end)
        stream = next(self.blocks, None)
        if stream is not None:
            sm.deliver(end + self.dispatch_cycles, stream)
            self.outstanding += 1
        elif self.outstanding == 0:
            self.all_done.succeed()

    def run(self):
        for _ in range(self.blocks_per_sm):
            for sm in self.sms:
                stream = next(self.blocks, None)
                if stream is None:
                    break
                sm.deliver(int(self.env.now) + self.dispatch_cycles, stream)
                self.outstanding += 1
        if self.outstanding:
            yield self.all_done
        for sm in self.sms:
            sm.finished = True
