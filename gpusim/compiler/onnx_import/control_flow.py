"""ONNX converters of control flow: If (one output) to an `if` node, Loop (one loop-carried value, a
trip count, an exit condition that stays true) to a `loop` node (control_flow.py). Each subgraph is
imported by a sub-importer with the same converters; the outer values it reads become its parameters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpusim.compiler.control_flow import emit_if, emit_loop
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph
from gpusim.compiler.onnx_import.importer import Importer
from gpusim.compiler.tensor import TensorType

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


def _import_body(importer: Importer, body, leading: Sequence[tuple[str, TensorType]], name: str):
    """The Graph of ONNX subgraph `body`: parameters `leading` (name, type) first, then one per outer
    value it captures; returns (the sub-importer, the graph, the outer node names captured)."""
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
    sub = importer.subgraph(model)
    return sub, sub.graph, captured


def import_if(importer: Importer, node, attrs, out):
    """ONNX If (one output) -> an `if` node; both branches capture the union of what they read."""
    if len(node.output) != 1:
        raise CompilerError(f"onnx node '{node.name or out}' (If): one output is supported, not {len(node.output)}")
    cond = importer.tensor(node.input[0], node)
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


def import_loop(importer: Importer, node, attrs, out):
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
    x = importer.tensor(x0, node)
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
    trip = importer.tensor(m, node)
    return emit_loop(importer.graph, body_g, x, captures, trip_count=trip, name=out)


def _replace_cond(onnx, body, cond_in: str):
    """The body with its condition input turned into a constant true initializer."""
    g = onnx.GraphProto()
    g.CopyFrom(body)
    del g.input[1]
    g.initializer.append(onnx.numpy_helper.from_array(np.array(True), cond_in))
    return g
