"""Operator fusion: groups of nodes become one `fused` node (one kernel), decided by operator kinds
(ops.py) and a pluggable `should_fuse(candidate) -> bool`.

Groups grow backwards from a root (walked from the outputs up), absorbing one producer at a time, the
latest in topological order first. A producer may join when it is not a graph output, every node reading
it is already in the group (so the group keeps one result and stays convex), and:

- element-wise and broadcast producers join any group (so chains and diamonds of them fuse);
- a matmul joins a group that has no matmul or reduction yet, when every group node downstream of it has
  its output shape: the group becomes an *epilogue* (matmul + bias add + activation); the matmul's own
  inputs never join (no prologue before a matmul);
- a reduction (reduce_sum, reduce_mean, softmax, layernorm) is only ever a root: its element-wise producers
  join as a prologue (reduce_sum(x * x) is one kernel), and its consumers start a group of their own.
  softmax and layernorm stay whole operators (not decomposed), so they anchor such groups;
- injective (transpose, reshape) and opaque nodes never fuse.

Each legal merge is put to `should_fuse` as a FusionCandidate (the nodes, their types, and the bytes each
alternative reads and writes), default `fuse_when_legal`. A group of two or more nodes becomes a fused node
named after its root, so outputs and users keep their names; its kind is `elementwise`, `epilogue` or
`reduction`.

Before grouping, two rewrites of passes/rules.py run where `should_fuse` accepts their candidate (its
`replacement` the new nodes, `fused` and `unfused` the kernels with and without it):

- kind `horizontal`: projections of one operand (x @ wq, x @ wk, x @ wv, each read by its head-split
  transpose) become one batched matmul read by remaps that replace the transposes; `unfused` the
  matmuls and transposes, `fused` the concat of the weights (unless they are constants), the batched
  matmul and the remaps;
- kind `attention`: matmul -> [scale] -> softmax -> matmul becomes a `fused_attention` node (one
  flash-attention kernel, lower/attention.py); `unfused` the three kernels the chain is otherwise (the
  first matmul, the scale and softmax, the second matmul).

The absorbed nodes are dropped at once, so they are neither grouped nor lowered."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.ops import Kind, kind_of
from gpusim.compiler.passes.base import Change
from gpusim.compiler.passes.dce import eliminate_dead_code
from gpusim.compiler.passes.pattern import PatternMatcher
from gpusim.compiler.passes.rules import Projection, attention_rules, batch_projections
from gpusim.compiler.tensor import TensorType

JOINING = frozenset({Kind.ELEMENTWISE, Kind.BROADCAST})
ROOTS = JOINING | {Kind.REDUCTION}
NO_KERNEL = ("parameter", "constant", "reshape")  # inputs, values, views (as lowering has them)


@dataclass(frozen=True, slots=True)
class Alternative:
    """One way to run a candidate's nodes: as these kernels (node names each, topological order), each
    reading its inputs from memory and writing its result back; the bytes all of them read and write."""

    kernels: tuple[tuple[str, ...], ...]
    bytes_read: int
    bytes_written: int


@dataclass(frozen=True, slots=True)
class FusionCandidate:
    """A proposed merge: `producer` joins the group whose result is `root`, giving a group of `kind`.
    `nodes` are the merged group's nodes (topological order, the root last) with their shapes and dtypes,
    `inputs` the tensors it reads from outside; `fused` runs it as one kernel, `unfused` as the group so
    far and the producer apart; `sources` are the nodes behind `inputs` (parameters, constants with
    their values, other results), so that a cost model can build both alternatives. A rewrite candidate
    (kinds `horizontal`, `attention`) has `replacement`: the nodes standing for `nodes` when it is taken;
    `fused` and `unfused` then name kernels of the replacement and of `nodes` (a kernel of several
    nodes: them fused)."""

    kind: str
    root: str
    producer: str
    nodes: tuple[Node, ...]
    inputs: tuple[TensorType, ...]
    output: TensorType
    fused: Alternative
    unfused: Alternative
    sources: tuple[Node, ...] = ()
    replacement: tuple[Node, ...] = ()

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(n.op for n in self.nodes)


ShouldFuse = Callable[[FusionCandidate], bool]


def fuse_when_legal(candidate: FusionCandidate) -> bool:
    """The default decision: every legal merge is taken; a rewrite (batch-matmul, fuse-attention) only
    where a cost model says it pays (cost_based_fusion), so never here."""
    return not candidate.replacement


def fuse(graph: Graph, should_fuse: ShouldFuse = fuse_when_legal) -> tuple[Graph, list[Change]]:
    """Fuse as the module doc says. Change kinds: `batch-matmul`, `fuse-attention`, `fuse-elementwise`,
    `fuse-epilogue`, `fuse-reduction`."""
    graph, rewrites = batch_projections(graph, partial(_batch_decision, should_fuse))
    if rewrites:  # the stacked constants' parts
        graph, _ = eliminate_dead_code(graph)
    graph, attention = _fuse_attention(graph, should_fuse)
    rewrites += attention
    grouper = _Grouper(graph, should_fuse)
    groups: dict[str, tuple[str, list[str]]] = {}  # root -> (kind, members in topological order)
    owner: dict[str, str] = {}
    for root in reversed(grouper.order):
        if root.name not in owner and kind_of(root.op) in ROOTS:
            kind, members = grouper.grow(root, owner)
            if len(members) > 1:
                groups[root.name] = kind, members
                owner.update((m, root.name) for m in members)
    new, changes = graph.derive(), rewrites
    for node in grouper.order:
        if node.name not in owner:
            new.add_node(node)
        elif owner[node.name] == node.name:
            kind, members = groups[node.name]
            new.add_node(fused_node(graph, node.name, kind, members))
            ops = ", ".join(graph[m].op for m in members)
            changes.append(Change(f"fuse-{kind}", f"%{node.name} = fused.{kind}: {ops}"))
    for out, name in graph.outputs.items():
        new.output(name, out)
    return new, changes


def _batch_decision(should_fuse: ShouldFuse, new: Graph, projections: tuple[Projection, ...],
                    replacement: tuple[Node, ...]) -> bool:
    """should_fuse on the `horizontal` candidate of a group of projections (passes/rules.py)."""
    nodes = tuple(n for p in projections for n in (p.matmul, p.reshape, p.transpose) if n is not None)
    inside = {n.name for n in (*nodes, *replacement)}
    sources = {i: new[i] for n in (*nodes, *replacement) for i in n.inputs if i not in inside}
    known = {n.name: n for n in (*nodes, *replacement, *sources.values())}

    def alternative(group: tuple[Node, ...]) -> Alternative:
        """A kernel per computing node (reshapes are views), each reading its inputs and writing its result."""
        computing = [n for n in group if n.op not in NO_KERNEL]
        return Alternative(tuple((n.name,) for n in computing),
                           sum(known[i].type.nbytes for n in computing for i in dict.fromkeys(n.inputs)),
                           sum(n.type.nbytes for n in computing))

    last = projections[-1].transpose
    return should_fuse(FusionCandidate(
        "horizontal", last.name, projections[0].matmul.name, nodes, tuple(s.type for s in sources.values()),
        last.type, alternative(replacement), alternative(nodes), tuple(sources.values()), replacement))


def _fuse_attention(graph: Graph, should_fuse: ShouldFuse) -> tuple[Graph, list[Change]]:
    """Attention chains rewritten to fused_attention where `should_fuse` takes their candidate."""

    def decide(new: Graph, fused: Node, chain: tuple[Node, ...]) -> bool:
        inside = {n.name: n for n in chain}
        sources = {i: new[i] for n in chain for i in n.inputs if i not in inside}
        nbytes = {n.name: n.type.nbytes for n in (*chain, *sources.values())}
        first, *middle, root = chain
        unfused = ((first.name,), tuple(n.name for n in middle), (root.name,))
        read = sum(nbytes[i] for k in unfused for i in dict.fromkeys(
            j for n in k for j in inside[n].inputs if j not in k))
        candidate = FusionCandidate(
            "attention", root.name, first.name, chain, tuple(new[i].type for i in fused.inputs), root.type,
            Alternative(((root.name,),), sum(nbytes[i] for i in dict.fromkeys(fused.inputs)), root.type.nbytes),
            Alternative(unfused, read, sum(nbytes[k[-1]] for k in unfused)), tuple(sources.values()), (fused,))
        return should_fuse(candidate)

    new, changes = PatternMatcher(attention_rules(graph, decide))(graph)
    if changes:
        new, _ = eliminate_dead_code(new)
    return new, changes


class _Grouper:
    """The graph's order, users and outputs, and the growth of one group."""

    def __init__(self, graph: Graph, should_fuse: ShouldFuse):
        self.graph, self.should_fuse = graph, should_fuse
        self.order = graph.topo_order()
        self.index = {n.name: i for i, n in enumerate(self.order)}
        self.users = graph.users()
        self.outputs = set(graph.outputs.values())

    def grow(self, root: Node, owner: dict[str, str]) -> tuple[str, list[str]]:
        """The group grown from `root` (kind, members in topological order); `owner` marks nodes in others."""
        kind = "reduction" if kind_of(root.op) is Kind.REDUCTION else "elementwise"
        members = {root.name}
        heap = [(-self.index[i], i) for i in set(root.inputs)]
        heapq.heapify(heap)
        seen = set()
        while heap:
            _, name = heapq.heappop(heap)
            if name in seen:
                continue
            seen.add(name)
            node = self.graph[name]
            if name in owner or name in self.outputs or not set(self.users[name]) <= members:
                continue
            merged = self._merged_kind(node, kind, members)
            if merged is None or not self.should_fuse(self._candidate(root.name, members, node, merged)):
                continue
            members.add(name)
            kind = merged
            if kind_of(node.op) is not Kind.OUT_FUSABLE:
                for i in node.inputs:
                    heapq.heappush(heap, (-self.index[i], i))
        return kind, self._sorted(members)

    def _merged_kind(self, node: Node, kind: str, members: set[str]) -> str | None:
        k = kind_of(node.op)
        if k in JOINING:
            return kind
        if k is Kind.OUT_FUSABLE and kind == "elementwise":
            downstream, todo = set(), [node.name]
            while todo:
                for u in self.users[todo.pop()]:
                    if u in members and u not in downstream:
                        downstream.add(u)
                        todo.append(u)
            if all(self.graph[d].shape == node.shape for d in downstream):
                return "epilogue"
        return None

    def _candidate(self, root: str, members: set[str], producer: Node, kind: str) -> FusionCandidate:
        group = self._sorted(members)
        merged = self._sorted(members | {producer.name})
        inputs = _external_inputs(self.graph, merged)
        fused = Alternative((tuple(merged),), self._bytes(inputs), self.graph[root].type.nbytes)
        unfused = Alternative(
            (tuple(group), (producer.name,)),
            self._bytes(_external_inputs(self.graph, group)) + self._bytes(dict.fromkeys(producer.inputs)),
            self.graph[root].type.nbytes + producer.type.nbytes)
        return FusionCandidate(kind, root, producer.name, tuple(self.graph[m] for m in merged),
                               tuple(self.graph[i].type for i in inputs), self.graph[root].type, fused, unfused,
                               tuple(self.graph[i] for i in inputs))

    def _bytes(self, names: Iterable[str]) -> int:
        return sum(self.graph[n].type.nbytes for n in names)

    def _sorted(self, names: Iterable[str]) -> list[str]:
        return sorted(names, key=self.index.__getitem__)


def _external_inputs(graph: Graph, members: list[str]) -> list[str]:
    """The inputs of `members` made outside them, each once, in order of first use."""
    inside = set(members)
    return list(dict.fromkeys(i for m in members for i in graph[m].inputs if i not in inside))


def fused_node(graph: Graph, root: str, kind: str, members: list[str]) -> Node:
    """The fused node standing for `members` of `graph` (topological order, `root` last): its body holds
    them, with a parameter per outside input."""
    inputs = _external_inputs(graph, members)
    body = Graph(root)
    for i in inputs:
        body.add_node(Node(i, "parameter", (), graph[i].type))
    for m in members:
        body.add_node(graph[m])
    body.output(root)
    return Node(root, "fused", tuple(inputs), graph[root].type, {"kind": kind, "body": body})
