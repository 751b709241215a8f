"""ONNX converters of the neural-network operators: Gemm, softmax, normalisations, reductions,
convolutions (ConvTranspose as a convolution of the input with zeros stuffed between its elements) and
pooling (a remap of the windows, reduced)."""

from __future__ import annotations

import math

import numpy as np

from gpusim.compiler.ir import Node
from gpusim.compiler.onnx_import.importer import Importer
from gpusim.compiler.ops import remap_indices


def gemm(imp: Importer, node, attrs, out):
    a, b, *c = imp.inputs(node)
    if attrs.get("transA", 0):
        a = imp.graph.transpose(a, name=f"{out}.transA")
    if attrs.get("transB", 0):
        b = imp.graph.transpose(b, name=f"{out}.transB")
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    y = imp.graph.matmul(a, b, name=out if alpha == 1 and not c else f"{out}.matmul")
    if alpha != 1:
        y = imp.graph.mul(y, alpha, name=out if not c else f"{out}.alpha")
    if c:
        bias = c[0] if beta == 1 else imp.graph.mul(c[0], beta, name=f"{out}.beta")
        y = imp.graph.add(y, bias, name=out)
    return y


def softmax(imp: Importer, node, attrs, out):
    (x,) = imp.inputs(node)
    op = "softmax" if node.op_type == "Softmax" else "log_softmax"
    shape = imp.graph[x].shape
    axis = attrs.get("axis", -1 if imp.opset >= 13 else 1) % max(len(shape), 1)
    if imp.opset >= 13 or axis == len(shape) - 1:
        return imp.graph.emit(op, (x,), {"axis": axis}, name=out)
    # before opset 13, softmax normalises over all axes from `axis` on, flattened into one
    flat = imp.graph.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])), name=f"{out}.flat")
    return imp.graph.reshape(imp.graph.emit(op, (flat,), {"axis": 1}, name=f"{out}.{op}"), shape, name=out)


def layernorm(imp: Importer, node, attrs, out):
    if any(node.output[1:]):
        raise imp.error(node, "only the first output (Y) is supported, not Mean or InvStdDev")
    x, *scale_bias = imp.inputs(node)
    return imp.graph.layernorm(x, *scale_bias, axis=attrs.get("axis", -1), eps=attrs.get("epsilon", 1e-5),
                                name=out)


def instancenorm(imp: Importer, node, attrs, out):
    x, scale, bias = imp.inputs(node)
    rank = len(imp.shape(x))
    g = imp.graph
    y = g.layernorm(x, axis=2, eps=attrs.get("epsilon", 1e-5), name=f"{out}.norm")
    per_channel = (imp.shape(scale)[0], *[1] * (rank - 2))
    y = g.mul(y, g.reshape(scale, per_channel, name=f"{out}.scale"), name=f"{out}.scaled")
    return g.add(y, g.reshape(bias, per_channel, name=f"{out}.bias"), name=out)


def batchnorm(imp: Importer, node, attrs, out):
    if any(node.output[1:]):
        raise imp.error(node, "only the first output is supported (inference mode)")
    x = imp.tensor(node.input[0], node)
    scale, bias, mean, var = (imp.constant(i, node, "the statistics").astype(np.float64)
                              for i in node.input[1:5])
    a = scale / np.sqrt(var + attrs.get("epsilon", 1e-5))
    shape = (len(a), *[1] * (len(imp.shape(x)) - 2))
    dtype = imp.graph[x].dtype
    y = imp.graph.mul(x, imp.graph.constant(a.reshape(shape), dtype, name=f"{out}.a"), name=f"{out}.scaled")
    return imp.graph.add(y, imp.graph.constant((bias - mean * a).reshape(shape), dtype, name=f"{out}.b"),
                          name=out)


def reduce(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    if "axes" in attrs:
        axes = attrs["axes"]
    elif len(node.input) > 1 and node.input[1]:
        axes = imp.constant(node.input[1], node, "axes").tolist()
    else:
        axes = None
    if not axes and attrs.get("noop_with_empty_axes", 0):
        return x
    keep = bool(attrs.get("keepdims", 1))
    if node.op_type == "ReduceMin":
        negated = imp.graph.emit("neg", (x,), name=f"{out}.neg")
        top = imp.graph.reduce_max(negated, axes, keep, name=f"{out}.max")
        return imp.graph.emit("neg", (top,), name=out)
    reduce = {"ReduceSum": imp.graph.reduce_sum, "ReduceMean": imp.graph.reduce_mean,
              "ReduceMax": imp.graph.reduce_max}[node.op_type]
    return reduce(x, axes, keep, name=out)


def _window(imp: Importer, node, attrs, x: str, kernel: tuple[int, ...]) -> tuple[list, list, list, list]:
    """Strides, dilations, pads (begin.., end..) and output sizes of a convolution or pooling window."""
    shape = imp.shape(x)
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


def conv(imp: Importer, node, attrs, out):
    g = imp.graph
    x = imp.tensor(node.input[0], node)
    folded = imp.folded_batchnorm(node)
    if folded is not None:
        w_value, b_value = folded
        w, bias = g.constant(w_value, name=f"{out}.w").name, g.constant(b_value, name=f"{out}.b").name
    else:
        w = imp.tensor(node.input[1], node)
        bias = imp.tensor(node.input[2], node) if len(node.input) > 2 and node.input[2] else None
    c, (_, cg, *kernel) = imp.shape(x)[1], imp.shape(w)
    groups = attrs.get("group", 1)
    if c != cg * groups:
        raise imp.error(node, f"{c} input channels do not match weights {list(imp.shape(w))} x {groups} groups")
    strides, dilations, pads, _ = _window(imp, node, attrs, x, tuple(kernel))
    r = len(kernel)
    return _conv(imp, x, w, bias, {"strides": tuple(strides), "dilations": tuple(dilations), "pads": tuple(pads),
                                   "group": groups, "input_dilation": (1,) * r}, out)


def _conv(imp: Importer, x: str, w: str, bias: str | None, attrs: dict, out: str) -> Node:
    """One conv node (an implicit GEMM when lowered) and the bias add after it, per output channel."""
    g = imp.graph
    y = g.emit("conv", (x, w), attrs, name=out if bias is None else f"{out}.conv")
    if bias is None:
        return y
    per_channel = (imp.shape(w)[0], *[1] * (len(imp.shape(w)) - 2))
    return g.add(y, g.reshape(bias, per_channel, name=f"{out}.bias"), name=out)


def conv_transpose(imp: Importer, node, attrs, out):
    """ConvTranspose as the convolution of the input with u - 1 zeros stuffed between its elements
    (input_dilation = the strides), the weights' channels swapped per group and their taps flipped,
    padded by dilation (k - 1) - pad (the output padding at the end)."""
    x, w = imp.tensor(node.input[0], node), imp.tensor(node.input[1], node)
    bias = imp.tensor(node.input[2], node) if len(node.input) > 2 and node.input[2] else None
    (_, c, *size), (cw, mg, *kernel) = imp.shape(x), imp.shape(w)
    r, groups = len(size), attrs.get("group", 1)
    if c != cw or c % groups:
        raise imp.error(node, f"{c} input channels do not match weights {list(imp.shape(w))} "
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
    weights = _transposed_weights(imp, w, groups, cg, mg, kernel, out)
    return _conv(imp, x, weights, bias, {"strides": (1,) * r, "dilations": tuple(dilations),
                                         "pads": tuple(conv_pads), "group": groups,
                                         "input_dilation": tuple(strides)}, out)


def _transposed_weights(imp: Importer, w: str, groups: int, cg: int, mg: int, kernel: list[int], out: str) -> str:
    """A ConvTranspose's C x M/group x kernel weights as a convolution's M x C/group x kernel:
    w'[g Mg + m, c, t] = w[g Cg + c, m, kernel - 1 - t] (a remap per group, joined along the channels)."""
    r = len(kernel)
    rank = 2 + r
    parts = []
    for grp in range(groups):
        coef = [[int(j == 1) for j in range(rank)], [int(j == 0) for j in range(rank)]]
        coef += [[-int(j == 2 + a) for j in range(rank)] for a in range(r)]
        parts.append(imp.remap(w, (mg, cg, *kernel), coef, [grp * cg, 0, *[k - 1 for k in kernel]],
                                 name=f"{out}.w{grp}" if groups > 1 else f"{out}.w"))
    if groups == 1:
        return parts[0].name
    return imp.graph.emit("concat", [p.name for p in parts], {"axis": 0}, name=f"{out}.w").name


def pool(imp: Importer, node, attrs, out):
    g = imp.graph
    x = imp.tensor(node.input[0], node)
    if any(node.output[1:]):
        raise imp.error(node, "only the first output is supported, not Indices")
    n, c, *spatial = imp.shape(x)
    r = len(spatial)
    if node.op_type.startswith("Global"):
        reduce = g.reduce_max if node.op_type == "GlobalMaxPool" else g.reduce_mean
        return reduce(x, tuple(range(2, 2 + r)), True, name=out)
    kernel = tuple(attrs["kernel_shape"])
    strides, dilations, pads, sizes = _window(imp, node, attrs, x, kernel)
    begin = pads[:r]
    rank = 2 + 2 * r
    coef = [[int(j == 0) for j in range(rank)], [int(j == 1) for j in range(rank)]]
    coef += [[strides[i] * (j == 2 + i) + dilations[i] * (j == 2 + r + i) for j in range(rank)] for i in range(r)]
    offset = [0, 0, *[-p for p in begin]]
    maximum = node.op_type == "MaxPool"
    windows = imp.remap(x, (n, c, *sizes, *kernel), coef, offset, fill=-np.inf if maximum else 0.0,
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
