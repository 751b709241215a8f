"""One ONNX model's import: the Importer walks the graph's nodes in order and hands each to its converter
(the table in onnx_import/__init__.py), keeping what every ONNX value name stands for: an IR node's
name, or a numpy value not yet materialised.

Shape folding (as onnx-simplifier does): a node whose inputs are all known values (initializers,
Constants, the static shape a Shape node reads, or values folded before) is computed at import by
ONNX's reference evaluator, so Shape -> Gather -> Concat -> Reshape chains and ConstantOfShape become
constants before any IR is built. A BatchNormalization reading a convolution with constant weights (and
nothing else reading that convolution) is folded into its weights and bias (`folded_batchnorm`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gpusim.compiler.errors import CompilerError, GraphError
from gpusim.compiler.ir import Graph, Node

# FLOAT, FLOAT16, INT32; DOUBLE and INT64 are narrowed to f32 and i32 (the simulated GPU computes in
# 32 bits; an INT64 value outside the i32 range is an error); BOOL (an If's condition) is an i32 0 or 1
ONNX_DTYPES = {1: "f32", 10: "f16", 6: "i32", 11: "f32", 7: "i32", 9: "i32"}
NARROW = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32, np.dtype(np.bool_): np.int32}
NO_FOLD = frozenset({"Constant", "Identity", "Dropout", "Shape", "Size", "If", "Loop"})

# (importer, ONNX node, its attributes, its first output's name) -> a Node, an existing node's name, a
# numpy value, or a list of them (one per output)
Converter = Callable[..., Any]


def load_onnx():
    """The onnx package (CompilerError saying how to install it when it is missing)."""
    try:
        import onnx
        import onnx.numpy_helper
    except ImportError as e:
        raise CompilerError('importing ONNX models needs the onnx package: pip install -e ".[onnx]"') from e
    return onnx


class Importer:
    """One model's import: ONNX value names map to IR node names, or to numpy values not yet materialised
    (module docstring); `graph` is the IR graph being built."""

    def __init__(self, onnx, proto, shapes: Mapping[str, Sequence[int]], converters: Mapping[str, Converter]):
        self.onnx = onnx
        self.converters = converters
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
        self.bn_after: dict[str, Any] = {}  # conv output -> the BatchNormalization node alone reading it
        self.bn_aliases: dict[str, str] = {}  # batch-norm output -> the conv output it was folded into
        self._find_batchnorms(body)
        for node in body.node:
            self._convert(node)
        for vi in body.output:
            self.graph.output(self.tensor(vi.name, None), vi.name)

    def _parameter(self, vi, shapes: Mapping[str, Sequence[int]]) -> Node:
        t = vi.type.tensor_type
        dtype = self.dtype(t.elem_type, f"input '{vi.name}'")
        if vi.name in shapes:
            return self.graph.parameter(vi.name, shapes[vi.name], dtype)
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in t.shape.dim]
        if not t.HasField("shape") or any(isinstance(d, str) for d in dims):
            raise CompilerError(f"input '{vi.name}' has no static shape ({dims}); give it with "
                                f"shapes={{'{vi.name}': (...)}}")
        return self.graph.parameter(vi.name, dims, dtype)

    def dtype(self, elem_type: int, what: str) -> str:
        if elem_type not in ONNX_DTYPES:
            name = self.onnx.TensorProto.DataType.Name(elem_type)
            raise CompilerError(f"{what} is {name}; supported element types: FLOAT, FLOAT16, INT32 "
                                "(DOUBLE and INT64 narrowed to them)")
        return ONNX_DTYPES[elem_type]

    def _find_batchnorms(self, body) -> None:
        """The BatchNormalization nodes that are a convolution's only reader (candidates for folding)."""
        producers = {o: n for n in body.node for o in n.output}
        readers: dict[str, int] = {}
        for n in body.node:
            for i in n.input:
                readers[i] = readers.get(i, 0) + 1
        outputs = {vi.name for vi in body.output}
        for bn in body.node:
            if bn.op_type != "BatchNormalization" or any(bn.output[1:]):
                continue
            conv = producers.get(bn.input[0])
            if conv is not None and conv.op_type == "Conv" and readers.get(bn.input[0]) == 1 \
                    and bn.input[0] not in outputs:
                self.bn_after[conv.output[0]] = bn

    def folded_batchnorm(self, conv) -> tuple[np.ndarray, np.ndarray] | None:
        """The weights and bias of `conv` with the BatchNormalization after it folded in, when that
        exists and the weights, bias and statistics are all known values (else None)."""
        bn = self.bn_after.get(conv.output[0])
        if bn is None:
            return None
        params = [self.values.get(i) for i in (*conv.input[1:], *bn.input[1:5])]
        if not all(isinstance(v, np.ndarray) for v in params):
            return None
        w = params[0].astype(np.float64)
        bias = params[1].astype(np.float64) if len(conv.input) > 2 and conv.input[2] else np.zeros(w.shape[0])
        scale, shift, mean, var = (v.astype(np.float64) for v in params[-4:])
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        a = scale / np.sqrt(var + eps)
        self.bn_aliases[bn.output[0]] = conv.output[0]
        weights = (w * a.reshape(-1, *[1] * (w.ndim - 1))).astype(np.float32)
        return weights, ((bias - mean) * a + shift).astype(np.float32)

    def tensor(self, name: str, node) -> str:
        """The IR node holding ONNX value `name` (a constant is made on first use as data)."""
        if name not in self.values:
            raise self.error(node, f"input '{name}' is not produced by any node, input or initializer")
        value = self.values[name]
        if isinstance(value, np.ndarray):
            value = self.values[name] = self.graph.constant(self._narrow(value, name, node), name=name).name
        return value

    def _narrow(self, value: np.ndarray, name: str, node) -> np.ndarray:
        if value.dtype in NARROW:
            narrow = NARROW[value.dtype]
            if narrow is np.int32 and value.size and (value.min() < -2**31 or value.max() >= 2**31):
                raise self.error(node, f"'{name}' is int64 with values outside the int32 range")
            return value.astype(narrow)
        if value.dtype not in (np.float32, np.float16, np.int32):
            raise self.error(node, f"'{name}' is {value.dtype}; supported element types: FLOAT, FLOAT16, INT32")
        return value

    def constant(self, name: str, node, what: str) -> np.ndarray:
        """The numpy value of input `name`, which must be an initializer or a Constant's output."""
        value = self.values.get(name)
        if not isinstance(value, np.ndarray):
            raise self.error(node, f"{what} ('{name}') must be a constant (an initializer or a Constant node)")
        return value

    def optional(self, node, index: int, what: str) -> np.ndarray | None:
        """The constant value of optional input `index` (None when absent)."""
        if len(node.input) > index and node.input[index]:
            return self.constant(node.input[index], node, what)
        return None

    def error(self, node, message: str) -> CompilerError:
        """An error naming ONNX `node` and its operator (None: the model as a whole)."""
        if node is None:
            return CompilerError(message)
        return CompilerError(f"onnx node '{node.name or node.output[0]}' ({node.op_type}): {message}")

    def _convert(self, node) -> None:
        if node.domain not in ("", "ai.onnx") or node.op_type not in self.converters:
            domain = f" in domain '{node.domain}'" if node.domain not in ("", "ai.onnx") else ""
            raise self.error(node, f"unsupported operator{domain}; supported: {', '.join(sorted(self.converters))}")
        if node.output[0] in self.bn_aliases:
            self.values[node.output[0]] = self.values[self.bn_aliases[node.output[0]]]
            return
        attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        inputs = [i for i in node.input if i]
        if inputs and node.op_type not in NO_FOLD and all(isinstance(self.values.get(i), np.ndarray)
                                                           for i in inputs):
            self._fold(node)
            return
        out = node.output[0]
        try:
            result = self.converters[node.op_type](self, node, attrs, out)
        except GraphError as e:
            raise self.error(node, e.reason) from None
        results = result if isinstance(result, list) else [result]
        for name, r in zip(node.output, results, strict=False):
            if name:
                self.values[name] = r.name if isinstance(r, Node) else r

    def _fold(self, node) -> None:
        """Compute a node of known inputs with ONNX's reference evaluator (shape folding)."""
        from onnx.reference import ReferenceEvaluator

        feeds = {i: self.values[i] for i in node.input if i}
        try:
            results = ReferenceEvaluator(node).run(None, feeds)
        except Exception as e:  # the reference evaluator raises many kinds  # noqa: BLE001
            raise self.error(node, f"folding constant inputs failed: {e}") from None
        for name, value in zip(node.output, results, strict=False):
            if name:
                self.values[name] = np.asarray(value)

    def subgraph(self, model) -> Importer:
        """The import of `model` (a subgraph made a model: an If's branch, a Loop's body) with the same
        converters."""
        return Importer(self.onnx, model, {}, self.converters)

    # --- what converters read and emit -------------------------------------------------------------

    def inputs(self, node) -> list[str]:
        """The IR nodes of `node`'s (present) inputs."""
        return [self.tensor(i, node) for i in node.input if i]

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape of IR node `name`."""
        return self.graph[name].shape

    def remap(self, x: str, shape, coef, offset, wrap=None, fill=0.0, name=None) -> Node:
        """A remap node of `x` (ops.py: slice, pad, expand, tile, im2col), its attributes made ints."""
        rank = len(self.shape(x))
        return self.graph.emit("remap", (x,), {
            "shape": tuple(int(d) for d in shape), "coef": tuple(tuple(int(c) for c in row) for row in coef),
            "offset": tuple(int(o) for o in offset), "wrap": tuple(wrap or (False,) * rank), "fill": float(fill)},
            name=name)

    def slice(self, x: str, starts, ends, axes, steps, name: str) -> Node:
        """`x` sliced as numpy's x[start:end:step] along each of `axes` (a remap)."""
        shape = self.shape(x)
        rank = len(shape)
        out, coef, offset = list(shape), [[int(i == a) for i in range(rank)] for a in range(rank)], [0] * rank
        for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
            axis %= rank
            rng = range(*slice(int(start), int(end), int(step)).indices(shape[axis]))
            out[axis], offset[axis] = len(rng), rng.start
            coef[axis][axis] = int(step)
        return self.remap(x, out, coef, offset, name=name)

    def axes(self, node, attrs, index: int) -> list[int] | None:
        """A node's axes: its `axes` attribute (older opsets) or its constant input `index` (None: absent)."""
        if "axes" in attrs:
            return list(attrs["axes"])
        value = self.optional(node, index, "axes")
        return None if value is None else [int(a) for a in value.reshape(-1)]
