"""Sharding as a pass: a graph split over N GPUs, tensor parallel (Megatron) or data parallel, with the
collectives it needs inserted as graph nodes (`all_reduce`, `all_gather`).

The result is one graph that every GPU runs on its own shard of the inputs (SPMD). Each tensor of the
original graph has a layout on the GPUs:

- R, replicated: every GPU holds all of it;
- S(a), split: GPU r holds the r-th of N equal blocks along axis a;
- P, partial: every GPU holds a tensor of the full shape, and the value is their sum.

The pass walks the graph in topological order and gives every node the layout its inputs allow:

- tensor parallel: a matmul reading a replicated activation and a weight (a parameter) splits the weight
  by columns (its output is S(last)); a matmul reading an activation split along its last axis splits its
  weight by rows (the output is P). That is Megatron's pattern: QKV and the MLP's up projection by
  columns, the attention output and the MLP's down projection by rows, an all-reduce after each pair.
  Between them the split travels: a bias is split with the columns, element-wise operators keep the
  split, reshape and transpose move it (the attention's (seq, d_model) columns become its heads), batched
  matmuls over split heads stay split, softmax keeps a split off its axis;
- data parallel: the data inputs (parameters that are not weights) are split along axis 0 and every
  weight is replicated; row-wise operators keep the split;
- anything else needs its inputs whole: a P input is all-reduced, an S input all-gathered (each once).
  The outputs are made whole the same way.

`merge_siblings` (on by default) is Megatron's fused QKV: column-split matmuls that read the same input
run as one GEMM over their weights' shards laid side by side on each GPU, the results cut apart by
column slices (`remap`), instead of three GEMMs of a third of the width.

`evaluate_sharded` runs the sharded graph on the N GPUs' shards in numpy, the collectives combining the
GPUs' values, so a test can check it against `evaluate` on the original graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.evaluate import bind_inputs, evaluate_node
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower.lowering import lower_node
from gpusim.compiler.ops import Kind, kind_of
from gpusim.compiler.streams import Schedule, Task, schedule
from gpusim.compiler.tensor import TensorType
from gpusim.compiler.verify import verify
from gpusim.config import Config
from gpusim.system import Collective, Program
from gpusim.system.report import ProgramReport

STRATEGIES = ("tensor", "data")
COLLECTIVE_OPS = ("all_reduce", "all_gather")


@dataclass(frozen=True, slots=True)
class Layout:
    """R (`kind` "R"), S(axis) ("S") or P ("P"): module docstring."""

    kind: str
    axis: int | None = None

    def __str__(self) -> str:
        return f"S({self.axis})" if self.kind == "S" else self.kind


REPLICATED, PARTIAL = Layout("R"), Layout("P")


def split(axis: int) -> Layout:
    return Layout("S", axis)


@dataclass(frozen=True, slots=True)
class Piece:
    """Part of a local parameter: global input `source` cut along `axis` (None: whole)."""

    source: str
    axis: int | None


@dataclass(frozen=True)
class ShardedGraph:
    """What every GPU runs (`graph`, with collective nodes over `gpus` GPUs), how each of its parameters is
    cut from the original graph's inputs (pieces joined along their last axis when there are several),
    the layout of every original node, and the pass's decisions in words."""

    original: Graph
    graph: Graph
    gpus: int
    strategy: str
    params: Mapping[str, tuple[Piece, ...]]
    layouts: Mapping[str, Layout]
    decisions: tuple[str, ...] = field(default=())

    def collectives(self) -> list[Node]:
        return [n for n in self.graph.topo_order() if n.op in COLLECTIVE_OPS]

    def local_inputs(self, inputs: Mapping[str, np.ndarray], rank: int) -> dict[str, np.ndarray]:
        """GPU `rank`'s parameters cut from the original graph's (bound) `inputs`."""
        out = {}
        for name, pieces in self.params.items():
            parts = [inputs[p.source] if p.axis is None else np.split(inputs[p.source], self.gpus, p.axis)[rank]
                     for p in pieces]
            out[name] = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=-1)
        return out


def evaluate_sharded(sharded: ShardedGraph, inputs: Mapping[str, ArrayLike]) -> dict[str, np.ndarray]:
    """Run `sharded` on every GPU's shard of `inputs` (as for `evaluate` on the original graph): each node
    per GPU, an all_reduce summing the GPUs' values, an all_gather joining them in GPU order; the outputs
    as GPU 0 holds them."""
    bound = bind_inputs(sharded.original, inputs)
    n = sharded.gpus
    values = [sharded.local_inputs(bound, r) for r in range(n)]
    for node in sharded.graph.topo_order():
        if node.op == "parameter":
            continue
        args = [[v[i] for i in node.inputs] for v in values]
        if node.op == "all_reduce":
            total = np.sum([a[0].astype(np.float64) for a in args], axis=0).astype(node.type.numpy_dtype)
            results = [total] * n
        elif node.op == "all_gather":
            whole = np.concatenate([a[0] for a in args], axis=node.attrs["axis"])
            results = [whole] * n
        else:
            results = [evaluate_node(node, a) for a in args]
        for v, result in zip(values, results, strict=True):
            v[node.name] = result
    return {out: values[0][name] for out, name in sharded.graph.outputs.items()}


def weights_of(graph: Graph) -> set[str]:
    """The parameters that are weights: read as a matmul's right operand, or of lower rank than the
    graph's first parameter (biases, scales)."""
    params = graph.parameters()
    rank = params[0].type.rank if params else 0
    weights = {p.name for p in params if p.type.rank < rank}
    for node in graph.nodes.values():
        if node.op == "matmul" and graph[node.inputs[1]].op == "parameter":
            weights.add(node.inputs[1])
    return weights


def shard(graph: Graph, gpus: int, strategy: str = "tensor", *, merge_siblings: bool = True) -> ShardedGraph:
    """`graph` split over `gpus` GPUs (module docstring); CompilerError for a strategy that does not exist
    or a data-parallel split that does not divide."""
    if strategy not in STRATEGIES:
        raise CompilerError(f"sharding strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise CompilerError(f"shard over a positive number of GPUs, not {gpus!r}")
    verify(graph)
    return _Sharder(graph, gpus, strategy, merge_siblings).run()


class _Sharder:
    def __init__(self, graph: Graph, n: int, strategy: str, merge: bool):
        self.g, self.n, self.strategy, self.merge = graph, n, strategy, merge
        self.out = Graph(f"{graph.name}/{n}gpu")
        self.local: dict[str, str] = {}       # original node -> local node
        self.layout: dict[str, Layout] = {}
        self.params: dict[str, tuple[Piece, ...]] = {}
        self.param_of: dict[tuple[str, int | None], str] = {}
        self.whole: dict[str, str] = {}       # original node -> its replicated local node (after a collective)
        self.merged: dict[str, tuple[str, int, int]] = {}  # original matmul -> (merged node, col start, width)
        self.decisions: list[str] = []
        self.weights = weights_of(graph)
        self.users = graph.users()

    def run(self) -> ShardedGraph:
        for node in self.g.topo_order():
            if node.op == "parameter":
                continue  # emitted when a user decides its layout
            self.visit(node)
        for out, name in self.g.outputs.items():
            self.out.output(self.replicated(name) if self.g[name].op != "parameter" else self.param(name, None),
                            out)
        return ShardedGraph(self.g, self.out, self.n, self.strategy, self.params, self.layout, tuple(self.decisions))

    # --- local tensors ----------------------------------------------------------------------------

    def param(self, name: str, axis: int | None) -> str:
        """The local parameter holding original parameter `name` cut along `axis` (None: whole)."""
        key = (name, axis)
        if key not in self.param_of:
            t = self.g[name].type
            local = name if all(k[0] != name for k in self.param_of) else f"{name}.{'whole' if axis is None else axis}"
            self.out.parameter(local, self.cut(t, axis).shape, t.dtype)
            self.params[local] = (Piece(name, axis),)
            self.param_of[key] = local
        return self.param_of[key]

    def cut(self, t: TensorType, axis: int | None) -> TensorType:
        if axis is None:
            return t
        shape = list(t.shape)
        shape[axis] //= self.n
        return TensorType(tuple(shape), t.dtype)

    def value(self, name: str) -> tuple[str, Layout]:
        """An input's local node and layout (a parameter not yet placed: replicated, or split along axis 0
        for a data input of the data-parallel strategy)."""
        if name in self.local:
            return self.local[name], self.layout[name]
        node = self.g[name]
        if node.op == "parameter" and self.strategy == "data" and name not in self.weights:
            if not node.shape or node.shape[0] % self.n:
                raise CompilerError(f"data parallel: input '{name}' {node.type} does not split along axis 0 over "
                                    f"{self.n} GPUs")
            self.decisions.append(f"%{name}: split by rows over {self.n} GPUs (data parallel)")
            self.set(name, self.param(name, 0), split(0))
        elif node.op == "parameter":
            return "", REPLICATED  # placed (whole) when a user reads it whole: loc()
        else:
            self.set(name, name, REPLICATED)
        return self.local[name], self.layout[name]

    def loc(self, name: str) -> str:
        """The local node of an input whose layout the user keeps."""
        if name not in self.local:
            local, lay = self.value(name)
            if name not in self.local:
                self.set(name, self.param(name, None), lay)
        return self.local[name]

    def set(self, name: str, local: str, layout: Layout) -> None:
        self.local[name], self.layout[name] = local, layout

    def replicated(self, name: str) -> str:
        """A local node holding all of original node `name`: an all_reduce or all_gather if it is not."""
        local, lay = self.value(name)
        if lay.kind == "R" or self.n == 1:  # one GPU holds every block and the whole sum
            return self.loc(name)
        if name not in self.whole:
            if lay.kind == "P":
                node = self.out.emit("all_reduce", (local,), {"gpus": self.n})
                self.decisions.append(f"all_reduce %{node.name} sums the partial %{local} {self.g[name].type} "
                                      f"({self.g[name].type.nbytes:,} B)")
            else:
                node = self.out.emit("all_gather", (local,), {"gpus": self.n, "axis": lay.axis})
                self.decisions.append(f"all_gather %{node.name} joins %{local} {self.g[name].type} along axis "
                                      f"{lay.axis}")
            self.whole[name] = node.name
        return self.whole[name]

    def emit(self, node: Node, inputs: list[str], layout: Layout, attrs=None) -> None:
        new = self.out.emit(node.op, inputs, node.attrs if attrs is None else attrs)
        self.set(node.name, new.name, layout)

    def emit_replicated(self, node: Node) -> None:
        self.emit(node, [self.replicated(i) for i in node.inputs], REPLICATED)

    # --- the rules ----------------------------------------------------------------------------------

    def visit(self, node: Node) -> None:
        op, kind = node.op, kind_of(node.op)
        layouts = [self.value(i)[1] for i in node.inputs]
        if op == "constant" or all(lay.kind == "R" for lay in layouts) and not self.starts_split(node):
            self.emit(node, [self.loc(i) for i in node.inputs], REPLICATED)
        elif op == "matmul":
            self.matmul(node, layouts)
        elif kind in (Kind.ELEMENTWISE, Kind.BROADCAST):
            self.pointwise(node, layouts)
        elif op in ("softmax", "log_softmax", "layernorm", "reduce_sum", "reduce_mean", "reduce_max"):
            self.reduction(node, layouts)
        elif op == "transpose" and layouts[0].kind != "R":
            lay = layouts[0]
            moved = lay if lay.kind == "P" else split(node.attrs["perm"].index(lay.axis))
            self.emit(node, [self.local[node.inputs[0]]], moved)
        elif op == "reshape" and layouts[0].kind != "R":
            self.reshape(node, layouts[0])
        else:
            self.emit_replicated(node)

    def starts_split(self, node: Node) -> bool:
        """Whether a matmul of replicated operands splits its weight by columns (tensor parallel)."""
        return (self.strategy == "tensor" and node.op == "matmul" and node.inputs[1] in self.weights
                and self.g[node.inputs[1]].op == "parameter" and self.g[node.inputs[1]].type.rank == 2
                and node.type.rank >= 2 and self.g[node.inputs[1]].shape[1] % self.n == 0
                and self.g[node.inputs[0]].type.rank >= 2)

    def matmul(self, node: Node, layouts: list[Layout]) -> None:
        a, b = node.inputs
        la, lb = layouts
        rank = node.type.rank
        weight = self.g[b].op == "parameter" and b in self.weights and self.g[b].type.rank == 2
        if weight and la.kind == "R" and self.starts_split(node):
            self.column(node)
        elif (weight and self.strategy == "tensor" and la == split(self.g[a].type.rank - 1)
              and self.g[b].shape[0] % self.n == 0):
            self.emit(node, [self.local[a], self.param(b, 0)], PARTIAL)
            self.decisions.append(f"%{b}: split by rows (Megatron row split; %{self.local[node.name]} is partial)")
        elif weight and la.kind == "S" and la.axis < self.g[a].type.rank - 1:
            self.emit(node, [self.local[a], self.loc(b)], la)  # rows of a stay rows of the product
        elif (la.kind == lb.kind == "S" and la.axis == lb.axis and self.g[a].type.rank == self.g[b].type.rank == rank
              and la.axis < rank - 2):
            self.emit(node, [self.loc(a), self.loc(b)], la)  # a batch of independent products, split
        elif la.kind == "S" and la.axis == rank - 2 and lb.kind == "R" and self.g[a].type.rank == rank:
            self.emit(node, [self.local[a], self.loc(b)], la)
        else:
            self.emit_replicated(node)

    def column(self, node: Node) -> None:
        """A column-split matmul; with `merge`, its column-split siblings reading the same input join it."""
        a, b = node.inputs
        if node.name in self.merged:
            merged, start, width = self.merged[node.name]
            self.slice(node, merged, start, width)
            return
        siblings = [u for u in self.users[a] if self.g[u].op == "matmul" and self.g[u].inputs[0] == a
                    and self.starts_split(self.g[u]) and self.g[self.g[u].inputs[1]].shape[0] == self.g[b].shape[0]]
        if not self.merge or len(siblings) < 2:
            self.emit(node, [self.loc(a), self.param(b, 1)], split(node.type.rank - 1))
            self.decisions.append(f"%{b}: split by columns (Megatron column split): %{self.local[node.name]}")
            return
        weights = [self.g[u].inputs[1] for u in siblings]
        name = "+".join(weights)
        t = self.g[b].type
        width = [self.g[w].shape[1] // self.n for w in weights]
        self.out.parameter(name, (t.shape[0], sum(width)), t.dtype)
        self.params[name] = tuple(Piece(w, 1) for w in weights)
        product = self.out.matmul(self.loc(a), name)
        self.decisions.append(f"%{', %'.join(weights)}: split by columns and laid side by side on each GPU: one "
                              f"GEMM %{product.name} (Megatron's fused QKV)")
        start = 0
        for u, w in zip(siblings, width, strict=True):
            self.merged[u] = (product.name, start, w)
            start += w
        self.column(node)

    def slice(self, node: Node, source: str, start: int, width: int) -> None:
        rank = node.type.rank
        shape = (*self.cut(node.type, rank - 1).shape[:-1], width)
        attrs = {"shape": shape, "coef": tuple(tuple(int(i == j) for j in range(rank)) for i in range(rank)),
                 "offset": (0,) * (rank - 1) + (start,), "wrap": (False,) * rank, "fill": 0.0}
        new = self.out.emit("remap", (source,), attrs)
        self.set(node.name, new.name, split(rank - 1))

    def pointwise(self, node: Node, layouts: list[Layout]) -> None:
        rank = node.type.rank
        axes = {lay.axis + rank - self.g[i].type.rank for i, lay in zip(node.inputs, layouts, strict=True)
                if lay.kind == "S"}
        if any(lay.kind == "P" for lay in layouts) or len(axes) != 1:
            self.emit_replicated(node)
            return
        (axis,) = axes
        inputs, cut = [], []
        for i, lay in zip(node.inputs, layouts, strict=True):
            t = self.g[i].type
            own = axis - (rank - t.rank)
            if lay.kind == "S" or own < 0 or t.shape[own] == 1:
                inputs.append(self.loc(i))  # split the same way, or broadcast along the split axis
            elif self.g[i].op == "parameter" and t.shape[own] % self.n == 0:
                inputs.append(self.param(i, own))
                cut.append(f"%{i}: split along axis {own}")
            else:
                self.emit_replicated(node)
                return
        self.emit(node, inputs, split(axis))
        self.decisions += [f"{c} with %{self.local[node.name]}" for c in cut]

    def reduction(self, node: Node, layouts: list[Layout]) -> None:
        lay, rank = layouts[0], self.g[node.inputs[0]].type.rank
        if node.op in ("softmax", "log_softmax"):
            reduced = (node.attrs["axis"],)
        elif node.op == "layernorm":
            reduced = tuple(range(node.attrs["axis"], rank))
        else:
            reduced = node.attrs["axes"]
        if lay.kind != "S" or lay.axis in reduced or any(x.kind != "R" for x in layouts[1:]):
            self.emit_replicated(node)
            return
        axis = lay.axis
        if node.op.startswith("reduce_") and not node.attrs["keepdims"]:
            axis -= sum(r < lay.axis for r in reduced)
        self.emit(node, [self.loc(i) for i in node.inputs], split(axis))

    def reshape(self, node: Node, lay: Layout) -> None:
        """A split axis survives a reshape when it is the outermost (non-1) axis of a group of axes the
        reshape merges or splits, and the matching output axis divides over the GPUs."""
        src, dst = self.g[node.inputs[0]].shape, node.shape
        if lay.kind == "P":
            self.emit(node, [self.local[node.inputs[0]]], PARTIAL)
            return
        axis = _reshape_axis(src, dst, lay.axis)
        if axis is None or dst[axis] % self.n:
            self.emit_replicated(node)
            return
        shape = self.cut(node.type, axis).shape
        self.emit(node, [self.local[node.inputs[0]]], split(axis), {"shape": shape})


def _reshape_axis(src: tuple[int, ...], dst: tuple[int, ...], axis: int) -> int | None:
    """The output axis a split of input `axis` becomes in a reshape src -> dst (None: it does not stay one
    block per GPU)."""
    i = j = 0
    while i < len(src) or j < len(dst):
        gi, gj, a, b = i, j, 1, 1
        while True:  # grow the group until both sides hold the same number of elements
            if a <= b and i < len(src):
                a *= src[i]
                i += 1
            elif j < len(dst):
                b *= dst[j]
                j += 1
            else:
                break
            if a == b and (i == len(src) or src[i] != 1 or j == len(dst)):
                break
        if gi <= axis < i:
            if any(src[k] != 1 for k in range(gi, axis)):
                return None
            return next((k for k in range(gj, j) if dst[k] != 1), None)
    return None


# ---- the sharded graph as a program on a node -----------------------------------------------------

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
