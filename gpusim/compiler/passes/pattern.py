"""A pattern-rewrite engine (in the spirit of tinygrad's PatternMatcher and TVM's dataflow patterns):
rules are written as patterns over the graph plus a function building the replacement.

    >>> gelu = Rule("gelu-erf", P("mul", P("mul", V("x"), P("add", P("erf", P("div", V("x"), C(SQRT2))),
    ...                                                          C(1.0))), C(0.5)),
    ...             lambda new, node, m: new.gelu(m["x"], name=node.name).name)

A pattern is P(op, *inputs) (a node of that operator whose inputs match, in either order for add, mul,
maximum and minimum; no inputs given: any inputs), V() (any node) or C(value) (a constant whose every
element is `value`, within a relative 1e-3; C() any constant). `name=` captures the matched node;
a name captured twice must be the same node (x in the GELU above is read twice). `where=` adds a
predicate on the graph and the node. `PatternMatcher(rules)` is a pass: it walks the graph in
topological order and replaces each node by the first rule (in order) whose pattern matches it and
whose build returns a node (None: the rule declines), so rewrites cascade within one walk."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.passes.base import Change, rewrite
from gpusim.compiler.printer import format_node

COMMUTATIVE = frozenset({"add", "mul", "maximum", "minimum"})
SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True, slots=True)
class Pat:
    """A pattern: `op` (None: any node; `constant` with `value` for C), `inputs` (None: any), the name it
    captures, and an extra predicate."""

    op: str | None = None
    inputs: tuple[Pat, ...] | None = None
    name: str | None = None
    where: Callable[[Graph, Node], bool] | None = None
    value: float | None = None


def P(op: str, *inputs: Pat, name: str | None = None, where: Callable[[Graph, Node], bool] | None = None) -> Pat:
    """A node of operator `op` whose inputs match `inputs` (none given: any)."""
    return Pat(op, tuple(inputs) if inputs else None, name, where)


def V(name: str | None = None, where: Callable[[Graph, Node], bool] | None = None) -> Pat:
    """Any node."""
    return Pat(None, None, name, where)


def C(value: float | None = None, name: str | None = None) -> Pat:
    """A constant, every element `value` (relative 1e-3) when given."""
    return Pat("constant", None, name, None, value)


Match = dict[str, str]  # captured name -> node name


def match(graph: Graph, name: str, pat: Pat, bound: Match | None = None) -> Match | None:
    """The captures of `pat` matched at node `name` of `graph` (extending `bound`), or None."""
    bound = dict(bound or {})
    node = graph[name]
    if pat.name is not None:
        if bound.get(pat.name, name) != name:
            return None
        bound[pat.name] = name
    if pat.op is not None and node.op != pat.op:
        return None
    if pat.value is not None:
        v = node.attrs["value"]
        if v.size == 0 or not np.allclose(v, pat.value, rtol=1e-3, atol=0):
            return None
    if pat.where is not None and not pat.where(graph, node):
        return None
    if pat.inputs is None:
        return bound
    if len(pat.inputs) != len(node.inputs):
        return None
    orders = [node.inputs]
    if node.op in COMMUTATIVE and len(node.inputs) == 2:
        orders.append(node.inputs[::-1])
    for inputs in orders:
        found: Match | None = bound
        for i, p in zip(inputs, pat.inputs, strict=True):
            found = match(graph, i, p, found)
            if found is None:
                break
        if found is not None:
            return found
    return None


Build = Callable[[Graph, Node, Match], str | tuple[str, str] | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """Replace a node matching `pattern` by what `build(new graph, node, captures)` returns (a node name,
    or (kind, node name) to name the change more precisely than `kind`; None declines)."""

    kind: str
    pattern: Pat
    build: Build


class PatternMatcher:
    """A pass applying `rules` (tried in order at every node, rules for the node's operator only)."""

    def __init__(self, rules: Sequence[Rule]):
        self.rules = tuple(rules)
        self.by_op: dict[str | None, list[Rule]] = {}
        for r in self.rules:
            self.by_op.setdefault(r.pattern.op, []).append(r)

    def __call__(self, graph: Graph) -> tuple[Graph, list[Change]]:
        changes: list[Change] = []

        def rule(new: Graph, node: Node) -> str | None:
            candidates = self.by_op.get(node.op, []) + self.by_op.get(None, [])
            if not candidates or node.op == "parameter":
                return None
            # the node is not in `new` yet: match against a view holding it
            view = _With(new, node)
            for r in candidates:
                found = match(view, node.name, r.pattern)
                if found is None:
                    continue
                target = r.build(new, node, found)
                kind = r.kind
                if isinstance(target, tuple):
                    kind, target = target
                if target is not None:
                    after = format_node(new[target]) if target == node.name else f"%{target}"
                    changes.append(Change(kind, f"{format_node(node)} -> {after}"))
                    return target
            return None

        return rewrite(graph, rule), changes


class _With:
    """A graph as it is being rebuilt, plus the node being rewritten (not added yet)."""

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node = graph, node

    def __getitem__(self, name: str) -> Node:
        return self.node if name == self.node.name else self.graph[name]
