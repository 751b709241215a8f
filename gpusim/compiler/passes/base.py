"""What every pass shares: the record of one change, and a node-by-node rewriter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpusim.compiler.ir import Graph, Node


@dataclass(frozen=True, slots=True)
class Change:
    """One thing a pass did: its kind (what the pass manager counts) and a one-line description."""

    kind: str
    description: str


Pass = Callable[[Graph], tuple[Graph, list[Change]]]
Rule = Callable[[Graph, Node], str | None]


def rewrite(graph: Graph, rule: Rule) -> Graph:
    """A new graph built node by node in topological order. `rule(new, node)` sees the node with its inputs
    already replaced by what stands for them in `new`; it returns None to copy the node, or the name of the
    node of `new` that stands for it (an existing one, or one it added, usually under the node's own name)."""
    new = graph.derive()
    alias: dict[str, str] = {}
    for node in graph.topo_order():
        node = node.with_inputs(alias.get(i, i) for i in node.inputs)
        target = rule(new, node)
        if target is None:
            new.add_node(node)
        else:
            alias[node.name] = target
    for out, name in graph.outputs.items():
        new.output(alias.get(name, name), out)
    return new


def constant_value(graph: Graph, name: str) -> np.ndarray | None:
    """The value of node `name` if it is a constant, else None."""
    node = graph[name]
    return node.attrs["value"] if node.op == "constant" else None
