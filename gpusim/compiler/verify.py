"""The verifier: every node's operator known, its inputs nodes of the graph, no cycles, its attributes
those of its operator, and its declared type the one its inputs give."""

from __future__ import annotations

from gpusim.compiler.errors import GraphError
from gpusim.compiler.ir import Graph
from gpusim.compiler.ops import infer_type


def verify(graph: Graph) -> None:
    """Check `graph` (and every fused body in it); GraphError naming the first bad node and its operator."""
    if not graph.outputs:
        raise GraphError(f"graph '{graph.name}' has no outputs")
    for out, name in graph.outputs.items():
        if name not in graph:
            raise GraphError(f"output '{out}' names no node of the graph", node=name)
    for node in graph.topo_order():
        if node.op == "fused":
            body = node.attrs.get("body")
            if not isinstance(body, Graph):
                raise GraphError(f"body is a Graph, not {type(body).__name__}", node=node.name, op=node.op)
            try:
                verify(body)
            except GraphError as e:
                raise GraphError(f"in its body: {e}", node=node.name, op=node.op) from None
        try:
            t = infer_type(node.op, tuple(graph[i].type for i in node.inputs), node.attrs)
        except GraphError as e:
            raise GraphError(e.reason, node=node.name, op=node.op) from None
        if t is not None and t != node.type:
            raise GraphError(f"declared type {node.type}, but its inputs give {t}", node=node.name, op=node.op)
