"""The optimised graph written back as ONNX (`gpusim compile MODEL --save-onnx OUT.onnx`).

Every operator is written as standard ONNX operators of the default domain (opset 17), a fused node as
the decomposition of its body: no custom domain. A file of standard operators loads in any ONNX tool
(onnx.checker, onnx.reference.ReferenceEvaluator, onnxruntime) and gives the same values, while the
fusion stays visible: a fused node's operators are named `<fused node>/<operator node>` and carry
`gpusim.kernel=<fused node>` in their doc_string, and the model's metadata lists each kernel's operators
(`gpusim.kernels`, JSON). A custom-domain node per kernel would say the same more compactly but no
runtime could run it.

| IR operator | ONNX |
|---|---|
| matmul, matmul_t | MatMul (matmul_t: Transpose of the flagged operand's last two axes first) |
| conv | Conv (strides, pads, dilations, group; not a stuffed input or negative pads: a CompilerError) |
| add, sub, mul, div, pow, maximum, minimum | Add, Sub, Mul, Div, Pow, Max, Min |
| relu, exp, tanh, sigmoid, erf, sqrt, log, neg, abs, sign | the operator of that name |
| clip, leaky_relu, elu, selu, softplus, cast | Clip, LeakyRelu, Elu, Selu, Softplus, Cast |
| gelu | x * 0.5 * (1 + Erf(x / sqrt 2)), or its tanh form |
| where | Where(Not(Equal(cond, 0)), a, b) |
| softmax, log_softmax | Softmax, LogSoftmax (axis) |
| layernorm | LayerNormalization (a scale of ones when it has none) |
| reduce_sum, reduce_mean, reduce_max | ReduceSum, ReduceMean, ReduceMax |
| remap | Gather of the flattened input at constant indices, Where for the fill |
| concat, transpose, reshape | Concat, Transpose, Reshape |
| fused_attention | one kernel's decomposition: MatMul(q, b) (b Transposed if trans_b), Mul, Softmax, MatMul |"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.ops import remap_indices

OPSET = 17
SIMPLE = {"matmul": "MatMul", "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
          "maximum": "Max", "minimum": "Min", "relu": "Relu", "exp": "Exp", "tanh": "Tanh", "sigmoid": "Sigmoid",
          "erf": "Erf", "sqrt": "Sqrt", "log": "Log", "neg": "Neg", "abs": "Abs", "sign": "Sign",
          "softplus": "Softplus", "transpose": "Transpose", "concat": "Concat", "softmax": "Softmax",
          "log_softmax": "LogSoftmax", "leaky_relu": "LeakyRelu", "elu": "Elu", "selu": "Selu"}
ATTRS = {"transpose": {"perm": "perm"}, "concat": {"axis": "axis"}, "softmax": {"axis": "axis"},
         "log_softmax": {"axis": "axis"}, "leaky_relu": {"alpha": "alpha"}, "elu": {"alpha": "alpha"},
         "selu": {"alpha": "alpha", "gamma": "gamma"}}


def _elem_type(dtype: str) -> int:
    from onnx import TensorProto

    return {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "i32": TensorProto.INT32}[dtype]


class _Writer:
    """Builds the ONNX nodes and initializers of a graph (and of fused bodies, inlined)."""

    def __init__(self):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list = []
        self.initializers: list = []
        self.kernels: dict[str, list[str]] = {}
        self._count = 0

    def fresh(self, base: str) -> str:
        self._count += 1
        return f"{base}.{self._count}"

    def const(self, value: Any, dtype: str | np.dtype, base: str = "c") -> str:
        name = self.fresh(base)
        array = np.asarray(value, dtype=np.dtype(dtype) if not isinstance(dtype, str) else
                           {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64}[dtype])
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def emit(self, op: str, inputs: list[str], output: str, kernel: str | None, **attrs) -> str:
        node = self.helper.make_node(op, inputs, [output], name=output, **attrs)
        if kernel is not None:
            node.doc_string = f"gpusim.kernel={kernel}"
        self.nodes.append(node)
        return output

    def graph(self, graph: Graph, names: dict[str, str], prefix: str = "", kernel: str | None = None) -> None:
        """Every non-parameter node of `graph`, its inputs named by `names` (updated with its outputs)."""
        for node in graph.topo_order():
            if node.op == "parameter":
                continue
            out = f"{prefix}{node.name}"
            names[node.name] = self.node(node, [names[i] for i in node.inputs], out, kernel)

    def node(self, node: Node, inputs: list[str], out: str, kernel: str | None) -> str:
        op, a = node.op, node.attrs
        if op == "constant":
            name = self.fresh(out)
            self.initializers.append(self.numpy_helper.from_array(
                np.asarray(a["value"]).astype(node.type.numpy_dtype), name))
            return name
        if op == "fused":
            body: Graph = a["body"]
            inner = {p.name: i for p, i in zip(body.parameters(), inputs, strict=True)}
            self.graph(body, inner, f"{out}/", out)
            self.kernels[out] = [n.op for n in body.topo_order() if n.op != "parameter"]
            return self.emit("Identity", [inner[body.outputs[next(iter(body.outputs))]]], out, out)
        if op == "fused_attention":  # one kernel: its decomposition, named and tagged as a fused node's
            b = inputs[1]
            if a["trans_b"]:
                rank = len(self._shape_of(node, 1))
                b = self.emit("Transpose", [b], f"{out}/kT", out, perm=[*range(rank - 2), rank - 1, rank - 2])
            scores = self.emit("MatMul", [inputs[0], b], f"{out}/scores", out)
            scaled = self.emit("Mul", [scores, self.const(a["scale"], node.dtype)], f"{out}/scaled", out)
            probs = self.emit("Softmax", [scaled], f"{out}/probs", out, axis=-1)
            self.kernels[out] = ["matmul", "mul", "softmax", "matmul"]
            return self.emit("MatMul", [probs, inputs[2]], out, out)
        if op in SIMPLE:
            extra = {onnx_name: _attr(a[ir]) for ir, onnx_name in ATTRS.get(op, {}).items()}
            return self.emit(SIMPLE[op], inputs, out, kernel, **extra)
        if op == "matmul_t":
            swapped = []
            for x, flag in zip(inputs, (a["trans_a"], a["trans_b"]), strict=True):
                if flag:
                    rank = len(self._rank_of(node, x, inputs))
                    x = self.emit("Transpose", [x], self.fresh(f"{out}.T"), kernel,
                                  perm=[*range(rank - 2), rank - 1, rank - 2])
                swapped.append(x)
            return self.emit("MatMul", swapped, out, kernel)
        if op == "conv":
            if any(u != 1 for u in a["input_dilation"]) or min(a["pads"]) < 0:
                raise CompilerError(f"node %{node.name}: no ONNX Conv for a convolution with input_dilation "
                                    f"{list(a['input_dilation'])} or pads {list(a['pads'])} (a transposed "
                                    "convolution's stuffed input, a crop)")
            return self.emit("Conv", inputs, out, kernel, strides=list(a["strides"]), pads=list(a["pads"]),
                             dilations=list(a["dilations"]), group=a["group"])
        if op == "gelu":
            x = inputs[0]
            dt = node.dtype
            if a["approximate"] == "tanh":
                cube = self.emit("Mul", [x, self.emit("Mul", [x, x], self.fresh(out), kernel)], self.fresh(out), kernel)
                inner = self.emit("Add", [x, self.emit("Mul", [cube, self.const(0.044715, dt)], self.fresh(out),
                                                       kernel)], self.fresh(out), kernel)
                core = self.emit("Tanh", [self.emit("Mul", [inner, self.const(math.sqrt(2 / math.pi), dt)],
                                                    self.fresh(out), kernel)], self.fresh(out), kernel)
            else:
                core = self.emit("Erf", [self.emit("Div", [x, self.const(math.sqrt(2.0), dt)], self.fresh(out),
                                                   kernel)], self.fresh(out), kernel)
            one = self.emit("Add", [core, self.const(1.0, dt)], self.fresh(out), kernel)
            half = self.emit("Mul", [x, self.const(0.5, dt)], self.fresh(out), kernel)
            return self.emit("Mul", [half, one], out, kernel)
        if op == "clip":
            return self.emit("Clip", [inputs[0], self.const(a["min"], node.dtype), self.const(a["max"], node.dtype)],
                             out, kernel)
        if op == "cast":
            return self.emit("Cast", inputs, out, kernel, to=_elem_type(a["to"]))
        if op == "where":
            zero = self.const(0, self._dtype_hint(node, 0))
            equal = self.emit("Equal", [inputs[0], zero], self.fresh(out), kernel)
            cond = self.emit("Not", [equal], self.fresh(out), kernel)
            return self.emit("Where", [cond, inputs[1], inputs[2]], out, kernel)
        if op == "layernorm":
            norm = node.shape[a["axis"]:]
            scale = inputs[1] if len(inputs) > 1 else self.const(np.ones(norm), node.dtype)
            extra = inputs[2:]
            if len(inputs) > 1 and self._shape_of(node, 1) != norm:  # a broadcast scale: expanded to the axes
                scale = self.emit("Expand", [scale, self.const(norm, "i64")], self.fresh(out), kernel)
            if extra and self._shape_of(node, 2) != norm:
                extra = [self.emit("Expand", [extra[0], self.const(norm, "i64")], self.fresh(out), kernel)]
            return self.emit("LayerNormalization", [inputs[0], scale, *extra], out, kernel, axis=a["axis"],
                             epsilon=float(a["eps"]))
        if op in ("reduce_sum", "reduce_mean", "reduce_max"):
            onnx_op = {"reduce_sum": "ReduceSum", "reduce_mean": "ReduceMean", "reduce_max": "ReduceMax"}[op]
            keep = int(bool(a["keepdims"]))
            if op == "reduce_sum":  # axes an input since opset 13
                return self.emit(onnx_op, [inputs[0], self.const(list(a["axes"]), "i64")], out, kernel, keepdims=keep)
            return self.emit(onnx_op, inputs, out, kernel, axes=list(a["axes"]), keepdims=keep)
        if op == "reshape":
            return self.emit("Reshape", [inputs[0], self.const(list(a["shape"]), "i64")], out, kernel)
        if op == "remap":
            flat, inside = remap_indices(self._shape_of(node, 0), a)
            x = self.emit("Reshape", [inputs[0], self.const([-1], "i64")], self.fresh(out), kernel)
            got = self.emit("Gather", [x, self.const(np.where(inside, flat, 0).reshape(a["shape"]), "i64")],
                            self.fresh(out) if not inside.all() else out, kernel, axis=0)
            if inside.all():
                return got
            return self.emit("Where", [self.const(inside.reshape(a["shape"]), np.dtype(bool)), got,
                                       self.const(a["fill"], node.dtype)], out, kernel)
        raise CompilerError(f"node %{node.name}: no ONNX form for operator {op!r}")

    # the types of a node's operands, recorded before the node is written (set by export)
    operand_shapes: dict[str, tuple[tuple[int, ...], ...]] = {}
    operand_dtypes: dict[str, tuple[str, ...]] = {}

    def _shape_of(self, node: Node, i: int) -> tuple[int, ...]:
        return self.operand_shapes[id(node)][i]

    def _rank_of(self, node: Node, x: str, inputs: list[str]) -> tuple[int, ...]:
        return self._shape_of(node, inputs.index(x))

    def _dtype_hint(self, node: Node, i: int) -> str:
        return self.operand_dtypes[id(node)][i]


def _attr(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _record_types(writer: _Writer, graph: Graph) -> None:
    """The operand shapes and dtypes of every node of `graph` and of fused bodies (by node identity)."""
    shapes, dtypes = {}, {}

    def walk(g: Graph) -> None:
        for n in g.topo_order():
            shapes[id(n)] = tuple(g[i].shape for i in n.inputs)
            dtypes[id(n)] = tuple(g[i].dtype for i in n.inputs)
            if n.op == "fused":
                walk(n.attrs["body"])

    walk(graph)
    writer.operand_shapes, writer.operand_dtypes = shapes, dtypes


def to_onnx(graph: Graph):
    """The ONNX ModelProto of `graph` (module docstring)."""
    import onnx
    from onnx import helper

    writer = _Writer()
    _record_types(writer, graph)
    names = {p.name: p.name for p in graph.parameters()}
    writer.graph(graph, names)
    outputs = []
    for out, name in graph.outputs.items():
        if names[name] != out:
            writer.emit("Identity", [names[name]], out, None)
        outputs.append(helper.make_tensor_value_info(out, _elem_type(graph[name].dtype), list(graph[name].shape)))
    inputs = [helper.make_tensor_value_info(p.name, _elem_type(p.dtype), list(p.shape)) for p in graph.parameters()]
    model = helper.make_model(helper.make_graph(writer.nodes, graph.name, inputs, outputs, writer.initializers),
                              opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gpusim")
    model.ir_version = 8  # what opset 17 needs; readable by onnxruntime 1.13 and later
    helper.set_model_props(model, {"gpusim.kernels": json.dumps(writer.kernels)})
    onnx.checker.check_model(model)
    return model


def save_onnx(graph: Graph, path: str | os.PathLike) -> None:
    """Write `graph` as ONNX to `path` (checked by onnx.checker first)."""
    import onnx

    try:
        onnx.save(to_onnx(graph), str(path))
    except OSError as e:
        raise CompilerError(f"--save-onnx {path}: {e.strerror or e}") from None
