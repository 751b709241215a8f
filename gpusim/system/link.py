"""One direction of a link as a first-come-first-served server, and transfers that move chunk by chunk
through a path of them.

A `Channel` carries one chunk at a time at its bandwidth (a chunk of b bytes holds it b / bandwidth
seconds) and delivers it `latency` seconds after it leaves, so back-to-back chunks stream at the full
bandwidth and pay the latency once. A path is a list of stages; a stage is one or more channels a chunk
holds together (a switch's input and output port), the next stage starts when the chunk arrives. Chunks
of one transfer pipeline through the stages: a path's time is its latency, plus the slowest stage's
time for the whole transfer, plus one chunk's time in each faster stage.
"""

from __future__ import annotations

from collections.abc import Sequence

import simpy

Stage = tuple["Channel", ...]


class Channel:
    """One direction of a link (or a memory port): `bandwidth` bytes per second, `latency` seconds from a
    chunk leaving to it arriving."""

    __slots__ = ("name", "bandwidth", "latency", "server")

    def __init__(self, env: simpy.Environment, name: str, bandwidth: float, latency: float):
        self.name, self.bandwidth, self.latency = name, bandwidth, latency
        self.server = simpy.Resource(env, capacity=1)

    def __repr__(self) -> str:
        return f"Channel({self.name!r}, {self.bandwidth / 1e9:g} GB/s, {self.latency * 1e9:g} ns)"


def chunk_sizes(nbytes: int, chunk_bytes: int) -> list[int]:
    """`nbytes` cut into chunks of `chunk_bytes` (the last one shorter); one empty chunk for 0 bytes."""
    full, rest = divmod(nbytes, chunk_bytes)
    return [chunk_bytes] * full + ([rest] if rest or not full else [])


def transfer(env: simpy.Environment, path: Sequence[Stage], nbytes: int, chunk_bytes: int,
             started: simpy.Event | None = None):
    """A SimPy process body: move `nbytes` along `path` in chunks of `chunk_bytes`; ends when the last
    chunk has arrived. `started`, if given, succeeds with the time the first chunk got its first stage."""
    sizes = chunk_sizes(nbytes, chunk_bytes)
    chunks = [env.process(_move_chunk(env, path, size, started if i == 0 else None)) for i, size in enumerate(sizes)]
    yield env.all_of(chunks)


def _move_chunk(env: simpy.Environment, path: Sequence[Stage], size: int, started: simpy.Event | None):
    for stage in path:
        # Take a stage's channels in order (every path names the sender's port before the receiver's),
        # so no two chunks can each hold a port the other waits for.
        requests = []
        for channel in stage:
            request = channel.server.request()
            requests.append(request)
            yield request
        if started is not None and not started.triggered:
            started.succeed(env.now)
        seconds = size / min(c.bandwidth for c in stage)
        yield env.timeout(seconds)
        for channel, request in zip(stage, requests, strict=True):
            channel.server.release(request)
        yield env.timeout(sum(c.latency for c in stage))


def path_latency(path: Sequence[Stage]) -> float:
    """Seconds a zero-byte chunk takes along `path`: the sum of its channels' latencies."""
    return sum(c.latency for stage in path for c in stage)
