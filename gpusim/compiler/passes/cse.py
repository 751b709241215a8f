"""Common sub-expression elimination: a node computing what an earlier node computes (same operator,
same inputs, same attributes; inputs in either order for add and mul; constants by value) is replaced
by the earlier one. Parameters are never merged."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.passes.base import Change, rewrite
from gpusim.compiler.printer import format_graph, format_node

COMMUTATIVE = frozenset({"add", "mul"})


def eliminate_common_subexpressions(graph: Graph) -> tuple[Graph, list[Change]]:
    """Merge nodes that compute the same value. Change kind: `cse`."""
    changes: list[Change] = []
    first: dict[Hashable, str] = {}

    def rule(new: Graph, node: Node) -> str | None:
        if node.op == "parameter":
            return None
        key = _key(node)
        if key not in first:
            first[key] = node.name
            return None
        changes.append(Change("cse", f"{format_node(node)} -> %{first[key]}"))
        return first[key]

    return rewrite(graph, rule), changes


def _key(node: Node) -> Hashable:
    inputs = tuple(sorted(node.inputs)) if node.op in COMMUTATIVE else node.inputs
    return node.op, inputs, node.type, tuple((k, _hashable(v)) for k, v in sorted(node.attrs.items()))


def _hashable(value) -> Hashable:
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, Graph):
        return format_graph(value, canonical=True)
    return value
