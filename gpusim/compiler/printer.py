"""The text form of a graph, one node per line:

    graph mlp2
      %x = parameter() : f32[32,64]
      %4 = softmax(%3) {axis=1} : f32[32,10]
      %7 = fused.epilogue(%x, %w1, %b1) : f32[32,128] {
          %0 = matmul(%x, %w1) : f32[32,128]
          ...
      }
      output y = %4

A fused node's body follows it in braces (its parameters are the fused node's inputs, its last node the
result). `canonical=True` renames every node but parameters by its position in a depth-first walk from the
outputs, so structurally equal graphs print the same text whatever their node names and insertion order."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from gpusim.compiler.tensor import TensorType

SHOWN_VALUES = 8  # constants with at most this many elements print their values


class NodeView(Protocol):
    """What printing reads of a node (ir.Node). The IR prints itself with this module, so this module
    names what it reads instead of importing the IR."""

    @property
    def name(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def inputs(self) -> tuple[str, ...]: ...
    @property
    def type(self) -> TensorType: ...
    @property
    def attrs(self) -> Mapping[str, Any]: ...


class GraphView(Protocol):
    """What printing reads of a graph (ir.Graph)."""

    name: str
    outputs: dict[str, str]

    def parameters(self) -> list[NodeView]: ...
    def topo_order(self, start: Iterable[str] | None = None) -> list[NodeView]: ...


def format_graph(graph: GraphView, *, canonical: bool = False) -> str:
    """The graph as text (see the module doc)."""
    lines = [f"graph {graph.name}"]
    _format_body(graph, _Renamer(canonical, {p.name: p.name for p in graph.parameters()}), "  ", lines, nested=False)
    return "\n".join(lines)


def format_node(node: NodeView, rename: Callable[[str], str] = str) -> str:
    """One node's line: `%name = op(%a, %b) {attrs} : dtype[shape]`."""
    args = ", ".join(f"%{rename(i)}" for i in node.inputs)
    if node.op == "constant":
        args = _format_value(node.attrs["value"])
    op = f"fused.{node.attrs['kind']}" if node.op == "fused" else node.op
    attrs = ", ".join(f"{k}={_format_attr(v)}" for k, v in node.attrs.items() if node.op not in ("constant", "fused"))
    return f"%{rename(node.name)} = {op}({args}){f' {{{attrs}}}' if attrs else ''} : {node.type}"


def fused_ops(node: NodeView) -> list[str]:
    """The operators of a fused node's body, in order (parameters left out)."""
    return [n.op for n in node.attrs["body"].topo_order() if n.op != "parameter"]


def _format_body(graph: GraphView, rename: _Renamer, indent: str, lines: list[str], nested: bool) -> None:
    start = None
    if rename.canonical:
        start = [p.name for p in graph.parameters()] + list(graph.outputs.values()) + list(graph.nodes)
    for node in graph.topo_order(start):
        if nested and node.op == "parameter":
            continue
        line = indent + format_node(node, rename)
        if node.op != "fused":
            lines.append(line)
            continue
        lines.append(line + " {")
        _format_body(node.attrs["body"], rename.nested(node), indent + "    ", lines, nested=True)
        lines.append(indent + "}")
    if not nested:
        lines.extend(f"{indent}output {out} = %{rename(n)}" for out, n in graph.outputs.items())


class _Renamer:
    """Node names as printed: unchanged, or canonical: parameters keep theirs, other nodes are numbered in
    the order first asked for; in a fused body, parameters print as the fused node's inputs."""

    def __init__(self, canonical: bool, names: dict[str, str], counter: list[int] | None = None):
        self.canonical, self.names = canonical, names
        self.taken = set(names.values())
        self.counter = counter or [0]

    def __call__(self, name: str) -> str:
        if not self.canonical:
            return name
        if name not in self.names:
            while str(self.counter[0]) in self.taken:
                self.counter[0] += 1
            self.names[name] = str(self.counter[0])
            self.counter[0] += 1
        return self.names[name]

    def nested(self, node: NodeView) -> _Renamer:
        """The renamer for a fused node's body."""
        params = node.attrs["body"].parameters()
        names = {p.name: self(i) for p, i in zip(params, node.inputs, strict=True)} if self.canonical else {}
        inner = _Renamer(self.canonical, names, self.counter)
        inner.taken |= self.taken
        return inner


def _format_value(value: np.ndarray) -> str:
    if value.size > SHOWN_VALUES:
        return f"<{value.size} values, crc32 {zlib.crc32(np.ascontiguousarray(value).tobytes()):08x}>"
    if value.ndim == 0:
        return str(value[()])
    return "[" + ", ".join(str(v) for v in value.flat) + "]"


def _format_attr(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)
