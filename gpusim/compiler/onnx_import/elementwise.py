"""ONNX converters of element-wise operators: arithmetic (with pre-opset-7 broadcasting), activations,
casts, selection and clipping, each one or a few IR operators of the same shape."""

from __future__ import annotations

import numpy as np

from gpusim.compiler.onnx_import.importer import Importer

BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "MatMul": "matmul"}
UNARY = {"Relu": "relu", "Exp": "exp", "Tanh": "tanh", "Sigmoid": "sigmoid", "Erf": "erf", "Sqrt": "sqrt",
         "Neg": "neg", "Abs": "abs", "Sign": "sign", "Log": "log", "Softplus": "softplus"}
VARIADIC = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}
SCALAR_OPS = {"LeakyRelu": ("leaky_relu", {"alpha": 0.01}), "Elu": ("elu", {"alpha": 1.0}),
              "Selu": ("selu", {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875})}


def _legacy_broadcast(imp: Importer, node, attrs, a: str, b: str) -> str:
    """Before opset 7, `broadcast=1, axis=k` aligns b with a's axes from k on."""
    if imp.opset < 7 and attrs.get("broadcast") and "axis" in attrs:
        ra, sb = len(imp.shape(a)), imp.shape(b)
        axis = attrs["axis"] % ra
        b = imp.graph.reshape(b, (*sb, *[1] * (ra - axis - len(sb))), name=f"{node.output[0]}.aligned")
    return b


def binary(imp: Importer, node, attrs, out):
    a, b = imp.inputs(node)
    if node.op_type != "MatMul":
        b = _legacy_broadcast(imp, node, attrs, a, b)
    return imp.graph.emit(BINARY[node.op_type], (a, b), name=out)


def unary(imp: Importer, node, attrs, out):
    return imp.graph.emit(UNARY[node.op_type], imp.inputs(node), name=out)


def variadic(imp: Importer, node, attrs, out):
    xs = imp.inputs(node)
    op = VARIADIC[node.op_type]
    mean = node.op_type == "Mean" and len(xs) > 1
    acc = xs[0]
    for n, x in enumerate(xs[1:], 1):
        last = n == len(xs) - 1 and not mean
        acc = imp.graph.emit(op, (acc, x), name=out if last else f"{out}.{n}")
    if mean:
        acc = imp.graph.mul(acc, 1.0 / len(xs), name=out)
    return acc


def scalar_op(imp: Importer, node, attrs, out):
    op, defaults = SCALAR_OPS[node.op_type]
    return imp.graph.emit(op, imp.inputs(node), {k: float(attrs.get(k, d)) for k, d in defaults.items()},
                           name=out)


def cast(imp: Importer, node, attrs, out):
    (x,) = imp.inputs(node)
    return imp.graph.emit("cast", (x,), {"to": imp.dtype(attrs["to"], "the cast's target")}, name=out)


def where(imp: Importer, node, attrs, out):
    return imp.graph.emit("where", imp.inputs(node), name=out)


def clip(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    if imp.opset >= 11:
        lo_v, hi_v = imp.optional(node, 1, "min"), imp.optional(node, 2, "max")
        lo = float(lo_v) if lo_v is not None else -np.inf
        hi = float(hi_v) if hi_v is not None else np.inf
    big = float(np.finfo(np.float32).max)
    return imp.graph.emit("clip", (x,), {"min": max(float(lo), -big), "max": min(float(hi), big)}, name=out)


def prelu(imp: Importer, node, attrs, out):
    x, slope = imp.inputs(node)
    rx, s = len(imp.shape(x)), imp.shape(slope)
    if imp.opset < 7 and len(s) == 1 and rx > 2 and s[0] == imp.shape(x)[1]:
        slope = imp.graph.reshape(slope, (s[0], *[1] * (rx - 2)), name=f"{out}.slope")  # per channel
    g = imp.graph
    negative = g.emit("minimum", (x, g.constant(0.0, g[x].dtype)), name=f"{out}.neg")
    return g.add(g.relu(x, name=f"{out}.pos"), g.mul(negative, slope, name=f"{out}.scaled"), name=out)


def shrink(imp: Importer, node, attrs, out):
    (x,) = imp.inputs(node)
    lambd, bias = float(attrs.get("lambd", 0.5)), float(attrs.get("bias", 0.0))
    g = imp.graph
    # kept where |x| > lambd: relu(sign(|x| - lambd)) is 1 there, else 0
    mask = g.relu(g.emit("sign", (g.sub(g.emit("abs", (x,), name=f"{out}.abs"), lambd, name=f"{out}.over"),),
                         name=f"{out}.sign"), name=f"{out}.mask")
    shifted = g.sub(x, g.mul(g.emit("sign", (x,), name=f"{out}.xsign"), bias, name=f"{out}.bias"),
                    name=f"{out}.shifted")
    return g.mul(shifted, mask, name=out)


def gelu(imp: Importer, node, attrs, out):
    return imp.graph.gelu(imp.inputs(node)[0], attrs.get("approximate", b"none").decode(), name=out)
