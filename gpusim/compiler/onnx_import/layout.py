"""ONNX converters of operators that move elements without computing: transposes and reshapes (views),
and slices, gathers by constant indices, expansions, tiles, pads and concatenations (remap and concat
nodes)."""

from __future__ import annotations

import math

import numpy as np

from gpusim.compiler.onnx_import.importer import Importer


def transpose(imp: Importer, node, attrs, out):
    return imp.graph.transpose(imp.inputs(node)[0], attrs.get("perm"), name=out)


def reshape(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    if imp.opset < 5:
        shape = list(attrs["shape"])
    else:
        shape = [int(d) for d in imp.constant(node.input[1], node, "the shape")]
    if not attrs.get("allowzero", 0):
        shape = [imp.graph[x].shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return imp.graph.reshape(x, shape, name=out)


def flatten(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    shape = imp.shape(x)
    axis = attrs.get("axis", 1) % (len(shape) + 1)
    return imp.graph.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])), name=out)


def squeeze(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    shape = imp.shape(x)
    axes = imp.axes(node, attrs, 1)
    axes = {a % len(shape) for a in axes} if axes is not None else {i for i, d in enumerate(shape) if d == 1}
    return imp.graph.reshape(x, [d for i, d in enumerate(shape) if i not in axes], name=out)


def unsqueeze(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    shape = list(imp.shape(x))
    axes = imp.axes(node, attrs, 1)
    rank = len(shape) + len(axes)
    for a in sorted(a % rank for a in axes):
        shape.insert(a, 1)
    return imp.graph.reshape(x, shape, name=out)


def concat(imp: Importer, node, attrs, out):
    xs = imp.inputs(node)
    rank = len(imp.shape(xs[0]))
    xs = [x for x in xs if imp.graph[x].type.size] or xs[:1]
    if len(xs) == 1:
        return xs[0]
    return imp.graph.emit("concat", xs, {"axis": attrs.get("axis", 1) % rank}, name=out)


def slice(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    if imp.opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
    else:
        starts = imp.constant(node.input[1], node, "starts").tolist()
        ends = imp.constant(node.input[2], node, "ends").tolist()
        axes = imp.optional(node, 3, "axes")
        axes = list(range(len(starts))) if axes is None else axes.tolist()
        steps = imp.optional(node, 4, "steps")
        steps = [1] * len(starts) if steps is None else steps.tolist()
    return imp.slice(x, starts, ends, axes, steps, out)


def split(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    shape = imp.shape(x)
    axis = attrs.get("axis", 0) % len(shape)
    outs = [o for o in node.output]
    if "split" in attrs:
        sizes = list(attrs["split"])
    elif len(node.input) > 1 and node.input[1]:
        sizes = imp.constant(node.input[1], node, "split").tolist()
    else:
        n = len(outs)
        each = -(-shape[axis] // n)
        sizes = [min(each, shape[axis] - i * each) for i in range(n)]
    results, start = [], 0
    for name, size in zip(outs, sizes, strict=True):
        results.append(imp.slice(x, [start], [start + size], [axis], [1], name or f"{out}.unused{start}"))
        start += size
    return results


def gather(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    indices = imp.constant(node.input[1], node, "the indices (data-dependent gathers are not supported)")
    shape = imp.shape(x)
    axis = attrs.get("axis", 0) % len(shape)
    flat = [int(i) % shape[axis] for i in indices.reshape(-1)]
    if not flat:
        raise imp.error(node, "empty indices are not supported")
    step = flat[1] - flat[0] if len(flat) > 1 else 1
    if all(b - a == step for a, b in zip(flat, flat[1:], strict=False)):  # an arithmetic progression: a slice
        picked = imp.remap(x, (*shape[:axis], len(flat), *shape[axis + 1:]),
                             [[int(i == a) * (step if a == axis else 1) for i in range(len(shape))]
                              for a in range(len(shape))],
                             [flat[0] if a == axis else 0 for a in range(len(shape))], name=f"{out}.picked")
    else:
        parts = [imp.slice(x, [i], [i + 1], [axis], [1], f"{out}.{n}") for n, i in enumerate(flat)]
        picked = imp.graph.emit("concat", parts, {"axis": axis}, name=f"{out}.picked")
    final = (*shape[:axis], *indices.shape, *shape[axis + 1:])
    return imp.graph.reshape(picked, final, name=out)


def expand(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    target = [int(d) for d in imp.constant(node.input[1], node, "the shape")]
    shape = imp.shape(x)
    out_shape = tuple(np.broadcast_shapes(shape, tuple(target)))
    rank, lead = len(out_shape), len(out_shape) - len(shape)
    coef = [[int(i == a + lead and shape[a] != 1) for i in range(rank)] for a in range(len(shape))]
    return imp.remap(x, out_shape, coef, [0] * len(shape), name=out)


def tile(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    repeats = [int(r) for r in imp.constant(node.input[1], node, "repeats")]
    shape = imp.shape(x)
    rank = len(shape)
    return imp.remap(x, [d * r for d, r in zip(shape, repeats, strict=True)],
                       [[int(i == a) for i in range(rank)] for a in range(rank)], [0] * rank, [True] * rank,
                       name=out)


def pad(imp: Importer, node, attrs, out):
    x = imp.tensor(node.input[0], node)
    shape = imp.shape(x)
    rank = len(shape)
    mode = attrs.get("mode", b"constant").decode()
    if imp.opset < 11:
        pads, value = list(attrs.get("pads", attrs.get("paddings", []))), float(attrs.get("value", 0.0))
    else:
        pads = imp.constant(node.input[1], node, "pads").tolist()
        v = imp.optional(node, 2, "the pad value")
        value = 0.0 if v is None else float(v.reshape(-1)[0])
        axes = imp.optional(node, 3, "axes")
        if axes is not None:
            full = [0] * (2 * rank)
            for n, a in enumerate(axes.tolist()):
                full[a % rank], full[a % rank + rank] = pads[n], pads[n + len(axes)]
            pads = full
    begin, end = pads[:rank], pads[rank:]
    if mode == "constant":
        return imp.remap(x, [d + b + e for d, b, e in zip(shape, begin, end, strict=True)],
                           [[int(i == a) for i in range(rank)] for a in range(rank)], [-b for b in begin],
                           fill=value, name=out)
    if mode not in ("edge", "reflect"):
        raise imp.error(node, f"pad mode '{mode}' is not supported (constant, edge, reflect are)")
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
            cut = imp.remap(x, (*shape[:a], count, *shape[a + 1:]),
                              [[int(i == b) * (step if b == a else 1) for i in range(rank)] for b in range(rank)],
                              [idx[0] if b == a else 0 for b in range(rank)], name=f"{out}.{side}{a}")
            parts.append((side, cut.name))
        ordered = [p for s, p in parts if s == "begin"] + [x] + [p for s, p in parts if s == "end"]
        last = not any(begin[b] or end[b] for b in range(a + 1, rank))
        x = imp.graph.emit("concat", ordered, {"axis": a}, name=out if last else f"{out}.axis{a}").name
        shape = imp.shape(x)
    return x
