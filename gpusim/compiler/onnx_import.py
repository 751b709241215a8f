"""ONNX import: `import_onnx(model)` turns an ONNX model (a path or a ModelProto) into a Graph.

Graph inputs become parameters, initializers and Constant nodes constants (materialised where a value is
used as data; shapes and axes are read from them directly). Node names are the ONNX value names; helper
nodes an operator needs (Gemm's transposes and scalings) are named `<output>.<what>`. The `onnx` package
(`pip install -e ".[onnx]"`) is imported only when this is called."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import Any

import numpy as np

from gpusim.compiler.errors import CompilerError, GraphError
from gpusim.compiler.ir import Graph, Node

SUPPORTED = ("Add", "Constant", "Div", "Exp", "Gelu", "Gemm", "Identity", "LayerNormalization", "MatMul", "Mul",
             "Pow", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Softmax", "Sub", "Tanh", "Transpose")
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "MatMul": "matmul"}
UNARY = {"Relu": "relu", "Exp": "exp", "Tanh": "tanh"}
ONNX_DTYPES = {1: "f32", 10: "f16", 6: "i32"}  # TensorProto.FLOAT, FLOAT16, INT32


def import_onnx(model: str | PathLike | Any, *, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """The Graph of an ONNX model (a file path or an onnx.ModelProto). `shapes` gives static shapes for
    graph inputs whose shapes are symbolic or missing. CompilerError naming the ONNX node and its operator
    for what is not supported."""
    onnx = _onnx()
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    return _Importer(onnx, proto, dict(shapes or {})).graph


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper
    except ImportError as e:
        raise CompilerError('importing ONNX models needs the onnx package: pip install -e ".[onnx]"') from e
    return onnx


class _Importer:
    """One model's import: ONNX value names map to IR node names, or to numpy values not yet materialised."""

    def __init__(self, onnx, proto, shapes: dict[str, Sequence[int]]):
        self.onnx = onnx
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 1)
        body = proto.graph
        names = {v for n in body.node for v in n.output} | {i.name for i in body.input}
        self.graph = Graph(body.name or "onnx", reserved=names)
        self.values: dict[str, str | np.ndarray] = {
            t.name: onnx.numpy_helper.to_array(t) for t in body.initializer}
        inputs = [vi for vi in body.input if vi.name not in self.values]
        unknown = sorted(set(shapes) - {vi.name for vi in inputs})
        if unknown:
            raise CompilerError(f"shapes given for {', '.join(unknown)}, which are not graph inputs "
                                f"(those are {', '.join(vi.name for vi in inputs)})")
        for vi in inputs:
            self.values[vi.name] = self._parameter(vi, shapes).name
        for node in body.node:
            self._convert(node)
        for vi in body.output:
            self.graph.output(self._tensor(vi.name, None), vi.name)

    def _parameter(self, vi, shapes: dict[str, Sequence[int]]) -> Node:
        t = vi.type.tensor_type
        dtype = self._dtype(t.elem_type, f"input '{vi.name}'")
        if vi.name in shapes:
            return self.graph.parameter(vi.name, shapes[vi.name], dtype)
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in t.shape.dim]
        if not t.HasField("shape") or any(isinstance(d, str) for d in dims):
            raise CompilerError(f"input '{vi.name}' has no static shape ({dims}); give it with "
                                f"shapes={{'{vi.name}': (...)}}")
        return self.graph.parameter(vi.name, dims, dtype)

    def _dtype(self, elem_type: int, what: str) -> str:
        if elem_type not in ONNX_DTYPES:
            name = self.onnx.TensorProto.DataType.Name(elem_type)
            raise CompilerError(f"{what} is {name}; supported element types: FLOAT, FLOAT16, INT32")
        return ONNX_DTYPES[elem_type]

    def _tensor(self, name: str, node) -> str:
        """The IR node holding ONNX value `name` (a constant is made on first use as data)."""
        if name not in self.values:
            raise self._error(node, f"input '{name}' is not produced by any node, input or initializer")
        value = self.values[name]
        if isinstance(value, np.ndarray):
            if value.dtype == np.float64 or value.dtype == np.int64:
                raise self._error(node, f"'{name}' is {value.dtype}; supported element types: FLOAT, FLOAT16, INT32")
            value = self.values[name] = self.graph.constant(value, name=name).name
        return value

    def _constant(self, name: str, node, what: str) -> np.ndarray:
        """The numpy value of input `name`, which must be an initializer or a Constant's output."""
        value = self.values.get(name)
        if not isinstance(value, np.ndarray):
            raise self._error(node, f"{what} ('{name}') must be a constant (an initializer or a Constant node)")
        return value

    def _error(self, node, message: str) -> CompilerError:
        if node is None:
            return CompilerError(message)
        return CompilerError(f"onnx node '{node.name or node.output[0]}' ({node.op_type}): {message}")

    def _convert(self, node) -> None:
        if node.domain not in ("", "ai.onnx") or node.op_type not in CONVERTERS:
            domain = f" in domain '{node.domain}'" if node.domain not in ("", "ai.onnx") else ""
            raise self._error(node, f"unsupported operator{domain}; supported: {', '.join(SUPPORTED)}")
        attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        out = node.output[0]
        try:
            result = CONVERTERS[node.op_type](self, node, attrs, out)
        except GraphError as e:
            raise self._error(node, e.reason) from None
        self.values[out] = result.name if isinstance(result, Node) else result

    # --- converters: (importer, node, attributes, output name) -> Node, an existing node name or a value --

    def _inputs(self, node) -> list[str]:
        return [self._tensor(i, node) for i in node.input if i]

    def binary(self, node, attrs, out):
        return self.graph.emit(BINARY[node.op_type], self._inputs(node), name=out)

    def unary(self, node, attrs, out):
        return self.graph.emit(UNARY[node.op_type], self._inputs(node), name=out)

    def identity(self, node, attrs, out):
        if node.input[0] not in self.values:
            return self._tensor(node.input[0], node)  # raises: the input is not defined
        return self.values[node.input[0]]

    def constant(self, node, attrs, out):
        for key, convert in (("value", self.onnx.numpy_helper.to_array), ("value_float", np.float32),
                             ("value_floats", lambda v: np.array(v, np.float32)), ("value_int", np.int64),
                             ("value_ints", lambda v: np.array(v, np.int64))):
            if key in attrs:
                return np.asarray(convert(attrs[key]))
        raise self._error(node, f"only value, value_float(s) and value_int(s) are supported, not {', '.join(attrs)}")

    def gelu(self, node, attrs, out):
        return self.graph.gelu(self._inputs(node)[0], attrs.get("approximate", b"none").decode(), name=out)

    def gemm(self, node, attrs, out):
        a, b, *c = self._inputs(node)
        if attrs.get("transA", 0):
            a = self.graph.transpose(a, name=f"{out}.transA")
        if attrs.get("transB", 0):
            b = self.graph.transpose(b, name=f"{out}.transB")
        alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
        y = self.graph.matmul(a, b, name=out if alpha == 1 and not c else f"{out}.matmul")
        if alpha != 1:
            y = self.graph.mul(y, alpha, name=out if not c else f"{out}.alpha")
        if c:
            bias = c[0] if beta == 1 else self.graph.mul(c[0], beta, name=f"{out}.beta")
            y = self.graph.add(y, bias, name=out)
        return y

    def softmax(self, node, attrs, out):
        (x,) = self._inputs(node)
        shape = self.graph[x].shape
        axis = attrs.get("axis", -1 if self.opset >= 13 else 1) % max(len(shape), 1)
        if self.opset >= 13 or axis == len(shape) - 1:
            return self.graph.softmax(x, axis, name=out)
        # before opset 13, softmax normalises over all axes from `axis` on, flattened into one
        flat = self.graph.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])), name=f"{out}.flat")
        return self.graph.reshape(self.graph.softmax(flat, -1, name=f"{out}.softmax"), shape, name=out)

    def layernorm(self, node, attrs, out):
        if any(node.output[1:]):
            raise self._error(node, "only the first output (Y) is supported, not Mean or InvStdDev")
        x, *scale_bias = self._inputs(node)
        return self.graph.layernorm(x, *scale_bias, axis=attrs.get("axis", -1), eps=attrs.get("epsilon", 1e-5),
                                    name=out)

    def reduce(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        if "axes" in attrs:
            axes = attrs["axes"]
        elif len(node.input) > 1 and node.input[1]:
            axes = self._constant(node.input[1], node, "axes").tolist()
        else:
            axes = None
        if not axes and attrs.get("noop_with_empty_axes", 0):
            return x
        reduce = self.graph.reduce_sum if node.op_type == "ReduceSum" else self.graph.reduce_mean
        return reduce(x, axes or None, bool(attrs.get("keepdims", 1)), name=out)

    def transpose(self, node, attrs, out):
        return self.graph.transpose(self._inputs(node)[0], attrs.get("perm"), name=out)

    def reshape(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        shape = [int(d) for d in self._constant(node.input[1], node, "the shape")]
        if not attrs.get("allowzero", 0):
            shape = [self.graph[x].shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return self.graph.reshape(x, shape, name=out)


CONVERTERS: dict[str, Callable[..., Any]] = {
    **dict.fromkeys(BINARY, _Importer.binary), **dict.fromkeys(UNARY, _Importer.unary),
    "Identity": _Importer.identity, "Constant": _Importer.constant, "Gelu": _Importer.gelu, "Gemm": _Importer.gemm,
    "Softmax": _Importer.softmax, "LayerNormalization": _Importer.layernorm, "ReduceSum": _Importer.reduce,
    "ReduceMean": _Importer.reduce, "Transpose": _Importer.transpose, "Reshape": _Importer.reshape,
}
