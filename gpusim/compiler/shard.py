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
GPUs' values, so a test can check it against `evaluate` on the original graph. This module plans; what
the plan costs on a node of GPUs (kernels, collectives on the links, streams) is shard_cost.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.evaluate import bind_inputs, evaluate_node
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.ops import Kind, kind_of
from gpusim.compiler.tensor import TensorType
from gpusim.compiler.verify import verify

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
