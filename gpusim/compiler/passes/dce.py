"""Dead-code elimination: nodes no output depends on are removed. Parameters stay (they are the graph's
signature)."""

from __future__ import annotations

from gpusim.compiler.ir import Graph
from gpusim.compiler.passes.base import Change
from gpusim.compiler.printer import format_node


def eliminate_dead_code(graph: Graph) -> tuple[Graph, list[Change]]:
    """Remove every node no output reads. Change kind: `dce`."""
    live = {n.name for n in graph.topo_order(graph.outputs.values())}
    new, changes = graph.derive(), []
    for node in graph.topo_order():
        if node.name in live or node.op == "parameter":
            new.add_node(node)
        else:
            changes.append(Change("dce", f"{format_node(node)} (unused)"))
    for out, name in graph.outputs.items():
        new.output(name, out)
    return new, changes
