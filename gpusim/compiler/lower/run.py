"""Running lowered kernels on the functional executor, one after another over one global memory, as a
GPU runs a model: every tensor a buffer, intermediate results written by one kernel and read by the next."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.evaluate import bind_inputs
from gpusim.compiler.ir import Graph
from gpusim.compiler.lower.kernel import Kernel
from gpusim.compiler.lower.region import buffer_of
from gpusim.config import Config
from gpusim.functional import GlobalMemory, execute


def run_kernels(graph: Graph, kernels: Sequence[Kernel], inputs: Mapping[str, ArrayLike],
                cfg: Config | None = None, plan=None) -> dict[str, np.ndarray]:
    """Run `kernels` (lowered from `graph`, in order) on `inputs` (as for `evaluate`) and return the
    graph's outputs by output name. With a `plan` (memplan.MemoryPlan) the tensors the kernels write
    live at its offsets in one arena instead of one allocation each."""
    values = bind_inputs(graph, inputs)
    values |= {n.name: n.attrs["value"] for n in graph.nodes.values() if n.op == "constant"}
    produced = {k.output: graph[k.output].type for k in kernels}
    size = sum(v.nbytes for v in values.values()) + sum(t.nbytes for t in produced.values())
    # a whole number of 8-byte words, so that every element type has a view of the memory (an f16
    # tensor of odd length would otherwise leave f32 loads without one)
    capacity = size + 512 * (len(values) + len(produced) + 1)
    memory = GlobalMemory(capacity=-(-capacity // 8) * 8)
    address = {name: memory.alloc_array(np.ascontiguousarray(v), name) for name, v in values.items()}
    if plan is None:
        address |= {name: memory.alloc(t.nbytes, name) for name, t in produced.items()}
    else:
        arena = memory.alloc(plan.size, "arena")
        address |= {name: arena + plan.offsets[name] for name in produced}
    for k in kernels:
        missing = sorted(b for b in k.args.values() if b not in address)
        if missing:
            names = ", ".join("%" + m for m in missing)
            raise CompilerError(f"kernel {k.name} reads {names}, which no kernel computes")
        execute(k.program, k.launch, {p: address[b] for p, b in k.args.items()}, memory, cfg=cfg)
    outputs = {}
    for out, name in graph.outputs.items():
        t, buffer = graph[name].type, buffer_of(graph, name)
        if buffer not in address:
            raise CompilerError(f"output '{out}': no kernel computes %{buffer}")
        outputs[out] = memory.read(address[buffer], t.numpy_dtype, t.size).reshape(t.shape)
    return outputs
