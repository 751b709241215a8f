"""The graph IR: nodes (an operator applied to named inputs, with an output type and attributes) in a
DAG with named outputs, and a builder to write graphs in Python:

    >>> g = Graph("mlp")
    >>> x, w, b = g.parameter("x", (64, 128)), g.parameter("w", (128, 32)), g.parameter("b", (32,))
    >>> g.output(g.relu(g.add(g.matmul(x, w), b)), "y")
    >>> print(g)                                                # doctest: +NORMALIZE_WHITESPACE
    graph mlp
      %x = parameter() : f32[64,128]
      %w = parameter() : f32[128,32]
      %b = parameter() : f32[32]
      %0 = matmul(%x, %w) : f32[64,32]
      %1 = add(%0, %b) : f32[64,32]
      %2 = relu(%1) : f32[64,32]
      output y = %2

Every builder method infers the new node's type and raises GraphError naming the node and operator
when it is not defined. Graphs are built once and then only read: passes build new graphs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gpusim.compiler.errors import GraphError
from gpusim.compiler.ops import infer_type
from gpusim.compiler.printer import format_graph
from gpusim.compiler.tensor import NUMPY_DTYPES, TensorType, dtype_of


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """An operator applied to inputs (names of nodes of the same graph); `type` is its output's type.
    A parameter's name is the graph input's name. Attributes are read-only by convention."""

    name: str
    op: str
    inputs: tuple[str, ...]
    type: TensorType
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    def with_inputs(self, inputs: Iterable[str]) -> Node:
        """The same node reading other inputs."""
        return replace(self, inputs=tuple(inputs))


Operand = Node | str
_SCALAR = (int, float, np.number)


class Graph:
    """A DAG of nodes with unique names, and its outputs (output name -> node name).

    `nodes` keeps insertion order; `topo_order()` is the order to walk it in. Unnamed nodes get fresh
    numeric names that avoid every name in the graph and in `reserved`."""

    def __init__(self, name: str = "graph", *, reserved: Iterable[str] = ()):
        self.name = name
        self.nodes: dict[str, Node] = {}
        self.outputs: dict[str, str] = {}
        self._reserved = set(reserved)
        self._next = 0

    @classmethod
    def from_nodes(cls, nodes: Iterable[Node], outputs: Mapping[str, str] | Iterable[str],
                   name: str = "graph") -> Graph:
        """A graph holding `nodes` as they are (only their names must be unique; `verify` checks the
        rest); `outputs` maps output names to node names, or lists node names."""
        g = cls(name)
        for n in nodes:
            g.add_node(n)
        g.outputs = dict(outputs) if isinstance(outputs, Mapping) else {o: o for o in outputs}
        return g

    def derive(self) -> Graph:
        """An empty graph of the same name whose fresh names avoid every name of this one (for passes)."""
        g = Graph(self.name, reserved=self._reserved | self.nodes.keys())
        g._next = self._next
        return g

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def __str__(self) -> str:
        return format_graph(self)

    def type_of(self, x: Operand) -> TensorType:
        """The type of `x` (a node of this graph or its name); GraphError if it is neither."""
        return self.nodes[self._ref(x, None, "type")].type

    def fresh_name(self) -> str:
        """A new node name, numbered, that no node of the graph has and `reserved` does not hold."""
        return self._new_name(None, "node")

    def parameters(self) -> list[Node]:
        """The graph's inputs, in the order they were added."""
        return [n for n in self.nodes.values() if n.op == "parameter"]

    def users(self) -> dict[str, list[str]]:
        """For every node, the nodes reading it (each once, in insertion order)."""
        users: dict[str, dict[str, None]] = {n: {} for n in self.nodes}
        for node in self.nodes.values():
            for i in node.inputs:
                users.setdefault(i, {})[node.name] = None
        return {n: list(u) for n, u in users.items()}

    def topo_order(self, start: Iterable[str] | None = None) -> list[Node]:
        """Nodes with every input before its users: depth-first from `start` (default: all nodes in
        insertion order, which is kept when it is already topological). GraphError on a cycle or an input
        that is not a node of the graph."""
        order: list[Node] = []
        state: dict[str, int] = {}  # 1: on the path being walked, 2: done
        for first in self.nodes if start is None else start:
            if first in state:
                continue
            state[first] = 1
            path = [(first, iter(self.nodes[first].inputs))]
            while path:
                name, pending = path[-1]
                for i in pending:
                    if i not in self.nodes:
                        raise GraphError(f"input %{i} is not a node of the graph", node=name, op=self.nodes[name].op)
                    if i not in state:
                        state[i] = 1
                        path.append((i, iter(self.nodes[i].inputs)))
                        break
                    if state[i] == 1:
                        loop = [n for n, _ in path[[n for n, _ in path].index(i):]]
                        flow = " -> ".join(f"%{n}" for n in [i, *reversed(loop[1:]), i])
                        raise GraphError(f"cycle {flow}", node=i, op=self.nodes[i].op)
                else:
                    path.pop()
                    state[name] = 2
                    order.append(self.nodes[name])
        return order

    # --- building -------------------------------------------------------------------------------

    def add_node(self, node: Node) -> Node:
        """Add a node as it is (its type is not checked: `verify` does that)."""
        if node.name in self.nodes:
            raise GraphError("duplicate node name", node=node.name, op=node.op)
        self.nodes[node.name] = node
        return node

    def emit(self, op: str, inputs: Sequence[Operand] = (), attrs: Mapping[str, Any] | None = None, *,
             name: str | None = None) -> Node:
        """Add `op` applied to `inputs` with `attrs`, its type inferred; GraphError naming the node if the
        operator, its inputs or its attributes are not valid."""
        name = self._new_name(name, op)
        refs = tuple(self._ref(x, name, op) for x in inputs)
        attrs = dict(attrs or {})
        try:
            t = infer_type(op, tuple(self.nodes[r].type for r in refs), attrs)
        except GraphError as e:
            raise GraphError(e.reason, node=name, op=op) from None
        if t is None:
            raise GraphError("parameters are added with Graph.parameter()", node=name, op=op)
        return self.add_node(Node(name, op, refs, t, attrs))

    def output(self, x: Operand, name: str | None = None) -> None:
        """Mark `x` as a graph output named `name` (default: the node's name)."""
        ref = self._ref(x, None, "output")
        name = ref if name is None else name
        if name in self.outputs:
            raise GraphError(f"duplicate output name '{name}'", node=ref)
        self.outputs[name] = ref

    def parameter(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Node:
        """A graph input named `name`."""
        self._new_name(name, "parameter")
        try:
            t = TensorType(tuple(int(d) for d in shape), dtype)
        except (GraphError, TypeError, ValueError) as e:
            raise GraphError(getattr(e, "reason", str(e)), node=name, op="parameter") from None
        return self.add_node(Node(name, "parameter", (), t))

    def constant(self, value: Any, dtype: str | None = None, *, name: str | None = None) -> Node:
        """A constant holding a read-only copy of `value` (Python floats and float arrays: f32 unless
        f16; ints: i32; or `dtype`)."""
        array = np.asarray(value)
        try:
            array = np.array(array, dtype=NUMPY_DTYPES[dtype or dtype_of(array)])
        except (GraphError, KeyError) as e:
            raise GraphError(getattr(e, "reason", f"unknown dtype {dtype!r}"), node=name, op="constant") from None
        array.flags.writeable = False
        return self.emit("constant", (), {"value": array}, name=name)

    def matmul(self, a: Operand, b: Operand, *, name: str | None = None) -> Node:
        return self.emit("matmul", (a, b), name=name)

    def add(self, a: Operand | float, b: Operand | float, *, name: str | None = None) -> Node:
        return self._binary("add", a, b, name)

    def sub(self, a: Operand | float, b: Operand | float, *, name: str | None = None) -> Node:
        return self._binary("sub", a, b, name)

    def mul(self, a: Operand | float, b: Operand | float, *, name: str | None = None) -> Node:
        return self._binary("mul", a, b, name)

    def div(self, a: Operand | float, b: Operand | float, *, name: str | None = None) -> Node:
        return self._binary("div", a, b, name)

    def pow(self, a: Operand | float, b: Operand | float, *, name: str | None = None) -> Node:
        return self._binary("pow", a, b, name)

    def relu(self, x: Operand, *, name: str | None = None) -> Node:
        return self.emit("relu", (x,), name=name)

    def gelu(self, x: Operand, approximate: str = "none", *, name: str | None = None) -> Node:
        """GELU: x * Phi(x) with the exact erf ('none') or the tanh approximation ('tanh'), as ONNX."""
        return self.emit("gelu", (x,), {"approximate": approximate}, name=name)

    def exp(self, x: Operand, *, name: str | None = None) -> Node:
        return self.emit("exp", (x,), name=name)

    def tanh(self, x: Operand, *, name: str | None = None) -> Node:
        return self.emit("tanh", (x,), name=name)

    def softmax(self, x: Operand, axis: int = -1, *, name: str | None = None) -> Node:
        return self.emit("softmax", (x,), {"axis": _axis(axis, self.type_of(x).rank)}, name=name)

    def layernorm(self, x: Operand, gamma: Operand | None = None, beta: Operand | None = None, *, axis: int = -1,
                  eps: float = 1e-5, name: str | None = None) -> Node:
        """Normalise over axes `axis`..last, then scale by `gamma` and shift by `beta` if given."""
        if beta is not None and gamma is None:
            raise GraphError("beta needs gamma", node=name, op="layernorm")
        inputs = [v for v in (x, gamma, beta) if v is not None]
        return self.emit("layernorm", inputs, {"axis": _axis(axis, self.type_of(x).rank), "eps": float(eps)},
                         name=name)

    def reduce_sum(self, x: Operand, axes: int | Sequence[int] | None = None, keepdims: bool = False, *,
                   name: str | None = None) -> Node:
        """Sum over `axes` (default: all)."""
        return self._reduce("reduce_sum", x, axes, keepdims, name)

    def reduce_mean(self, x: Operand, axes: int | Sequence[int] | None = None, keepdims: bool = False, *,
                    name: str | None = None) -> Node:
        """Mean over `axes` (default: all)."""
        return self._reduce("reduce_mean", x, axes, keepdims, name)

    def reduce_max(self, x: Operand, axes: int | Sequence[int] | None = None, keepdims: bool = False, *,
                   name: str | None = None) -> Node:
        """Maximum over `axes` (default: all)."""
        return self._reduce("reduce_max", x, axes, keepdims, name)

    def transpose(self, x: Operand, perm: Sequence[int] | None = None, *, name: str | None = None) -> Node:
        """Output axis i is input axis perm[i] (default: axes reversed)."""
        rank = self.type_of(x).rank
        perm = tuple(reversed(range(rank))) if perm is None else tuple(_axis(p, rank) for p in perm)
        return self.emit("transpose", (x,), {"perm": perm}, name=name)

    def reshape(self, x: Operand, shape: Sequence[int], *, name: str | None = None) -> Node:
        """The same elements in `shape`; one dimension may be -1 (inferred)."""
        shape = tuple(int(d) for d in shape)
        if shape.count(-1) == 1:
            rest = math.prod(d for d in shape if d != -1)
            size = self.type_of(x).size
            if rest and size % rest == 0:
                shape = tuple(size // rest if d == -1 else d for d in shape)
        return self.emit("reshape", (x,), {"shape": shape}, name=name)

    def fused(self, inputs: Sequence[Operand], body: Graph, kind: str, *, name: str | None = None) -> Node:
        """A fused node: `body` (one output; its parameters, in order, stand for `inputs`) as one kernel."""
        return self.emit("fused", inputs, {"kind": kind, "body": body}, name=name)

    # --- helpers ----------------------------------------------------------------------------------

    def _new_name(self, name: str | None, op: str) -> str:
        if name is None:
            while str(self._next) in self.nodes or str(self._next) in self._reserved:
                self._next += 1
            name = str(self._next)
            self._next += 1
        elif name in self.nodes:
            raise GraphError("duplicate node name", node=name, op=op)
        return name

    def _ref(self, x: Operand, user: str | None, op: str) -> str:
        name = x.name if isinstance(x, Node) else x
        if not isinstance(name, str) or name not in self.nodes:
            raise GraphError(f"input {x!r} is not a node of graph '{self.name}'", node=user, op=op)
        if isinstance(x, Node) and self.nodes[name] is not x:
            raise GraphError(f"input %{name} belongs to another graph", node=user, op=op)
        return name

    def _binary(self, op: str, a: Operand | float, b: Operand | float, name: str | None) -> Node:
        """A binary operator; a Python number operand becomes a scalar constant of the other's dtype."""
        if isinstance(a, _SCALAR) and isinstance(b, _SCALAR):
            raise GraphError("at least one operand must be a node", node=name, op=op)
        if isinstance(a, _SCALAR):
            a = self.constant(a, self.type_of(b).dtype)
        if isinstance(b, _SCALAR):
            b = self.constant(b, self.type_of(a).dtype)
        return self.emit(op, (a, b), name=name)

    def _reduce(self, op: str, x: Operand, axes: int | Sequence[int] | None, keepdims: bool,
                name: str | None) -> Node:
        rank = self.type_of(x).rank
        axes = tuple(range(rank)) if axes is None else (axes,) if isinstance(axes, int) else tuple(axes)
        canon = tuple(sorted(_axis(a, rank) for a in axes))
        return self.emit(op, (x,), {"axes": canon, "keepdims": bool(keepdims)}, name=name)


def _axis(axis: int, rank: int) -> int:
    """`axis` made non-negative when it is in range (out of range it is left for type inference to report)."""
    return axis % rank if isinstance(axis, int) and -rank <= axis < rank else axis
