"""Graph-level control flow in the IR, as TensorFlow puts it in the graph: `if` and `loop` nodes whose
attributes are subgraphs: their type rules (registered into the operator table), builders and unrolling.

- `if` (inputs: cond, captures...): `then_branch` or `else_branch` applied to the captures; each branch
  is a graph whose parameters, in order, are the captures, with one output of the node's type.
- `loop` (inputs: [trip count,] x0, captures...): x = body(i, x, captures...) for i = 0 .. n-1, where n
  is the attribute `trip_count`, or, when that is None, the first input (an i32 scalar known only at run
  time); the body's parameters are i (i32 scalar), x and the captures; its one output is the next x.

The operator table (ops.py) declares both operators; the layers that own their other rules register
them: this module their type rules (which verify the subgraphs), evaluate.py their numpy semantics (the
evaluator runs the chosen branch or the body), and control_flow_run.py how the host runs them on the
functional executor (`run_control_flow`: every loop of static trip count unrolled by `unroll_loops`,
the rest of the graph cut into straight-line segments of kernels, the host reading a predicate or a
trip count back at each decision). ONNX `If` and `Loop` import to these nodes
(onnx_import/control_flow.py). See docs/compiler.md, "Control flow"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpusim.compiler.errors import GraphError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.ops import register
from gpusim.compiler.printer import format_graph
from gpusim.compiler.tensor import TensorType
from gpusim.compiler.verify import verify


@dataclass(frozen=True, slots=True, eq=False)
class Subgraph:
    """A subgraph held in a node's attributes: printed as its name and size, equal by canonical text
    (so that CSE merges identical control-flow nodes)."""

    graph: Graph

    def __str__(self) -> str:
        return f"{{{self.graph.name}: {len(self.graph)} nodes}}"

    def key(self) -> str:
        """The canonical text of the subgraph (what equality compares)."""
        return format_graph(self.graph, canonical=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subgraph) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())


# --- type inference (the operator table's entries for if and loop) ---------------------------------

def _body(attrs: Mapping[str, Any], key: str) -> Graph:
    sub = attrs[key]
    if not isinstance(sub, Subgraph):
        raise GraphError(f"{key} is a Subgraph, not {type(sub).__name__}")
    if len(sub.graph.outputs) != 1:
        raise GraphError(f"{key} has one output, not {len(sub.graph.outputs)}")
    try:
        verify(sub.graph)
    except GraphError as e:
        raise GraphError(f"in {key}: {e}") from None
    return sub.graph


def _check_params(graph: Graph, types: Sequence[TensorType], key: str) -> TensorType:
    params = graph.parameters()
    if tuple(p.type for p in params) != tuple(types):
        raise GraphError(f"{key}'s parameters {', '.join(f'%{p.name}: {p.type}' for p in params)} do not match "
                         f"the inputs {', '.join(map(str, types)) or '(none)'}")
    return graph[next(iter(graph.outputs.values()))].type


def infer_if(types: tuple[TensorType, ...], attrs: Mapping[str, Any]) -> TensorType:
    if types[0].size != 1:
        raise GraphError(f"the condition is one element, not {types[0]}")
    then = _check_params(_body(attrs, "then_branch"), types[1:], "then_branch")
    other = _check_params(_body(attrs, "else_branch"), types[1:], "else_branch")
    if then != other:
        raise GraphError(f"the branches' outputs differ: {then} and {other}")
    return then


def _loop_parts(types, attrs) -> tuple[TensorType | None, TensorType, tuple[TensorType, ...]]:
    count = attrs["trip_count"]
    if count is None:
        if len(types) < 2 or types[0].size != 1 or types[0].dtype != "i32":
            raise GraphError("with trip_count None the first input is the trip count (an i32 scalar), then x0")
        return types[0], types[1], types[2:]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise GraphError(f"trip_count is a non-negative int or None, not {count!r}")
    return None, types[0], types[1:]


def infer_loop(types: tuple[TensorType, ...], attrs: Mapping[str, Any]) -> TensorType:
    _, carried, captures = _loop_parts(types, attrs)
    out = _check_params(_body(attrs, "body"), (TensorType((), "i32"), carried, *captures), "body")
    if out != carried:
        raise GraphError(f"the body's output {out} is not the loop-carried value's type {carried}")
    return carried


register("if", infer=infer_if)
register("loop", infer=infer_loop)


# --- builders -------------------------------------------------------------------------------------

def emit_if(g: Graph, cond: Node | str, then_branch: Graph, else_branch: Graph, captures: Sequence[Node | str] = (),
            *, name: str | None = None) -> Node:
    """An `if` node of `g`: the branches' parameters, in order, stand for `captures`."""
    return g.emit("if", (cond, *captures), {"then_branch": Subgraph(then_branch),
                                            "else_branch": Subgraph(else_branch)}, name=name)


def emit_loop(g: Graph, body: Graph, x0: Node | str, captures: Sequence[Node | str] = (), *,
              trip_count: int | Node | str, name: str | None = None) -> Node:
    """A `loop` node of `g`: `trip_count` an int (static) or a node (an i32 scalar read at run time)."""
    static = isinstance(trip_count, int)
    inputs = (x0, *captures) if static else (trip_count, x0, *captures)
    return g.emit("loop", inputs, {"body": Subgraph(body), "trip_count": trip_count if static else None}, name=name)


# --- unrolling ------------------------------------------------------------------------------------

def unroll_loops(graph: Graph) -> Graph:
    """`graph` with every loop of static trip count replaced by that many copies of its body (the
    iteration number a constant in each), named `<loop>.<i>.<body node>`; the last copy's result takes
    the loop's name."""
    if not any(n.op == "loop" and n.attrs["trip_count"] is not None for n in graph.nodes.values()):
        return graph
    new = graph.derive()
    for node in graph.topo_order():
        if node.op != "loop" or node.attrs["trip_count"] is None:
            new.add_node(node)
            continue
        body = unroll_loops(node.attrs["body"].graph)
        x, captures, count = node.inputs[0], node.inputs[1:], node.attrs["trip_count"]
        if count == 0:
            x = new.emit("reshape", (x,), {"shape": node.shape}, name=node.name).name
        for i in range(count):
            x = _inline(new, body, [new.constant(i, "i32", name=f"{node.name}.{i}.iter").name, x, *captures],
                        f"{node.name}.{i}.", node.name if i == count - 1 else None)
    for out, ref in graph.outputs.items():
        new.output(ref, out)
    return new


def _inline(g: Graph, body: Graph, args: Sequence[str], prefix: str, result: str | None) -> str:
    """Copy `body` into `g`, its parameters bound to `args`; the name of the node holding its output."""
    names = {p.name: a for p, a in zip(body.parameters(), args, strict=True)}
    (out,) = body.outputs.values()
    for node in body.topo_order():
        if node.op == "parameter":
            continue
        name = result if node.name == out and result is not None else prefix + node.name
        g.add_node(Node(name, node.op, tuple(names[i] for i in node.inputs), node.type, node.attrs))
        names[node.name] = name
    if result is not None and names[out] != result:  # the body returns a parameter as it is
        g.emit("reshape", (names[out],), {"shape": g[names[out]].shape}, name=result)
        return result
    return names[out]
