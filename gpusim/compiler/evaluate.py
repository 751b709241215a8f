"""The numpy reference evaluator: the ground truth every later stage is checked against. Each operator
computes in float64 (int64 for i32 and i8) and rounds its result to its node's dtype. The evaluator runs
subgraphs: a fused node's body, and the chosen branch of an `if` or the body of a `loop` (their numpy
semantics, registered here into the operator table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.ops import OPS, register
from gpusim.compiler.tensor import is_float
from gpusim.compiler.verify import verify


def evaluate(graph: Graph, inputs: Mapping[str, ArrayLike]) -> dict[str, np.ndarray]:
    """Verify `graph`, run it on `inputs` (parameter name -> array of the parameter's shape; floats for
    float parameters, integers for i32) and return its outputs by output name."""
    verify(graph)
    return _run(graph, bind_inputs(graph, inputs))


def evaluate_node(node: Node, args: list[np.ndarray]) -> np.ndarray:
    """One node's value from its inputs' values (not for parameters)."""
    if node.op == "fused":
        body = node.attrs["body"]
        (value,) = _run(body, {p.name: a for p, a in zip(body.parameters(), args, strict=True)}).values()
        return value
    wide = [a.astype(np.float64 if is_float(a.dtype) else np.int64) for a in args]
    with np.errstate(all="ignore"):
        return np.asarray(OPS[node.op].compute(wide, node.attrs)).astype(node.type.numpy_dtype)


def _run(graph: Graph, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    for node in graph.topo_order():
        if node.op != "parameter":
            values[node.name] = evaluate_node(node, [values[i] for i in node.inputs])
    return {out: values[name] for out, name in graph.outputs.items()}


def bind_inputs(graph: Graph, inputs: Mapping[str, ArrayLike]) -> dict[str, np.ndarray]:
    """`inputs` checked against the graph's parameters (names, shapes, kinds) and cast to their dtypes;
    CompilerError naming what is missing, unknown or misshapen."""
    params = graph.parameters()
    unknown = sorted(set(inputs) - {p.name for p in params})
    if unknown:
        raise CompilerError(f"unknown input(s) {', '.join(unknown)}; the parameters are "
                            f"{', '.join(p.name for p in params)}")
    values = {}
    for p in params:
        if p.name not in inputs:
            raise CompilerError(f"missing input '{p.name}' ({p.type})")
        value = np.asarray(inputs[p.name])
        if value.shape != p.shape:
            raise CompilerError(f"input '{p.name}' has shape {list(value.shape)}; the parameter is {p.type}")
        if is_float(value.dtype) != is_float(p.type.numpy_dtype) or not (is_float(value.dtype)
                                                                         or value.dtype.kind in "iu"):
            raise CompilerError(f"input '{p.name}' is {value.dtype}; the parameter is {p.type}")
        values[p.name] = value.astype(p.type.numpy_dtype)
    return values


def evaluate_exact(graph: Graph, inputs: Mapping[str, ArrayLike]) -> dict[str, np.ndarray]:
    """As `evaluate`, but every float value stays float64 (no rounding to the nodes' dtypes): for
    finite-difference checks, where f32 rounding would swamp a small step."""
    verify(graph)
    values = {p.name: np.asarray(inputs[p.name], np.float64 if p.type.numpy_dtype.kind == "f" else np.int64)
              for p in graph.parameters()}
    for node in graph.topo_order():
        if node.op != "parameter":
            args = [values[i] for i in node.inputs]
            with np.errstate(all="ignore"):
                values[node.name] = np.asarray(OPS[node.op].compute(args, node.attrs), np.float64)
    return {out: values[name] for out, name in graph.outputs.items()}


def _call(graph: Graph, args: list[np.ndarray]) -> np.ndarray:
    (value,) = evaluate(graph, {p.name: a for p, a in zip(graph.parameters(), args, strict=True)}).values()
    return value


def compute_if(args: list[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    """An `if`: the branch the condition names, applied to the captures."""
    branch = "then_branch" if args[0].reshape(-1)[0] != 0 else "else_branch"
    return _call(attrs[branch].graph, args[1:])


def compute_loop(args: list[np.ndarray], attrs: Mapping[str, Any]) -> np.ndarray:
    """A `loop`: the body applied trip-count times to the loop-carried value."""
    count = attrs["trip_count"]
    if count is None:
        count, args = int(args[0].reshape(-1)[0]), args[1:]
    x, captures = args[0], args[1:]
    for i in range(count):
        x = _call(attrs["body"].graph, [np.asarray(i, np.int64), x, *captures])
    return x


register("if", compute=compute_if)
register("loop", compute=compute_loop)
