"""What one kernel computes: a node of the graph (an operator, or a fused group with its body) as a
list of operations over the tensors it reads from global memory."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.tensor import FLOAT_DTYPES, TensorType


@dataclass(frozen=True, slots=True)
class Input:
    """A tensor a kernel reads: `name` as its operations refer to it, `buffer` the global-memory tensor
    holding it (reshapes followed: a reshape is a view), its type as the operations see it, and for a
    one-element constant its value (`scalar`), which becomes an immediate instead of a buffer."""

    name: str
    buffer: str
    type: TensorType
    scalar: float | None = None


@dataclass(frozen=True, slots=True)
class Region:
    """A graph node as a kernel sees it: its inputs and its operations in topological order, root last."""

    node: Node
    inputs: tuple[Input, ...]
    ops: tuple[Node, ...]

    @property
    def root(self) -> Node:
        return self.ops[-1]

    @property
    def buffers(self) -> tuple[Input, ...]:
        """The inputs read from global memory (not immediates)."""
        return tuple(i for i in self.inputs if i.scalar is None)

    def find(self, op: str) -> Node:
        return next(n for n in self.ops if n.op == op)


def buffer_of(graph: Graph, name: str) -> str:
    """The tensor in global memory that holds `name`: reshapes are views of their input."""
    while graph[name].op == "reshape":
        name = graph[name].inputs[0]
    return name


def kernel_name(node: str) -> str:
    """A valid kernel name for a node."""
    return "k_" + re.sub(r"\W", "_", node)


def region_of(graph: Graph, node: Node) -> Region:
    """The region of `node` (a plain operator or a fused node) in `graph`."""
    # i8 (quantised tensors) passes through f32 registers exactly; an i32 matmul result too, its sums
    # exact below 2**24 (|127 x 127| x K for K up to 1040)
    matmul = node.op in ("matmul", "matmul_t") or node.op == "fused" and node.attrs["kind"] == "epilogue"
    if node.dtype not in (*FLOAT_DTYPES, "i8") and not (node.dtype == "i32" and matmul):
        raise CompilerError(f"node %{node.name} ({node.op}): lowering supports {', '.join(FLOAT_DTYPES)} and i8 "
                            f"tensors (and an i32 matmul result), not {node.dtype}")
    if node.op == "fused":
        body: Graph = node.attrs["body"]
        names = [p.name for p in body.parameters()]
        ops = [n for n in body.topo_order(body.outputs.values()) if n.op != "parameter"]
    else:
        names, ops = list(dict.fromkeys(node.inputs)), [node]
    outer = node.inputs if node.op == "fused" else names
    inputs = []
    for name, source in zip(names, outer, strict=True):
        buffer = buffer_of(graph, source)
        held = graph[buffer]
        scalar = None
        if held.op == "constant" and held.type.size == 1:
            scalar = float(held.attrs["value"].reshape(-1)[0])
        inputs.append(Input(name, buffer, graph[source].type, scalar))
    return Region(node, tuple(inputs), tuple(ops))
