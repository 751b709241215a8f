"""Graph-level control flow, as TensorFlow puts it in the graph: `if` and `loop` nodes whose attributes
are subgraphs.

- `if` (inputs: cond, captures...): `then_branch` or `else_branch` applied to the captures; each branch
  is a graph whose parameters, in order, are the captures, with one output of the node's type.
- `loop` (inputs: [trip count,] x0, captures...): x = body(i, x, captures...) for i = 0 .. n-1, where n
  is the attribute `trip_count`, or, when that is None, the first input (an i32 scalar known only at run
  time); the body's parameters are i (i32 scalar), x and the captures; its one output is the next x.

The numpy evaluator runs them directly. They are not one kernel each: `run_control_flow` runs a graph
holding them on the functional executor, unrolling every loop whose trip count is static
(`unroll_loops`) and cutting the rest of the graph into straight-line segments, each compiled by the
default pipeline and lowered. At an `if` the host reads the predicate back and launches the kernels of
the branch it names (both branches are compiled; one runs); a loop whose trip count is computed runs
its body's kernels once per iteration after the host reads the count. Each read-back costs the host
link's latency (`pcie.latency_ns`): the next launch waits for it. ONNX `If` and `Loop` import to these
nodes (`import_if`, `import_loop`). See docs/compiler.md, "Control flow"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.errors import CompilerError, GraphError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.printer import format_graph
from gpusim.compiler.tensor import TensorType
from gpusim.config import Config

CONTROL_FLOW = ("if", "loop")


@dataclass(frozen=True, slots=True, eq=False)
class Subgraph:
    """A subgraph held in a node's attributes: printed as its name and size, equal by canonical text
    (so that CSE merges identical control-flow nodes)."""

    graph: Graph

    def __str__(self) -> str:
        return f"{{{self.graph.name}: {len(self.graph)} nodes}}"

    def _key(self) -> str:
        return format_graph(self.graph, canonical=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subgraph) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


# --- type inference and evaluation (the operator table's entries) -----------------------------------

def _body(attrs: Mapping[str, Any], key: str) -> Graph:
    sub = attrs[key]
    if not isinstance(sub, Subgraph):
        raise GraphError(f"{key} is a Subgraph, not {type(sub).__name__}")
    if len(sub.graph.outputs) != 1:
        raise GraphError(f"{key} has one output, not {len(sub.graph.outputs)}")
    from gpusim.compiler.verify import verify

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


def _call(graph: Graph, args: Sequence[np.ndarray]) -> np.ndarray:
    from gpusim.compiler.evaluate import evaluate

    (value,) = evaluate(graph, {p.name: a for p, a in zip(graph.parameters(), args, strict=True)}).values()
    return value


def compute_if(args: list[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    branch = "then_branch" if args[0].reshape(-1)[0] != 0 else "else_branch"
    return _call(attrs[branch].graph, args[1:])


def compute_loop(args: list[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    count = attrs["trip_count"]
    if count is None:
        count, args = int(args[0].reshape(-1)[0]), args[1:]
    x, captures = args[0], args[1:]
    for i in range(count):
        x = _call(attrs["body"].graph, [np.asarray(i, np.int64), x, *captures])
    return x


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


# --- running on the functional executor ----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Step:
    """One thing the host did: `kind` is `segment` (straight-line kernels), `branch` (an if's chosen
    branch), `iteration` (one run of a loop body) or `read-back` (the predicate or trip count copied to
    the host); `label` names it; `cycles` its estimated time (launch overheads included)."""

    kind: str
    label: str
    kernels: int
    cycles: float


@dataclass
class ControlFlowRun:
    """The outputs of `run_control_flow`, every step the host took, and the compiled-but-not-run
    branches (label -> kernels)."""

    outputs: dict[str, np.ndarray]
    steps: list[Step] = field(default_factory=list)
    not_taken: dict[str, int] = field(default_factory=dict)

    @property
    def cycles(self) -> float:
        return sum(s.cycles for s in self.steps)

    @property
    def launches(self) -> int:
        return sum(s.kernels for s in self.steps)

    def __str__(self) -> str:
        width = max([4, *(len(s.label) for s in self.steps)])
        rows = [f"{'step':<10} {'what':<{width}} {'kernels':>7} {'cycles':>10}"]
        rows += [f"{s.kind:<10} {s.label:<{width}} {s.kernels:>7} {s.cycles:>10,.0f}" for s in self.steps]
        rows.append(f"{'total':<10} {'':<{width}} {self.launches:>7} {self.cycles:>10,.0f}")
        rows += [f"compiled, not taken: {label} ({n} kernels)" for label, n in self.not_taken.items()]
        return "\n".join(rows)


def run_control_flow(graph: Graph, inputs: Mapping[str, Any], cfg: Config, cost: CostModel) -> ControlFlowRun:
    """Run `graph` (control flow included) on the functional executor as a host would: loops of static
    trip count unrolled, straight-line segments compiled and launched, each `if` and computed-count loop
    decided after reading its predicate or count back."""
    from gpusim.compiler.evaluate import bind_inputs

    run = ControlFlowRun({})
    values = bind_inputs(graph, inputs)
    run.outputs = _execute(graph, values, cfg, cost, run, "")
    return run


def _execute(graph: Graph, values: dict[str, np.ndarray], cfg: Config, cost: CostModel, run: ControlFlowRun,
             where: str) -> dict[str, np.ndarray]:
    graph = unroll_loops(graph)
    order = graph.topo_order()
    done = {p.name for p in graph.parameters()}
    while True:
        blocked: set[str] = set()
        for n in order:
            if n.name not in done and (n.op in CONTROL_FLOW or any(i in blocked for i in n.inputs)):
                blocked.add(n.name)
        segment = [n for n in order if n.name not in done and n.name not in blocked]
        if segment:
            _segment(graph, segment, blocked, values, cfg, cost, run, where)
            done.update(n.name for n in segment)
        ready = [n for n in order if n.op in CONTROL_FLOW and n.name not in done and all(i in done for i in n.inputs)]
        if not ready:
            break
        node = ready[0]
        args = [values[i] for i in node.inputs]
        label = f"{where} %{node.name}".lstrip()
        values[node.name] = (_if if node.op == "if" else _loop)(node, args, cfg, cost, run, label)
        done.add(node.name)
    return {out: values[name] for out, name in graph.outputs.items()}


def _segment(graph: Graph, nodes: list[Node], blocked: set[str], values: dict[str, np.ndarray], cfg: Config,
             cost: CostModel, run: ControlFlowRun, where: str) -> None:
    """Compile, lower and run straight-line `nodes` of `graph`; keep the values later nodes or outputs read."""
    from gpusim.compiler.driver import estimate
    from gpusim.compiler.lower import lower, run_kernels
    from gpusim.compiler.passes.manager import run_pipeline

    names = {n.name for n in nodes}
    later = {i for b in blocked for i in graph[b].inputs} | set(graph.outputs.values())
    sub = Graph(f"{graph.name}.segment")
    for i in dict.fromkeys(i for n in nodes for i in n.inputs if i not in names):
        sub.parameter(i, graph[i].shape, graph[i].dtype)
    for n in nodes:
        sub.add_node(n)
    wanted = [n.name for n in nodes if n.name in later]
    if not wanted:
        return
    for w in wanted:
        sub.output(w)
    compiled, _ = run_pipeline(sub)
    kernels = lower(compiled)
    feeds = {p.name: values[p.name] for p in compiled.parameters()}
    values.update(run_kernels(compiled, kernels, feeds, cfg))
    if kernels:
        label = f"{where} segment".strip() if where else f"{len(nodes)} nodes"
        run.steps.append(Step("segment", label, len(kernels), estimate(compiled, kernels, cost, cfg).cycles))


def _read_back(cfg: Config, run: ControlFlowRun, label: str) -> None:
    """The host copies a scalar back before it can launch what depends on it: one link latency."""
    run.steps.append(Step("read-back", label, 0, round(cfg.pcie.latency_ns * cfg.chip.clock_mhz / 1000.0)))


def _call_on_device(graph: Graph, args: Sequence[np.ndarray], cfg: Config, cost: CostModel, run: ControlFlowRun,
                    kind: str, label: str) -> np.ndarray:
    before = len(run.steps)
    values = {p.name: a for p, a in zip(graph.parameters(), args, strict=True)}
    (value,) = _execute(graph, values, cfg, cost, run, label).values()
    inner = run.steps[before:]
    del run.steps[before:]
    reads = sum(s.kind == "read-back" for s in inner)
    label += f" (+{reads} read-back{'s' * (reads > 1)})" if reads else ""
    run.steps.append(Step(kind, label, sum(s.kernels for s in inner), sum(s.cycles for s in inner)))
    return value


def _kernel_count(graph: Graph) -> int:
    from gpusim.compiler.lower import lower
    from gpusim.compiler.passes.manager import run_pipeline

    graph = unroll_loops(graph)
    if any(n.op in CONTROL_FLOW for n in graph.nodes.values()):
        return 0
    return len(lower(run_pipeline(graph)[0]))


def _if(node: Node, args, cfg, cost, run, label) -> np.ndarray:
    _read_back(cfg, run, f"{label} predicate")
    taken = "then_branch" if args[0].reshape(-1)[0] != 0 else "else_branch"
    other = "else_branch" if taken == "then_branch" else "then_branch"
    run.not_taken[f"{label} {other}"] = _kernel_count(node.attrs[other].graph)
    return _call_on_device(node.attrs[taken].graph, args[1:], cfg, cost, run, "branch", f"{label} {taken}")


def _loop(node: Node, args, cfg, cost, run, label) -> np.ndarray:
    _read_back(cfg, run, f"{label} trip count")
    count, x, captures = int(args[0].reshape(-1)[0]), args[1], args[2:]
    body = node.attrs["body"].graph
    for i in range(count):
        x = _call_on_device(body, [np.asarray(i, np.int32), x, *captures], cfg, cost, run, "iteration",
                            f"{label} iteration {i}")
    return x


# --- ONNX import ----------------------------------------------------------------------------------

_TO_ONNX = {"f32": 1, "f16": 10, "i32": 6}


def _free_names(body) -> list[str]:
    """Names a GraphProto reads from its enclosing scope (nested subgraphs included), in first-use order."""
    defined = {i.name for i in body.input} | {t.name for t in body.initializer}
    free: dict[str, None] = {}
    for n in body.node:
        for i in n.input:
            if i and i not in defined:
                free[i] = None
        for a in n.attribute:
            if a.HasField("g"):
                for i in _free_names(a.g):
                    if i not in defined:
                        free[i] = None
        defined.update(n.output)
    return list(free)


def _import_body(importer, body, leading: Sequence[tuple[str, TensorType]], name: str):
    """The Graph of ONNX subgraph `body`: parameters `leading` (name, type) first, then one per outer
    value it captures; returns (the sub-importer, the graph, the outer node names captured)."""
    from gpusim.compiler.onnx_import import _Importer

    onnx = importer.onnx
    helper = onnx.helper
    sub_inputs = [helper.make_tensor_value_info(n, _TO_ONNX[t.dtype], list(t.shape)) for n, t in leading]
    initializers, captured = [], []
    lead = {n for n, _ in leading}
    for free in _free_names(body):
        if free in lead:
            continue
        value = importer.values.get(free)
        if value is None:
            raise CompilerError(f"onnx subgraph '{name}' reads '{free}', which the enclosing graph does not define")
        if isinstance(value, np.ndarray):
            initializers.append(onnx.numpy_helper.from_array(value, free))
        else:
            t = importer.graph[value].type
            sub_inputs.append(helper.make_tensor_value_info(free, _TO_ONNX[t.dtype], list(t.shape)))
            captured.append(value)
    graph = helper.make_graph(list(body.node), name, sub_inputs, list(body.output),
                              [*initializers, *body.initializer])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", importer.opset)])
    sub = _Importer(onnx, model, {})
    return sub, sub.graph, captured


def import_if(importer, node, attrs, out):
    """ONNX If (one output) -> an `if` node; both branches capture the union of what they read."""
    if len(node.output) != 1:
        raise CompilerError(f"onnx node '{node.name or out}' (If): one output is supported, not {len(node.output)}")
    cond = importer._tensor(node.input[0], node)
    _, then_g, then_caps = _import_body(importer, attrs["then_branch"], (), f"{out}.then")
    _, else_g, else_caps = _import_body(importer, attrs["else_branch"], (), f"{out}.else")
    captures = list(dict.fromkeys([*then_caps, *else_caps]))
    then_g, else_g = (_with_params(g, caps, captures, importer.graph) for g, caps in
                      ((then_g, then_caps), (else_g, else_caps)))
    return emit_if(importer.graph, cond, then_g, else_g, captures, name=out)


def _with_params(graph: Graph, own: Sequence[str], captures: Sequence[str], outer: Graph) -> Graph:
    """`graph` with one parameter per capture, in `captures`' order (those it does not read unused)."""
    new = Graph(graph.name)
    for c in captures:
        new.parameter(c, outer[c].shape, outer[c].dtype)
    for n in graph.topo_order():
        if n.op != "parameter":
            new.add_node(n)
    for o, ref in graph.outputs.items():
        new.output(ref, o)
    return new


def import_loop(importer, node, attrs, out):
    """ONNX Loop with one loop-carried value and no scan outputs -> a `loop` node; its exit condition
    must stay true (a constant, or the body passing its cond input through): an early exit decided by
    data is not supported."""
    def error(message: str) -> CompilerError:
        return CompilerError(f"onnx node '{node.name or out}' (Loop): {message}")

    body = attrs["body"]
    if len(node.input) != 3 or len(body.output) != 2:
        raise error("one loop-carried value and no scan outputs are supported")
    m, cond, x0 = node.input
    if not m:
        raise error("a trip count is required (a loop bounded by its condition alone is not supported)")
    if cond:
        value = importer.values.get(cond)
        if not isinstance(value, np.ndarray) or not value.all():
            raise error("the initial condition must be a constant true")
    x = importer._tensor(x0, node)
    x_type = importer.graph[x].type
    it, cond_in, v_in = (i.name for i in body.input)
    body = _replace_cond(importer.onnx, body, cond_in)
    _, body_g, captures = _import_body(importer, body, ((it, TensorType((), "i32")), (v_in, x_type)), f"{out}.body")
    cond_out = body_g[body_g.outputs[body.output[0].name]]  # materialised as the body's output
    if not (cond_out.op == "constant" and cond_out.attrs["value"].all()):
        raise error("the body computes its exit condition from data; only loops that always run their trip "
                    "count are supported")
    body_g.outputs = {k: v for k, v in body_g.outputs.items() if k != body.output[0].name}
    count = importer.values.get(m)
    if isinstance(count, np.ndarray):
        return emit_loop(importer.graph, body_g, x, captures, trip_count=int(count.reshape(-1)[0]), name=out)
    trip = importer._tensor(m, node)
    return emit_loop(importer.graph, body_g, x, captures, trip_count=trip, name=out)


def _replace_cond(onnx, body, cond_in: str):
    """The body with its condition input turned into a constant true initializer."""
    g = onnx.GraphProto()
    g.CopyFrom(body)
    del g.input[1]
    g.initializer.append(onnx.numpy_helper.from_array(np.array(True), cond_in))
    return g
