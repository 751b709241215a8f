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
from gpusim.compiler.ops import remap_indices

BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "MatMul": "matmul"}
UNARY = {"Relu": "relu", "Exp": "exp", "Tanh": "tanh", "Sigmoid": "sigmoid", "Erf": "erf", "Sqrt": "sqrt",
         "Neg": "neg", "Abs": "abs", "Sign": "sign", "Log": "log", "Softplus": "softplus"}
VARIADIC = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}
# FLOAT, FLOAT16, INT32; DOUBLE and INT64 are narrowed to f32 and i32 (the simulated GPU computes in
# 32 bits; an INT64 value outside the i32 range is an error); BOOL (an If's condition) is an i32 0 or 1
ONNX_DTYPES = {1: "f32", 10: "f16", 6: "i32", 11: "f32", 7: "i32", 9: "i32"}
NARROW = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32, np.dtype(np.bool_): np.int32}


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
    """One model's import: ONNX value names map to IR node names, or to numpy values not yet materialised.

    Shape folding (as onnx-simplifier does): a node whose inputs are all known values (initializers,
    Constants, the static shape a Shape node reads, or values folded before) is computed at import by
    ONNX's reference evaluator, so Shape -> Gather -> Concat -> Reshape chains and ConstantOfShape
    become constants before any IR is built. A BatchNormalization reading a convolution with constant
    weights (and nothing else reading that convolution) is folded into its weights and bias."""

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
        self.bn_after: dict[str, Any] = {}  # conv output -> the BatchNormalization node alone reading it
        self.bn_aliases: dict[str, str] = {}  # batch-norm output -> the conv output it was folded into
        self._find_batchnorms(body)
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

    def _folded_batchnorm(self, conv) -> tuple[np.ndarray, np.ndarray] | None:
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

    def _tensor(self, name: str, node) -> str:
        """The IR node holding ONNX value `name` (a constant is made on first use as data)."""
        if name not in self.values:
            raise self._error(node, f"input '{name}' is not produced by any node, input or initializer")
        value = self.values[name]
        if isinstance(value, np.ndarray):
            value = self.values[name] = self.graph.constant(self._narrow(value, name, node), name=name).name
        return value

    def _narrow(self, value: np.ndarray, name: str, node) -> np.ndarray:
        if value.dtype in NARROW:
            narrow = NARROW[value.dtype]
            if narrow is np.int32 and value.size and (value.min() < -2**31 or value.max() >= 2**31):
                raise self._error(node, f"'{name}' is int64 with values outside the int32 range")
            return value.astype(narrow)
        if value.dtype not in (np.float32, np.float16, np.int32):
            raise self._error(node, f"'{name}' is {value.dtype}; supported element types: FLOAT, FLOAT16, INT32")
        return value

    def _constant(self, name: str, node, what: str) -> np.ndarray:
        """The numpy value of input `name`, which must be an initializer or a Constant's output."""
        value = self.values.get(name)
        if not isinstance(value, np.ndarray):
            raise self._error(node, f"{what} ('{name}') must be a constant (an initializer or a Constant node)")
        return value

    def _optional(self, node, index: int, what: str) -> np.ndarray | None:
        """The constant value of optional input `index` (None when absent)."""
        if len(node.input) > index and node.input[index]:
            return self._constant(node.input[index], node, what)
        return None

    def _error(self, node, message: str) -> CompilerError:
        if node is None:
            return CompilerError(message)
        return CompilerError(f"onnx node '{node.name or node.output[0]}' ({node.op_type}): {message}")

    def _convert(self, node) -> None:
        if node.domain not in ("", "ai.onnx") or node.op_type not in CONVERTERS:
            domain = f" in domain '{node.domain}'" if node.domain not in ("", "ai.onnx") else ""
            raise self._error(node, f"unsupported operator{domain}; supported: {', '.join(SUPPORTED)}")
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
            result = CONVERTERS[node.op_type](self, node, attrs, out)
        except GraphError as e:
            raise self._error(node, e.reason) from None
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
            raise self._error(node, f"folding constant inputs failed: {e}") from None
        for name, value in zip(node.output, results, strict=False):
            if name:
                self.values[name] = np.asarray(value)

    # --- converters: (importer, node, attributes, output name) -> Node, an existing node name, a value,
    # or a list of them (one per output) ---

    def _inputs(self, node) -> list[str]:
        return [self._tensor(i, node) for i in node.input if i]

    def _shape(self, name: str) -> tuple[int, ...]:
        return self.graph[name].shape

    def _legacy_broadcast(self, node, attrs, a: str, b: str) -> str:
        """Before opset 7, `broadcast=1, axis=k` aligns b with a's axes from k on."""
        if self.opset < 7 and attrs.get("broadcast") and "axis" in attrs:
            ra, sb = len(self._shape(a)), self._shape(b)
            axis = attrs["axis"] % ra
            b = self.graph.reshape(b, (*sb, *[1] * (ra - axis - len(sb))), name=f"{node.output[0]}.aligned")
        return b

    def binary(self, node, attrs, out):
        a, b = self._inputs(node)
        if node.op_type != "MatMul":
            b = self._legacy_broadcast(node, attrs, a, b)
        return self.graph.emit(BINARY[node.op_type], (a, b), name=out)

    def unary(self, node, attrs, out):
        return self.graph.emit(UNARY[node.op_type], self._inputs(node), name=out)

    def variadic(self, node, attrs, out):
        xs = self._inputs(node)
        op = VARIADIC[node.op_type]
        mean = node.op_type == "Mean" and len(xs) > 1
        acc = xs[0]
        for n, x in enumerate(xs[1:], 1):
            last = n == len(xs) - 1 and not mean
            acc = self.graph.emit(op, (acc, x), name=out if last else f"{out}.{n}")
        if mean:
            acc = self.graph.mul(acc, 1.0 / len(xs), name=out)
        return acc

    def scalar_op(self, node, attrs, out):
        op, defaults = SCALAR_OPS[node.op_type]
        return self.graph.emit(op, self._inputs(node), {k: float(attrs.get(k, d)) for k, d in defaults.items()},
                               name=out)

    def identity(self, node, attrs, out):
        if node.input[0] not in self.values:
            return self._tensor(node.input[0], node)  # raises: the input is not defined
        return [self.values[node.input[0]]]

    def dropout(self, node, attrs, out):
        if any(node.output[1:]):
            raise self._error(node, "only the first output is supported (inference: no mask)")
        return self.identity(node, attrs, out)

    def constant(self, node, attrs, out):
        for key, convert in (("value", self.onnx.numpy_helper.to_array), ("value_float", np.float32),
                             ("value_floats", lambda v: np.array(v, np.float32)), ("value_int", np.int64),
                             ("value_ints", lambda v: np.array(v, np.int64))):
            if key in attrs:
                return np.asarray(convert(attrs[key]))
        raise self._error(node, f"only value, value_float(s) and value_int(s) are supported, not {', '.join(attrs)}")

    def constant_of_shape(self, node, attrs, out):
        shape = self._constant(node.input[0], node, "the shape")
        value = self.onnx.numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
        return np.full(tuple(int(d) for d in shape), value.reshape(-1)[0], value.dtype)

    def shape(self, node, attrs, out):
        shape = np.array(self._shape(self._tensor(node.input[0], node)), np.int64)
        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
        return shape[start:end]

    def size(self, node, attrs, out):
        return np.array(self.graph[self._tensor(node.input[0], node)].type.size, np.int64)

    def cast(self, node, attrs, out):
        (x,) = self._inputs(node)
        return self.graph.emit("cast", (x,), {"to": self._dtype(attrs["to"], "the cast's target")}, name=out)

    def where(self, node, attrs, out):
        return self.graph.emit("where", self._inputs(node), name=out)

    def clip(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
        if self.opset >= 11:
            lo_v, hi_v = self._optional(node, 1, "min"), self._optional(node, 2, "max")
            lo = float(lo_v) if lo_v is not None else -np.inf
            hi = float(hi_v) if hi_v is not None else np.inf
        big = float(np.finfo(np.float32).max)
        return self.graph.emit("clip", (x,), {"min": max(float(lo), -big), "max": min(float(hi), big)}, name=out)

    def prelu(self, node, attrs, out):
        x, slope = self._inputs(node)
        rx, s = len(self._shape(x)), self._shape(slope)
        if self.opset < 7 and len(s) == 1 and rx > 2 and s[0] == self._shape(x)[1]:
            slope = self.graph.reshape(slope, (s[0], *[1] * (rx - 2)), name=f"{out}.slope")  # per channel
        g = self.graph
        negative = g.emit("minimum", (x, g.constant(0.0, g[x].dtype)), name=f"{out}.neg")
        return g.add(g.relu(x, name=f"{out}.pos"), g.mul(negative, slope, name=f"{out}.scaled"), name=out)

    def shrink(self, node, attrs, out):
        (x,) = self._inputs(node)
        lambd, bias = float(attrs.get("lambd", 0.5)), float(attrs.get("bias", 0.0))
        g = self.graph
        # kept where |x| > lambd: relu(sign(|x| - lambd)) is 1 there, else 0
        mask = g.relu(g.emit("sign", (g.sub(g.emit("abs", (x,), name=f"{out}.abs"), lambd, name=f"{out}.over"),),
                             name=f"{out}.sign"), name=f"{out}.mask")
        shifted = g.sub(x, g.mul(g.emit("sign", (x,), name=f"{out}.xsign"), bias, name=f"{out}.bias"),
                        name=f"{out}.shifted")
        return g.mul(shifted, mask, name=out)

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
        op = "softmax" if node.op_type == "Softmax" else "log_softmax"
        shape = self.graph[x].shape
        axis = attrs.get("axis", -1 if self.opset >= 13 else 1) % max(len(shape), 1)
        if self.opset >= 13 or axis == len(shape) - 1:
            return self.graph.emit(op, (x,), {"axis": axis}, name=out)
        # before opset 13, softmax normalises over all axes from `axis` on, flattened into one
        flat = self.graph.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])), name=f"{out}.flat")
        return self.graph.reshape(self.graph.emit(op, (flat,), {"axis": 1}, name=f"{out}.{op}"), shape, name=out)

    def layernorm(self, node, attrs, out):
        if any(node.output[1:]):
            raise self._error(node, "only the first output (Y) is supported, not Mean or InvStdDev")
        x, *scale_bias = self._inputs(node)
        return self.graph.layernorm(x, *scale_bias, axis=attrs.get("axis", -1), eps=attrs.get("epsilon", 1e-5),
                                    name=out)

    def instancenorm(self, node, attrs, out):
        x, scale, bias = self._inputs(node)
        rank = len(self._shape(x))
        g = self.graph
        y = g.layernorm(x, axis=2, eps=attrs.get("epsilon", 1e-5), name=f"{out}.norm")
        per_channel = (self._shape(scale)[0], *[1] * (rank - 2))
        y = g.mul(y, g.reshape(scale, per_channel, name=f"{out}.scale"), name=f"{out}.scaled")
        return g.add(y, g.reshape(bias, per_channel, name=f"{out}.bias"), name=out)

    def batchnorm(self, node, attrs, out):
        if any(node.output[1:]):
            raise self._error(node, "only the first output is supported (inference mode)")
        x = self._tensor(node.input[0], node)
        scale, bias, mean, var = (self._constant(i, node, "the statistics").astype(np.float64)
                                  for i in node.input[1:5])
        a = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
        shape = (len(a), *[1] * (len(self._shape(x)) - 2))
        dtype = self.graph[x].dtype
        y = self.graph.mul(x, self.graph.constant(a.reshape(shape), dtype, name=f"{out}.a"), name=f"{out}.scaled")
        return self.graph.add(y, self.graph.constant((bias - mean * a).reshape(shape), dtype, name=f"{out}.b"),
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
        keep = bool(attrs.get("keepdims", 1))
        if node.op_type == "ReduceMin":
            negated = self.graph.emit("neg", (x,), name=f"{out}.neg")
            top = self.graph.reduce_max(negated, axes, keep, name=f"{out}.max")
            return self.graph.emit("neg", (top,), name=out)
        reduce = {"ReduceSum": self.graph.reduce_sum, "ReduceMean": self.graph.reduce_mean,
                  "ReduceMax": self.graph.reduce_max}[node.op_type]
        return reduce(x, axes, keep, name=out)

    def transpose(self, node, attrs, out):
        return self.graph.transpose(self._inputs(node)[0], attrs.get("perm"), name=out)

    def reshape(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        if self.opset < 5:
            shape = list(attrs["shape"])
        else:
            shape = [int(d) for d in self._constant(node.input[1], node, "the shape")]
        if not attrs.get("allowzero", 0):
            shape = [self.graph[x].shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return self.graph.reshape(x, shape, name=out)

    def flatten(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        shape = self._shape(x)
        axis = attrs.get("axis", 1) % (len(shape) + 1)
        return self.graph.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])), name=out)

    def _axes(self, node, attrs, index: int) -> list[int] | None:
        if "axes" in attrs:
            return list(attrs["axes"])
        value = self._optional(node, index, "axes")
        return None if value is None else [int(a) for a in value.reshape(-1)]

    def squeeze(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        shape = self._shape(x)
        axes = self._axes(node, attrs, 1)
        axes = {a % len(shape) for a in axes} if axes is not None else {i for i, d in enumerate(shape) if d == 1}
        return self.graph.reshape(x, [d for i, d in enumerate(shape) if i not in axes], name=out)

    def unsqueeze(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        shape = list(self._shape(x))
        axes = self._axes(node, attrs, 1)
        rank = len(shape) + len(axes)
        for a in sorted(a % rank for a in axes):
            shape.insert(a, 1)
        return self.graph.reshape(x, shape, name=out)

    def concat(self, node, attrs, out):
        xs = self._inputs(node)
        rank = len(self._shape(xs[0]))
        xs = [x for x in xs if self.graph[x].type.size] or xs[:1]
        if len(xs) == 1:
            return xs[0]
        return self.graph.emit("concat", xs, {"axis": attrs.get("axis", 1) % rank}, name=out)

    def _remap(self, x: str, shape, coef, offset, wrap=None, fill=0.0, name=None) -> Node:
        rank = len(self._shape(x))
        return self.graph.emit("remap", (x,), {
            "shape": tuple(int(d) for d in shape), "coef": tuple(tuple(int(c) for c in row) for row in coef),
            "offset": tuple(int(o) for o in offset), "wrap": tuple(wrap or (False,) * rank), "fill": float(fill)},
            name=name)

    def _slice(self, x: str, starts, ends, axes, steps, name: str) -> Node:
        shape = self._shape(x)
        rank = len(shape)
        out, coef, offset = list(shape), [[int(i == a) for i in range(rank)] for a in range(rank)], [0] * rank
        for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
            axis %= rank
            rng = range(*slice(int(start), int(end), int(step)).indices(shape[axis]))
            out[axis], offset[axis] = len(rng), rng.start
            coef[axis][axis] = int(step)
        return self._remap(x, out, coef, offset, name=name)

    def slice(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        if self.opset < 10:
            starts, ends = attrs["starts"], attrs["ends"]
            axes, steps = attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
        else:
            starts = self._constant(node.input[1], node, "starts").tolist()
            ends = self._constant(node.input[2], node, "ends").tolist()
            axes = self._optional(node, 3, "axes")
            axes = list(range(len(starts))) if axes is None else axes.tolist()
            steps = self._optional(node, 4, "steps")
            steps = [1] * len(starts) if steps is None else steps.tolist()
        return self._slice(x, starts, ends, axes, steps, out)

    def split(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        shape = self._shape(x)
        axis = attrs.get("axis", 0) % len(shape)
        outs = [o for o in node.output]
        if "split" in attrs:
            sizes = list(attrs["split"])
        elif len(node.input) > 1 and node.input[1]:
            sizes = self._constant(node.input[1], node, "split").tolist()
        else:
            n = len(outs)
            each = -(-shape[axis] // n)
            sizes = [min(each, shape[axis] - i * each) for i in range(n)]
        results, start = [], 0
        for name, size in zip(outs, sizes, strict=True):
            results.append(self._slice(x, [start], [start + size], [axis], [1], name or f"{out}.unused{start}"))
            start += size
        return results

    def gather(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        indices = self._constant(node.input[1], node, "the indices (data-dependent gathers are not supported)")
        shape = self._shape(x)
        axis = attrs.get("axis", 0) % len(shape)
        flat = [int(i) % shape[axis] for i in indices.reshape(-1)]
        if not flat:
            raise self._error(node, "empty indices are not supported")
        step = flat[1] - flat[0] if len(flat) > 1 else 1
        if all(b - a == step for a, b in zip(flat, flat[1:], strict=False)):  # an arithmetic progression: a slice
            picked = self._remap(x, (*shape[:axis], len(flat), *shape[axis + 1:]),
                                 [[int(i == a) * (step if a == axis else 1) for i in range(len(shape))]
                                  for a in range(len(shape))],
                                 [flat[0] if a == axis else 0 for a in range(len(shape))], name=f"{out}.picked")
        else:
            parts = [self._slice(x, [i], [i + 1], [axis], [1], f"{out}.{n}") for n, i in enumerate(flat)]
            picked = self.graph.emit("concat", parts, {"axis": axis}, name=f"{out}.picked")
        final = (*shape[:axis], *indices.shape, *shape[axis + 1:])
        return self.graph.reshape(picked, final, name=out)

    def expand(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        target = [int(d) for d in self._constant(node.input[1], node, "the shape")]
        shape = self._shape(x)
        out_shape = tuple(np.broadcast_shapes(shape, tuple(target)))
        rank, lead = len(out_shape), len(out_shape) - len(shape)
        coef = [[int(i == a + lead and shape[a] != 1) for i in range(rank)] for a in range(len(shape))]
        return self._remap(x, out_shape, coef, [0] * len(shape), name=out)

    def tile(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        repeats = [int(r) for r in self._constant(node.input[1], node, "repeats")]
        shape = self._shape(x)
        rank = len(shape)
        return self._remap(x, [d * r for d, r in zip(shape, repeats, strict=True)],
                           [[int(i == a) for i in range(rank)] for a in range(rank)], [0] * rank, [True] * rank,
                           name=out)

    def pad(self, node, attrs, out):
        x = self._tensor(node.input[0], node)
        shape = self._shape(x)
        rank = len(shape)
        mode = attrs.get("mode", b"constant").decode()
        if self.opset < 11:
            pads, value = list(attrs.get("pads", attrs.get("paddings", []))), float(attrs.get("value", 0.0))
        else:
            pads = self._constant(node.input[1], node, "pads").tolist()
            v = self._optional(node, 2, "the pad value")
            value = 0.0 if v is None else float(v.reshape(-1)[0])
            axes = self._optional(node, 3, "axes")
            if axes is not None:
                full = [0] * (2 * rank)
                for n, a in enumerate(axes.tolist()):
                    full[a % rank], full[a % rank + rank] = pads[n], pads[n + len(axes)]
                pads = full
        begin, end = pads[:rank], pads[rank:]
        if mode == "constant":
            return self._remap(x, [d + b + e for d, b, e in zip(shape, begin, end, strict=True)],
                               [[int(i == a) for i in range(rank)] for a in range(rank)], [-b for b in begin],
                               fill=value, name=out)
        if mode not in ("edge", "reflect"):
            raise self._error(node, f"pad mode '{mode}' is not supported (constant, edge, reflect are)")
        for a in range(rank):  # axis by axis: the edge or mirror slices joined around the tensor
            if not begin[a] and not end[a]:
                continue
            n, parts = shape[a], []
            for side, count in (("begin", begin[a]), ("end", end[a])):
                if not count:
                    continue
                if mode == "edge":
                    idx = [0] * count if side == "begin" else [n - 1] * count
                else:
                    idx = list(range(count, 0, -1)) if side == "begin" else list(range(n - 2, n - 2 - count, -1))
                step = 0 if mode == "edge" else -1  # along axis a: a fixed edge index, or walking back
                cut = self._remap(x, (*shape[:a], count, *shape[a + 1:]),
                                  [[int(i == b) * (step if b == a else 1) for i in range(rank)] for b in range(rank)],
                                  [idx[0] if b == a else 0 for b in range(rank)], name=f"{out}.{side}{a}")
                parts.append((side, cut.name))
            ordered = [p for s, p in parts if s == "begin"] + [x] + [p for s, p in parts if s == "end"]
            last = not any(begin[b] or end[b] for b in range(a + 1, rank))
            x = self.graph.emit("concat", ordered, {"axis": a}, name=out if last else f"{out}.axis{a}").name
            shape = self._shape(x)
        return x

    def _window(self, node, attrs, x: str, kernel: tuple[int, ...]) -> tuple[list, list, list, list]:
        """Strides, dilations, pads (begin.., end..) and output sizes of a convolution or pooling window."""
        shape = self._shape(x)
        spatial = shape[2:]
        r = len(spatial)
        strides = list(attrs.get("strides", [1] * r))
        dilations = list(attrs.get("dilations", [1] * r))
        pads = list(attrs.get("pads", [0] * 2 * r))
        auto = attrs.get("auto_pad", b"NOTSET").decode()
        ceil = attrs.get("ceil_mode", 0)
        sizes = []
        for i in range(r):
            span = dilations[i] * (kernel[i] - 1) + 1
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                o = -(-spatial[i] // strides[i])
                total = max(0, (o - 1) * strides[i] + span - spatial[i])
                low = total // 2 if auto == "SAME_UPPER" else total - total // 2
                pads[i], pads[i + r] = low, total - low
            elif auto == "VALID":
                pads[i] = pads[i + r] = 0
            room = spatial[i] + pads[i] + pads[i + r] - span
            o = (-(-room // strides[i]) if ceil else room // strides[i]) + 1
            if ceil and (o - 1) * strides[i] >= spatial[i] + pads[i]:
                o -= 1  # the last window must start inside the input or its begin padding
            sizes.append(o)
        return strides, dilations, pads, sizes

    def conv(self, node, attrs, out):
        g = self.graph
        x = self._tensor(node.input[0], node)
        folded = self._folded_batchnorm(node)
        if folded is not None:
            w_value, b_value = folded
            w, bias = g.constant(w_value, name=f"{out}.w").name, g.constant(b_value, name=f"{out}.b").name
        else:
            w = self._tensor(node.input[1], node)
            bias = self._tensor(node.input[2], node) if len(node.input) > 2 and node.input[2] else None
        c, (_, cg, *kernel) = self._shape(x)[1], self._shape(w)
        groups = attrs.get("group", 1)
        if c != cg * groups:
            raise self._error(node, f"{c} input channels do not match weights {list(self._shape(w))} x {groups} groups")
        strides, dilations, pads, _ = self._window(node, attrs, x, tuple(kernel))
        r = len(kernel)
        return self._conv(x, w, bias, {"strides": tuple(strides), "dilations": tuple(dilations), "pads": tuple(pads),
                                       "group": groups, "input_dilation": (1,) * r}, out)

    def _conv(self, x: str, w: str, bias: str | None, attrs: dict, out: str) -> Node:
        """One conv node (an implicit GEMM when lowered) and the bias add after it, per output channel."""
        g = self.graph
        y = g.emit("conv", (x, w), attrs, name=out if bias is None else f"{out}.conv")
        if bias is None:
            return y
        per_channel = (self._shape(w)[0], *[1] * (len(self._shape(w)) - 2))
        return g.add(y, g.reshape(bias, per_channel, name=f"{out}.bias"), name=out)

    def conv_transpose(self, node, attrs, out):
        """ConvTranspose as the convolution of the input with u - 1 zeros stuffed between its elements
        (input_dilation = the strides), the weights' channels swapped per group and their taps flipped,
        padded by dilation (k - 1) - pad (the output padding at the end)."""
        x, w = self._tensor(node.input[0], node), self._tensor(node.input[1], node)
        bias = self._tensor(node.input[2], node) if len(node.input) > 2 and node.input[2] else None
        (_, c, *size), (cw, mg, *kernel) = self._shape(x), self._shape(w)
        r, groups = len(size), attrs.get("group", 1)
        if c != cw or c % groups:
            raise self._error(node, f"{c} input channels do not match weights {list(self._shape(w))} "
                                    f"in {groups} groups")
        strides = list(attrs.get("strides", [1] * r))
        dilations = list(attrs.get("dilations", [1] * r))
        extra = list(attrs.get("output_padding", [0] * r))
        pads = list(attrs.get("pads", [0] * 2 * r))
        auto = attrs.get("auto_pad", b"NOTSET").decode()
        full = [s * (n - 1) + e + (k - 1) * d + 1 for s, n, e, k, d in zip(strides, size, extra, kernel, dilations,
                                                                             strict=True)]
        target = list(attrs["output_shape"])[-r:] if "output_shape" in attrs else None
        if target is None and auto in ("SAME_UPPER", "SAME_LOWER"):
            target = [n * s for n, s in zip(size, strides, strict=True)]
        if target is not None:  # the pads that give the requested output size
            for i in range(r):
                total = full[i] - target[i]
                low = total // 2 if auto == "SAME_UPPER" else total - total // 2
                pads[i], pads[i + r] = low, total - low
        elif auto == "VALID":
            pads = [0] * 2 * r
        cg = c // groups
        span = [d * (k - 1) for d, k in zip(dilations, kernel, strict=True)]
        conv_pads = [span[i] - pads[i] for i in range(r)] + [span[i] - pads[i + r] + extra[i] for i in range(r)]
        weights = self._transposed_weights(w, groups, cg, mg, kernel, out)
        return self._conv(x, weights, bias, {"strides": (1,) * r, "dilations": tuple(dilations),
                                             "pads": tuple(conv_pads), "group": groups,
                                             "input_dilation": tuple(strides)}, out)

    def _transposed_weights(self, w: str, groups: int, cg: int, mg: int, kernel: list[int], out: str) -> str:
        """A ConvTranspose's C x M/group x kernel weights as a convolution's M x C/group x kernel:
        w'[g Mg + m, c, t] = w[g Cg + c, m, kernel - 1 - t] (a remap per group, joined along the channels)."""
        r = len(kernel)
        rank = 2 + r
        parts = []
        for grp in range(groups):
            coef = [[int(j == 1) for j in range(rank)], [int(j == 0) for j in range(rank)]]
            coef += [[-int(j == 2 + a) for j in range(rank)] for a in range(r)]
            parts.append(self._remap(w, (mg, cg, *kernel), coef, [grp * cg, 0, *[k - 1 for k in kernel]],
                                     name=f"{out}.w{grp}" if groups > 1 else f"{out}.w"))
        if groups == 1:
            return parts[0].name
        return self.graph.emit("concat", [p.name for p in parts], {"axis": 0}, name=f"{out}.w").name

    def pool(self, node, attrs, out):
        g = self.graph
        x = self._tensor(node.input[0], node)
        if any(node.output[1:]):
            raise self._error(node, "only the first output is supported, not Indices")
        n, c, *spatial = self._shape(x)
        r = len(spatial)
        if node.op_type.startswith("Global"):
            reduce = g.reduce_max if node.op_type == "GlobalMaxPool" else g.reduce_mean
            return reduce(x, tuple(range(2, 2 + r)), True, name=out)
        kernel = tuple(attrs["kernel_shape"])
        strides, dilations, pads, sizes = self._window(node, attrs, x, kernel)
        begin = pads[:r]
        rank = 2 + 2 * r
        coef = [[int(j == 0) for j in range(rank)], [int(j == 1) for j in range(rank)]]
        coef += [[strides[i] * (j == 2 + i) + dilations[i] * (j == 2 + r + i) for j in range(rank)] for i in range(r)]
        offset = [0, 0, *[-p for p in begin]]
        maximum = node.op_type == "MaxPool"
        windows = self._remap(x, (n, c, *sizes, *kernel), coef, offset, fill=-np.inf if maximum else 0.0,
                              name=f"{out}.windows")
        axes = tuple(range(2 + r, rank))
        if maximum:
            return g.reduce_max(windows, axes, name=out)
        total = g.reduce_sum(windows, axes, name=f"{out}.sum")
        # the elements each window averages: inside the input, or with count_include_pad inside the padding
        pads = list(attrs.get("pads", [0] * 2 * r))
        extent = [s + (pads[i] + pads[i + r] if attrs.get("count_include_pad", 0) else 0)
                  for i, s in enumerate(spatial)]
        shift = [0 if attrs.get("count_include_pad", 0) else -p for p in begin]
        spatial_coef = tuple(tuple(strides[i] * (j == i) + dilations[i] * (j == r + i) for j in range(2 * r))
                             for i in range(r))
        _, inside = remap_indices(tuple(extent), {"shape": (*sizes, *kernel), "coef": spatial_coef,
                                                   "offset": tuple(shift), "wrap": (False,) * r})
        counts = inside.reshape(*sizes, -1).sum(-1)
        scale = g.constant((1.0 / np.maximum(counts, 1)).astype(np.float32), g[x].dtype, name=f"{out}.scale")
        return g.mul(total, scale, name=out)


NO_FOLD = frozenset({"Constant", "Identity", "Dropout", "Shape", "Size", "If", "Loop"})
SCALAR_OPS = {"LeakyRelu": ("leaky_relu", {"alpha": 0.01}), "Elu": ("elu", {"alpha": 1.0}),
              "Selu": ("selu", {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875})}

CONVERTERS: dict[str, Callable[..., Any]] = {
    **dict.fromkeys(BINARY, _Importer.binary), **dict.fromkeys(UNARY, _Importer.unary),
    **dict.fromkeys(VARIADIC, _Importer.variadic), **dict.fromkeys(SCALAR_OPS, _Importer.scalar_op),
    "Identity": _Importer.identity, "Dropout": _Importer.dropout, "Constant": _Importer.constant,
    "ConstantOfShape": _Importer.constant_of_shape, "Shape": _Importer.shape, "Size": _Importer.size,
    "Cast": _Importer.cast, "Where": _Importer.where, "Clip": _Importer.clip, "PRelu": _Importer.prelu,
    "Shrink": _Importer.shrink, "Gelu": _Importer.gelu, "Gemm": _Importer.gemm, "Softmax": _Importer.softmax,
    "LogSoftmax": _Importer.softmax, "LayerNormalization": _Importer.layernorm,
    "InstanceNormalization": _Importer.instancenorm, "BatchNormalization": _Importer.batchnorm,
    **dict.fromkeys(("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"), _Importer.reduce),
    "Transpose": _Importer.transpose, "Reshape": _Importer.reshape, "Flatten": _Importer.flatten,
    "Squeeze": _Importer.squeeze, "Unsqueeze": _Importer.unsqueeze, "Concat": _Importer.concat,
    "Slice": _Importer.slice, "Split": _Importer.split, "Gather": _Importer.gather, "Expand": _Importer.expand,
    "Tile": _Importer.tile, "Pad": _Importer.pad, "Conv": _Importer.conv,
    "ConvTranspose": _Importer.conv_transpose,
    "If": lambda *a: _control_flow().import_if(*a), "Loop": lambda *a: _control_flow().import_loop(*a),
    **dict.fromkeys(("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"), _Importer.pool),
}
SUPPORTED = tuple(sorted(CONVERTERS))


def _control_flow():
    from gpusim.compiler import control_flow  # imports this module: resolved when a model has If or Loop

    return control_flow
