"""Graphviz export: one box per node labelled `%name op` and its type, one edge per input, an oval per
graph output; a fused node is a cluster holding its body, labelled with its kind and member operators."""

from __future__ import annotations

from gpusim.compiler.ir import Graph
from gpusim.compiler.printer import fused_ops


def to_dot(graph: Graph) -> str:
    """The graph in Graphviz's dot language (render with `dot -Tsvg`)."""
    lines = [f"digraph {_quote(graph.name)} {{", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    ids = _emit(graph, "", {}, "  ", lines)
    for out, name in graph.outputs.items():
        lines.append(f"  {_quote('output:' + out)} [label={_quote(out)}, shape=oval];")
        lines.append(f"  {_quote(ids[name])} -> {_quote('output:' + out)};")
    lines.append("}")
    return "\n".join(lines)


def _emit(graph: Graph, prefix: str, outer: dict[str, str], indent: str, lines: list[str]) -> dict[str, str]:
    """Write `graph`'s nodes and edges; `outer` gives the dot id of each body parameter (the node it stands
    for outside). Returns every node's dot id (a fused node's is its body root's)."""
    ids = dict(outer)
    for node in graph.topo_order():
        if node.name in outer:
            continue
        if node.op == "fused":
            body = node.attrs["body"]
            kind = node.attrs["kind"]
            lines.append(f"{indent}subgraph {_quote('cluster_' + prefix + node.name)} {{")
            lines.append(f"{indent}  label={_quote(f'%{node.name} fused.{kind}: ' + ', '.join(fused_ops(node)))};")
            params = {p.name: ids[i] for p, i in zip(body.parameters(), node.inputs, strict=True)}
            inner = _emit(body, f"{prefix}{node.name}/", params, indent + "  ", lines)
            lines.append(f"{indent}}}")
            ids[node.name] = inner[next(iter(body.outputs.values()))]
            continue
        ids[node.name] = prefix + node.name
        label = _quote(f"%{node.name} {node.op}" + "\n" + str(node.type))
        shape = ", shape=oval" if node.op == "parameter" else ""
        lines.append(f"{indent}{_quote(ids[node.name])} [label={label}{shape}];")
        lines.extend(f"{indent}{_quote(ids[i])} -> {_quote(ids[node.name])};" for i in node.inputs)
    return ids


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
