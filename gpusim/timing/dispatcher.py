"""The GigaThread engine: hands thread blocks to SMs in block order. It first fills every SM up to
the occupancy limit, breadth first across GPCs, then places the next block on an SM as soon as one
of that SM's blocks retires. Placing a block takes `block_dispatch_cycles`."""

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
        self.retired = simpy.Store(env)  # (sm, end cycle) messages from the SMs
        self.timeline: list[tuple[int, int, int, int]] = []  # (block, sm, start, end)
        self.end = 0
        self.process = env.process(self.run())

    def block_done(self, sm, block: int, start: int, end: int) -> None:
        """Called by an SM when a block's last warp has retired (and drained by `end`)."""
        self.timeline.append((block, sm.index, start, end))
        self.retired.put((sm, end))

    def run(self):
        env = self.env
        outstanding = 0
        for _ in range(self.blocks_per_sm):
            for sm in self.sms:
                stream = next(self.blocks, None)
                if stream is None:
                    break
                sm.deliver(int(env.now) + self.dispatch_cycles, stream)
                outstanding += 1
        while outstanding:
            sm, end = yield self.retired.get()
            outstanding -= 1
            self.end = max(self.end, end)
            stream = next(self.blocks, None)
            if stream is not None:
                sm.deliver(max(end, int(env.now)) + self.dispatch_cycles, stream)
                outstanding += 1
        for sm in self.sms:
            sm.finished = True
