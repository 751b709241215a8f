"""Fusion decided by cost: a `should_fuse` for the fuse pass that lowers both alternatives of a
FusionCandidate (template defaults) and fuses iff the one kernel costs less than the two apart (cycles,
launch overheads included)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower import lower_node
from gpusim.compiler.ops import Kind, kind_of
from gpusim.compiler.passes.fuse import FusionCandidate, ShouldFuse, fused_node
from gpusim.config import Config
from gpusim.errors import GpusimError


def cost_based_fusion(cost: CostModel, cfg: Config) -> ShouldFuse:
    """should_fuse(candidate): fused cost < unfused cost under `cost` on `cfg`."""

    def should_fuse(candidate: FusionCandidate) -> bool:
        fused, unfused = alternative_costs(candidate, cost, cfg)
        return fused < unfused or math.isinf(unfused)

    return should_fuse


def alternative_costs(candidate: FusionCandidate, cost: CostModel, cfg: Config) -> tuple[float, float]:
    """The cycles of the candidate's fused and unfused alternatives (inf: it cannot be lowered)."""
    if candidate.replacement:  # a rewrite (fused attention): each alternative's kernels over its nodes
        return (_kernels(cost, cfg, _graph(candidate.sources, candidate.replacement), candidate.fused.kernels),
                _kernels(cost, cfg, _graph(candidate.sources, candidate.nodes), candidate.unfused.kernels))
    members = [n.name for n in candidate.nodes]
    group = [m for m in members if m != candidate.producer]
    producer = next(n for n in candidate.nodes if n.name == candidate.producer)
    kind = "elementwise" if kind_of(producer.op) is Kind.OUT_FUSABLE else candidate.kind
    merged = _graph(candidate.sources, candidate.nodes)
    apart = _graph(candidate.sources, [producer])
    apart.add_node(fused_node(merged, candidate.root, kind, group) if len(group) > 1 else merged[group[0]])
    fused = _graph(candidate.sources, [fused_node(merged, candidate.root, candidate.kind, members)])
    return _cycles(cost, cfg, fused, [candidate.root]), _cycles(cost, cfg, apart, [candidate.producer,
                                                                                    candidate.root])


def _graph(sources: Iterable[Node], nodes: Iterable[Node]) -> Graph:
    """The nodes over their sources: constants as they are, anything else as a parameter."""
    g = Graph("candidate")
    for s in sources:
        g.add_node(s if s.op == "constant" else Node(s.name, "parameter", (), s.type))
    for n in nodes:
        g.add_node(n)
    return g


def _kernels(cost: CostModel, cfg: Config, graph: Graph, kernels: tuple[tuple[str, ...], ...]) -> float:
    """The cycles of `kernels` (node names each; several: fused, an epilogue when one is a matmul, a
    reduction when the last reduces) lowered from `graph`."""
    nodes = []
    for k in kernels:
        ops = [kind_of(graph[n].op) for n in k]
        kind = ("epilogue" if Kind.OUT_FUSABLE in ops else "reduction" if ops[-1] is Kind.REDUCTION
                else "elementwise")
        nodes.append(graph[k[0]] if len(k) == 1 else fused_node(graph, k[-1], kind, list(k)))
    try:
        return sum(cost.cost(lower_node(graph, n), cfg).cycles for n in nodes)
    except GpusimError:
        return math.inf


def _cycles(cost: CostModel, cfg: Config, graph: Graph, names: list[str]) -> float:
    try:
        return sum(cost.cost(lower_node(graph, graph[n]), cfg).cycles for n in names)
    except GpusimError:
        return math.inf
