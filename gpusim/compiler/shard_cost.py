"""A sharded graph (shard.py) as a program on a node of GPUs, and what it costs: every GPU's kernels, each
node costed by a `KernelCost` (the compiler's templates and a cost model, or analysis/sharding.py's GEMM
costing for a like-for-like comparison), the collectives on the links, all spread over CUDA streams
(streams.py) and run by the system model; with `chunks` > 1 the row-wise nodes (`row_local`) run in
chunks of rows so that communication overlaps compute. `run_sharded` plans, costs and runs a graph and
its one-GPU version for the speed-up (`gpusim compile MODEL --shard N`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower.lowering import lower_node
from gpusim.compiler.ops import Kind, kind_of
from gpusim.compiler.shard import COLLECTIVE_OPS, ShardedGraph, shard
from gpusim.compiler.streams import Schedule, Task, schedule
from gpusim.config import Config
from gpusim.system import Collective, Program
from gpusim.system.report import ProgramReport

KernelCost = Callable[[Graph, Node], "float | None"]


def compiler_cost(cost: CostModel, cfg: Config) -> KernelCost:
    """A node's execution cycles: its kernel lowered from the templates (defaults) and costed by `cost`."""
    def cycles(graph: Graph, node: Node) -> float:
        return cost.cost(lower_node(graph, node), cfg).kernel_cycles
    return cycles


def gemm_only_cost(cfg: Config) -> KernelCost:
    """analysis/sharding.py's costing, for a like-for-like comparison: a 2-D matmul's cycles from
    `analysis.gemm.gemm_cost` (the timing model running gemm_tiled), every other kernel left out."""
    from gpusim.analysis.gemm import gemm_cost

    def cycles(graph: Graph, node: Node) -> float | None:
        a, b = (graph[i].type for i in node.inputs) if node.op == "matmul" else (None, None)
        if a is None or a.rank != 2 or b.rank != 2:
            return None
        return gemm_cost(cfg, a.shape[0], a.shape[1], b.shape[1]).cycles
    return cycles


def row_local(graph: Graph, node: Node, rows: int) -> bool:
    """Whether row i of `node` depends only on row i of its inputs with `rows` rows (and on whole other
    inputs): then the node can run in chunks of rows."""
    if not node.shape or node.shape[0] != rows:
        return False
    types = [graph[i].type for i in node.inputs]
    op, kind = node.op, kind_of(node.op)
    if op == "fused":
        return _fused_rows(node, rows) is not None
    if op == "matmul":
        return types[0].rank == 2 and types[1].rank == 2 and types[0].shape[0] == rows
    if kind in (Kind.ELEMENTWISE, Kind.BROADCAST) or op in ("all_reduce", "all_gather"):
        if op == "all_gather" and node.attrs["axis"] == 0:
            return False
        return all(t.rank < node.type.rank or t.shape[0] in (1, rows) for t in types)
    if op in ("softmax", "log_softmax", "layernorm"):
        return node.attrs["axis"] > 0 and node.type.rank >= 2
    if op in ("reduce_sum", "reduce_mean", "reduce_max"):
        return 0 not in node.attrs["axes"]
    if op == "remap":
        coef, offset = node.attrs["coef"], node.attrs["offset"]
        return types[0].shape[0] == rows and coef[0][0] == 1 and not any(coef[0][1:]) and offset[0] == 0 and all(
            c[0] == 0 for c in coef[1:])
    return False


def row_inputs(graph: Graph, node: Node, rows: int) -> set[int]:
    """Which inputs of a row-local node it reads row by row (the others it reads whole)."""
    if node.op == "matmul":
        return {0}
    if node.op == "fused":
        return _fused_rows(node, rows) or set()
    return {k for k, i in enumerate(node.inputs)
            if graph[i].type.rank == node.type.rank and graph[i].shape[0] == rows}


def _fused_rows(node: Node, rows: int) -> set[int] | None:
    """The inputs a fused node reads by row when every operator of its body is row-local and reads every
    intermediate by row; None when it is not row-local."""
    body: Graph = node.attrs["body"]
    by_row: set[str] = set()
    whole: set[str] = set()
    for n in body.topo_order():
        if n.op in ("parameter", "constant"):
            continue
        if not row_local(body, n, rows):
            return None
        read = row_inputs(body, n, rows)
        for k, i in enumerate(n.inputs):
            (by_row if k in read else whole).add(i)
    if any(body[i].op not in ("parameter", "constant") for i in whole):
        return None
    return {k for k, p in enumerate(body.parameters()) if p.name in by_row and p.name not in whole}


def _replay(source: Graph, into: Graph, names: dict[str, str], rows: int, chunks: int) -> None:
    """Emit `source`'s operators into `into` over `names` (source node -> node of `into`), a remap's
    output shape cut to its chunk and a fused body rebuilt the same way."""
    for n in source.topo_order():
        if n.op == "parameter":
            continue
        attrs = dict(n.attrs)
        inputs = [names[i] for i in n.inputs]
        if n.op == "remap":
            attrs["shape"] = (n.shape[0] // chunks, *n.shape[1:])
        if n.op == "fused":
            body: Graph = n.attrs["body"]
            new = Graph(body.name)
            by_row = _fused_rows(n, rows) or set()
            inner = {p.name: new.parameter(p.name, into[inputs[k]].shape if k in by_row else p.shape, p.dtype).name
                     for k, p in enumerate(body.parameters())}
            _replay(body, new, inner, rows, chunks)
            new.outputs = {o: inner[v] for o, v in body.outputs.items()}
            attrs["body"] = new
        names[n.name] = into.emit(n.op, inputs, attrs, name=n.name).name


def _piece(graph: Graph, node: Node, rows: int, chunks: int) -> tuple[Graph, Node]:
    """A graph of one node: `node` computing `rows / chunks` of its rows."""
    g = Graph(f"{node.name}/chunk")
    by_row = row_inputs(graph, node, rows)
    names = {}
    for k, i in enumerate(node.inputs):
        t = graph[i].type
        shape = (t.shape[0] // chunks, *t.shape[1:]) if k in by_row else t.shape
        names[i] = g.parameter(f"in{k}", shape, t.dtype).name
    one = Graph(graph.name)
    for i in node.inputs:
        one.add_node(Node(i, "parameter", (), graph[i].type))
    one.add_node(node)
    _replay(one, g, names, rows, chunks)
    return g, g[node.name]


def _tasks(sharded: ShardedGraph, cfg: Config, cost: KernelCost, chunks: int) -> list[Task]:
    graph = sharded.graph
    params = graph.parameters()
    rows = params[0].shape[0] if params and params[0].shape else 0
    if chunks > 1 and (not rows or rows % chunks):
        raise CompilerError(f"{rows} rows (the first input's leading axis) do not split into {chunks} chunks")
    clock = cfg.chip.clock_mhz * 1e6
    producers: dict[str, list[str]] = {}   # local node -> the tasks that produce it (one per chunk, or one)
    chunked: set[str] = set()
    plan: list[list[Task]] = []            # per node, its tasks (one, or one per chunk)
    for node in graph.topo_order():
        if node.op in ("parameter", "constant"):
            producers[node.name] = []
            continue
        pieces = chunks if chunks > 1 and row_local(graph, node, rows) else 1
        tasks = []
        by_row = row_inputs(graph, node, rows) if pieces > 1 else set()
        for c in range(pieces):
            deps: list[str] = []
            for k, i in enumerate(node.inputs):
                deps += [producers[i][c]] if k in by_row and i in chunked else producers[i]
            name = node.name if pieces == 1 else f"{node.name}#{c}"
            label = f"{node.op} %{node.name}" + (f" [{c}]" if pieces > 1 else "")
            if node.op in COLLECTIVE_OPS:
                nbytes = graph[node.inputs[0]].type.nbytes if node.op == "all_reduce" else node.type.nbytes
                tasks.append(Task(name, node.op, tuple(deps), bytes=nbytes // pieces, label=label))
                continue
            cycles = None
            if node.op != "reshape":
                g, n = (graph, node) if pieces == 1 else _piece(graph, node, rows, chunks)
                cycles = cost(g, n)
            if cycles is None:  # a view, or a kernel the costing leaves out: its users wait on its inputs
                tasks.append(Task(name, "view", tuple(dict.fromkeys(deps))))
            else:
                tasks.append(Task(name, "kernel", tuple(dict.fromkeys(deps)), cycles=cycles, label=label,
                                  weight=cycles / clock))
        if pieces > 1:
            chunked.add(node.name)
        plan.append(tasks)
        producers[node.name] = [t.name for t in tasks]
    # views are no operations: their users wait on what the view waits on
    resolved: dict[str, tuple[str, ...]] = {}
    for tasks in plan:
        for t in tasks:
            deps = tuple(dict.fromkeys(d2 for d in t.deps for d2 in resolved.get(d, (d,))))
            if t.kind == "view":
                resolved[t.name] = deps
            else:
                resolved[t.name] = (t.name,)
    order = _chunk_major(plan)
    return [replace(t, deps=tuple(dict.fromkeys(d2 for d in t.deps for d2 in resolved[d])))
            for t in order if t.kind != "view"]


def _chunk_major(plan: list[list[Task]]) -> list[Task]:
    """Issue order: runs of chunked nodes chunk by chunk (chunk 0's kernels and collectives, then chunk
    1's, as analysis/sharding.py issues them), whole nodes where they are."""
    out: list[Task] = []
    run: list[list[Task]] = []
    for tasks in [*plan, []]:
        if len(tasks) > 1:
            run.append(tasks)
            continue
        for c in range(len(run[0]) if run else 0):
            out += [tasks_of[c] for tasks_of in run]
        run = []
        out += tasks
    return out


@dataclass(frozen=True)
class ShardRun:
    """A sharded graph as a program on a node and its run: GPU 0's compute, communication and overlap, the
    whole time, and the one-GPU time of the same graph (same costing) for the speed-up."""

    sharded: ShardedGraph
    config: str
    interconnect: str
    chunks: int
    program: Program
    report: ProgramReport
    single_seconds: float
    schedule: Schedule | None = None

    @property
    def speedup(self) -> float:
        return self.single_seconds / self.report.seconds if self.report.seconds else 1.0

    def summary(self) -> str:
        us = 1e6
        b = self.report.busy(0)
        s = self.sharded
        kernels = sum(1 for op in self.program.ops if op.kind == "kernel" and op.gpu == 0)
        lines = [f"{s.original.name} sharded over {s.gpus} GPUs ({s.strategy} parallel) on {self.config} "
                 f"({self.interconnect}), {self.chunks} chunk(s)", *(f"  {d}" for d in s.decisions),
                 f"per GPU: {kernels} kernels (chunks counted), {len(s.collectives())} collective(s) "
                 f"({sum(1 for op in self.program.ops if isinstance(op, Collective))} with chunks)",
                 f"GPU 0: compute {b['compute'] * us:,.1f} us, communication {b['communication'] * us:,.1f} us, "
                 f"overlap {b['overlap'] * us:,.1f} us; total {self.report.seconds * us:,.1f} us; one GPU "
                 f"{self.single_seconds * us:,.1f} us; speed-up {self.speedup:.2f}x"]
        if self.schedule is not None:
            lines.append(self.schedule.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        b = self.report.busy(0)
        return {"model": self.sharded.original.name, "gpus": self.sharded.gpus, "strategy": self.sharded.strategy,
                "config": self.config, "interconnect": self.interconnect, "chunks": self.chunks,
                "decisions": list(self.sharded.decisions),
                "collectives": [{"node": n.name, "op": n.op, "type": str(n.type)} for n in self.sharded.collectives()],
                "compute_seconds": b["compute"], "communication_seconds": b["communication"],
                "overlap_seconds": b["overlap"], "total_seconds": self.report.seconds,
                "single_gpu_seconds": self.single_seconds, "speedup": self.speedup,
                "streams": None if self.schedule is None else {
                    "one_stream_seconds": self.schedule.serial.seconds,
                    "streams_seconds": self.schedule.parallel.seconds, "saved_seconds": self.schedule.saved_seconds}}


def shard_program(sharded: ShardedGraph, cfg: Config, cost: KernelCost, *, chunks: int = 1,
                  streams: int = 2) -> tuple[Program, Schedule]:
    """`sharded` on GPUs 0..N-1 of `cfg`'s node: every GPU's kernels (each node costed by `cost`, which may
    leave one out by returning None; with `chunks` > 1 the row-wise nodes run in chunks of rows, as
    analysis/sharding.py does) and the collectives, spread over `streams` streams; and the same on one
    stream (the Schedule)."""
    if sharded.gpus > cfg.system.gpus:
        raise CompilerError(f"{cfg.name} has {cfg.system.gpus} GPUs (system.gpus), not {sharded.gpus}")
    tasks = _tasks(sharded, cfg, cost, chunks)
    name = f"{sharded.original.name}_{sharded.gpus}gpu"
    sched = schedule(tasks, cfg, range(sharded.gpus), streams, name,
                     f"{sharded.original.name} sharded over {sharded.gpus} GPUs ({sharded.strategy} parallel)")
    return sched.program, sched


def run_sharded(graph: Graph, cfg: Config, gpus: int, *, strategy: str = "tensor", cost: KernelCost,
                chunks: int = 1, streams: int = 2, optimise: Callable[[Graph], Graph] | None = None) -> ShardRun:
    """Shard `graph` over `gpus` GPUs of `cfg`'s node (each GPU's graph then passed through `optimise`,
    e.g. the fusion pipeline), run it, and run the one-GPU version the same way for the speed-up."""
    def sharded_over(n: int) -> ShardedGraph:
        s = shard(graph, n, strategy)
        return s if optimise is None else replace(s, graph=optimise(s.graph))

    sharded = sharded_over(gpus)
    program, sched = shard_program(sharded, cfg, cost, chunks=chunks, streams=streams)
    single = sched.parallel.seconds if gpus == 1 else shard_program(sharded_over(1), cfg, cost, chunks=chunks,
                                                                   streams=streams)[1].parallel.seconds
    return ShardRun(sharded, cfg.name, cfg.system.gpu_interconnect, chunks, program, sched.parallel, single, sched)
