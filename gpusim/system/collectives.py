"""Ring collectives as chunked transfers on the node's links, and the alpha-beta cost model they are checked
against.

With N GPUs in a ring, S bytes, alpha the latency of one hop and beta the bandwidth one hop's flow gets
while every hop sends at once (a channel several flows share is divided between them):

- reduce-scatter (N-1 steps) and all-gather (N-1 steps): each step every GPU sends S/N bytes to the next
  and waits for S/N from the previous; time (N-1)(alpha + S/(N beta)), (N-1)/N S sent per GPU;
- all-reduce = reduce-scatter then all-gather: 2(N-1)(alpha + S/(N beta)), 2(N-1)/N S sent per GPU;
- broadcast: the root's data flows along the chain root, root+1, ... in chunks of c =
  `system.chunk_bytes`, each GPU forwarding a chunk as it arrives: (N-1)(alpha + c/beta) + (S-c)/beta.

The reduction arithmetic itself is not timed (S/N bytes at HBM bandwidth, small beside the links).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import simpy

from gpusim.config.schema import Config
from gpusim.errors import GpusimError
from gpusim.system.link import path_latency, transfer
from gpusim.system.topology import Topology

ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST = "all_reduce", "all_gather", "reduce_scatter", "broadcast"
KINDS = (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST)


def segments(nbytes: int, n: int) -> list[int]:
    """`nbytes` split into `n` near-equal segments (the first ones one byte longer)."""
    q, r = divmod(nbytes, n)
    return [q + (i < r) for i in range(n)]


def ring_steps(kind: str, n: int) -> int:
    """Ring steps of a collective: 2(N-1) for all-reduce, N-1 for the others."""
    return 2 * (n - 1) if kind == ALL_REDUCE else n - 1


def run_collective(env: simpy.Environment, topo: Topology, kind: str, nbytes: int, gpus: Sequence[int],
                   root: int = 0):
    """A SimPy process body running one collective over `gpus` (ring order); its value is the bytes each
    GPU sent, by GPU."""
    n = len(gpus)
    if n == 1:
        return {gpus[0]: 0}
    if kind == BROADCAST:
        start = gpus.index(root)
        sent = yield from _chain(env, topo, [gpus[(start + i) % n] for i in range(n)], nbytes)
        return sent
    seg = segments(nbytes, n)
    steps = ring_steps(kind, n)

    def segment_sent(pos: int, step: int) -> int:
        # reduce-scatter step k sends segment (pos - k); the all-gather that follows sends (pos + 1 - k)
        if kind == ALL_GATHER:
            return seg[(pos - step) % n]
        return seg[(pos - step) % n] if step < n - 1 else seg[(pos + 1 - (step - (n - 1))) % n]

    sent = yield from _ring(env, topo, gpus, steps, segment_sent)
    return sent


def _ring(env: simpy.Environment, topo: Topology, gpus: Sequence[int], steps: int, size_of):
    n = len(gpus)
    arrived = [[env.event() for _ in range(steps)] for _ in range(n)]
    sent = dict.fromkeys(gpus, 0)

    def member(pos: int):
        nxt = (pos + 1) % n
        path = topo.route(gpus[pos], gpus[nxt])
        for step in range(steps):
            if step:
                yield arrived[pos][step - 1]  # what it forwards now came in last step
            size = size_of(pos, step)
            yield from transfer(env, path, size, topo.chunk_bytes)
            sent[gpus[pos]] += size
            arrived[nxt][step].succeed()

    yield env.all_of([env.process(member(p)) for p in range(n)])
    return sent


def _chain(env: simpy.Environment, topo: Topology, chain: Sequence[int], nbytes: int):
    chunks = segments(nbytes, max(1, -(-nbytes // topo.chunk_bytes)))
    arrived = [[env.event() for _ in chunks] for _ in chain]
    sent = dict.fromkeys(chain, 0)

    def forward(h: int, j: int, path):
        yield from transfer(env, path, chunks[j], chunks[j])
        sent[chain[h]] += chunks[j]
        arrived[h + 1][j].succeed()

    def hop(h: int):
        # each chunk leaves as soon as it has arrived; the hop's channels keep the chunks in order
        path = topo.route(chain[h], chain[h + 1])
        moving = []
        for j in range(len(chunks)):
            if h:
                yield arrived[h][j]
            moving.append(env.process(forward(h, j, path)))
        yield env.all_of(moving)

    yield env.all_of([env.process(hop(h)) for h in range(len(chain) - 1)])
    return sent


# ---- the cost model -------------------------------------------------------------------------------


def ring_alpha_beta(topo: Topology, gpus: Sequence[int], kind: str = ALL_REDUCE) -> tuple[float, float]:
    """(alpha seconds, beta bytes/s) of the ring over `gpus`: alpha the slowest hop's latency, beta the
    least bandwidth a hop gets when all hops send at once (a channel used u times by the hops' paths
    gives each bandwidth / u)."""
    n = len(gpus)
    hops = [(gpus[p], gpus[(p + 1) % n]) for p in range(n - 1 if kind == BROADCAST else n)]
    paths = [topo.route(a, b) for a, b in hops]
    uses = Counter(channel for path in paths for stage in path for channel in stage)
    alpha = max(path_latency(path) for path in paths)
    beta = min(channel.bandwidth / count for channel, count in uses.items())
    return alpha, beta


def formula_seconds(kind: str, nbytes: int, n: int, alpha: float, beta: float, chunk_bytes: int) -> float:
    """The standard ring cost model (module docstring) for `n` GPUs."""
    if n == 1:
        return 0.0
    if kind == BROADCAST:
        c = min(chunk_bytes, nbytes)
        return (n - 1) * (alpha + c / beta) + (nbytes - c) / beta
    return ring_steps(kind, n) * (alpha + nbytes / n / beta)


@dataclass(frozen=True, slots=True)
class CollectiveResult:
    """One simulated collective: its time, the cost model's time, and the bytes each GPU sent."""

    kind: str
    nbytes: int
    gpus: tuple[int, ...]
    interconnect: str
    seconds: float
    formula_seconds: float
    alpha_seconds: float
    beta_bytes_per_second: float
    bytes_sent: dict[int, int]

    @property
    def error_pct(self) -> float:
        """How far the simulation is from the formula, in % of the formula."""
        return 100.0 * (self.seconds - self.formula_seconds) / self.formula_seconds if self.formula_seconds else 0.0


def simulate_collective(cfg: Config, kind: str, nbytes: int, gpus: Sequence[int] | None = None,
                        root: int = 0) -> CollectiveResult:
    """Run one collective alone on `cfg`'s node (all its GPUs unless `gpus` names some)."""
    if kind not in KINDS:
        raise GpusimError(f"collective {kind!r} is not one of {', '.join(KINDS)}")
    env = simpy.Environment()
    topo = Topology(env, cfg)
    members = tuple(range(cfg.system.gpus) if gpus is None else gpus)
    done = env.process(run_collective(env, topo, kind, nbytes, members, root))
    env.run()
    alpha, beta = ring_alpha_beta(topo, members, kind) if len(members) > 1 else (0.0, float("inf"))
    return CollectiveResult(kind, nbytes, members, topo.kind, env.now,
                            formula_seconds(kind, nbytes, len(members), alpha, beta, topo.chunk_bytes),
                            alpha, beta, done.value)
