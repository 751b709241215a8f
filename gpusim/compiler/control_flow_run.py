"""Running a graph with control flow on the functional executor, as a host program: every loop of static
trip count unrolled (control_flow.unroll_loops), the rest of the graph cut into straight-line segments,
each compiled by the default pipeline, lowered and launched. At an `if` the host reads the predicate
back and launches the kernels of the branch it names (both branches are compiled; one runs); a loop
whose trip count is computed runs its body's kernels once per iteration after the host reads the count.
Each read-back costs the host link's latency (`pcie.latency_ns`): the next launch waits for it.

How the host runs `if` and `loop` is registered here into the operator table (`OpDef.run_on_host`), so
lowering knows them for what they are, not one kernel, without importing this layer above it. See
docs/compiler.md, "Control flow"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.compiler.control_flow import unroll_loops
from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.driver import estimate
from gpusim.compiler.evaluate import bind_inputs
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower import lower, run_kernels
from gpusim.compiler.ops import OPS, register
from gpusim.compiler.passes.manager import run_pipeline
from gpusim.config import Config


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
            if n.name not in done and (_on_host(n) or any(i in blocked for i in n.inputs)):
                blocked.add(n.name)
        segment = [n for n in order if n.name not in done and n.name not in blocked]
        if segment:
            _segment(graph, segment, blocked, values, cfg, cost, run, where)
            done.update(n.name for n in segment)
        ready = [n for n in order if _on_host(n) and n.name not in done and all(i in done for i in n.inputs)]
        if not ready:
            break
        node = ready[0]
        args = [values[i] for i in node.inputs]
        label = f"{where} %{node.name}".lstrip()
        values[node.name] = OPS[node.op].run_on_host(node, args, cfg, cost, run, label)
        done.add(node.name)
    return {out: values[name] for out, name in graph.outputs.items()}


def _segment(graph: Graph, nodes: list[Node], blocked: set[str], values: dict[str, np.ndarray], cfg: Config,
             cost: CostModel, run: ControlFlowRun, where: str) -> None:
    """Compile, lower and run straight-line `nodes` of `graph`; keep the values later nodes or outputs read."""
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
    graph = unroll_loops(graph)
    if any(_on_host(n) for n in graph.nodes.values()):
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


def _on_host(node: Node) -> bool:
    """Whether the host decides `node` (control flow) rather than a kernel computing it."""
    return OPS[node.op].run_on_host is not None


register("if", run_on_host=_if)
register("loop", run_on_host=_loop)
