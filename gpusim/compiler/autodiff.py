"""Reverse-mode automatic differentiation on the graph IR: `grad(graph, loss, wrt)` returns a new graph
holding the forward nodes and, built from per-op gradient rules, the backward nodes that compute the
gradient of the scalar `loss` with respect to each node in `wrt`. The backward graph uses only the IR's
own operators, so the passes, lowering, the cost models and the functional executor all apply to it.

    >>> from gpusim.compiler import Graph, evaluate
    >>> g = Graph("sq")
    >>> x = g.parameter("x", (3,))
    >>> g.output(g.reduce_sum(g.mul(x, x)), "loss")
    >>> evaluate(grad(g, "loss", ["x"]), {"x": [1.0, 2.0, 3.0]})["grad_x"].tolist()
    [2.0, 4.0, 6.0]

Each rule maps (the graph being built, the forward node, the adjoint of its output) to one adjoint per
input (None: no gradient flows there). Adjoints of broadcast operands are summed back to the operand's
shape (`unbroadcast`); broadcasts of reduced adjoints back to an input's shape are `remap` nodes (an
expand). Loss functions (`mse_loss`, `softmax_cross_entropy`) are compositions of IR operators, so their
gradients come from the same rules. See docs/compiler.md, "Automatic differentiation"."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from gpusim.compiler.errors import CompilerError, GraphError
from gpusim.compiler.ir import Graph, Node

Rule = Callable[[Graph, Node, Node], list[Node | None]]

# Operators without a gradient rule, and why (tests hold this list to the docs' table).
NO_RULE: dict[str, str] = {
    "parameter": "a leaf: its adjoint is the gradient returned",
    "constant": "a leaf that does not depend on any input",
    "fused": "differentiate before fusion (grad runs on the unfused graph)",
    "if": "control flow: the gradient of the branch taken is not built (not done yet)",
    "loop": "control flow: unroll a static loop first (control_flow.unroll_loops); a computed count is not done",
}


# --- shape helpers --------------------------------------------------------------------------------

def unbroadcast(g: Graph, x: Node, shape: tuple[int, ...]) -> Node:
    """`x` summed over the axes along which an operand of `shape` was broadcast to x's shape."""
    if x.shape == tuple(shape):
        return x
    lead = x.type.rank - len(shape)
    axes = [a for a in range(x.type.rank)
            if a < lead or (shape[a - lead] == 1 and x.shape[a] != 1)]
    if axes:
        x = g.reduce_sum(x, axes, keepdims=True)
    return x if x.shape == tuple(shape) else g.reshape(x, shape)


def expand(g: Graph, x: Node, shape: tuple[int, ...]) -> Node:
    """`x` broadcast (numpy rules) to `shape`, as a remap that repeats elements along the size-1 axes."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    padded = (1,) * (len(shape) - x.type.rank) + x.shape
    if padded != x.shape:
        x = g.reshape(x, padded)
    coef = tuple(tuple(int(a == j and padded[a] != 1) for j in range(len(shape))) for a in range(len(shape)))
    return g.emit("remap", (x,), {"shape": shape, "coef": coef, "offset": (0,) * len(shape),
                                  "wrap": (False,) * len(shape), "fill": 0.0})


def _kept(x: Node, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(1 if a in axes else d for a, d in enumerate(x.shape))


def _mask(g: Graph, positive: Node) -> Node:
    """1 where `positive` > 0, else 0 (a relu's non-zero elements select)."""
    return g.emit("where", (g.relu(positive), g.constant(1.0, positive.dtype), g.constant(0.0, positive.dtype)))


# --- rules ----------------------------------------------------------------------------------------

def _inputs(g: Graph, node: Node) -> list[Node]:
    return [g[i] for i in node.inputs]


def _add(g, n, dy):
    a, b = _inputs(g, n)
    return [unbroadcast(g, dy, a.shape), unbroadcast(g, dy, b.shape)]


def _sub(g, n, dy):
    a, b = _inputs(g, n)
    return [unbroadcast(g, dy, a.shape), unbroadcast(g, g.emit("neg", (dy,)), b.shape)]


def _mul(g, n, dy):
    a, b = _inputs(g, n)
    return [unbroadcast(g, g.mul(dy, b), a.shape), unbroadcast(g, g.mul(dy, a), b.shape)]


def _div(g, n, dy):
    a, b = _inputs(g, n)
    da = g.div(dy, b)
    return [unbroadcast(g, da, a.shape), unbroadcast(g, g.emit("neg", (g.mul(da, n),)), b.shape)]


def _pow(g, n, dy):
    a, b = _inputs(g, n)
    da = g.mul(g.mul(dy, b), g.pow(a, g.sub(b, 1.0)))
    db = g.mul(g.mul(dy, n), g.emit("log", (a,)))
    return [unbroadcast(g, da, a.shape), unbroadcast(g, db, b.shape)]


def _minmax(g, n, dy):
    """max(a, b): the gradient to the larger operand (split evenly at a tie); min: to the smaller."""
    a, b = _inputs(g, n)
    diff = g.sub(a, b) if n.op == "maximum" else g.sub(b, a)
    share = g.mul(g.add(g.emit("sign", (diff,)), 1.0), 0.5)
    da = g.mul(dy, share)
    return [unbroadcast(g, da, a.shape), unbroadcast(g, g.sub(dy, da), b.shape)]


def _where(g, n, dy):
    cond, a, b = _inputs(g, n)
    zero = g.constant(0.0, dy.dtype)
    return [None, unbroadcast(g, g.emit("where", (cond, dy, zero)), a.shape),
            unbroadcast(g, g.emit("where", (cond, zero, dy)), b.shape)]


def _unary(derivative: Callable[[Graph, Node, Node], Node]) -> Rule:
    """A rule dy * f'(x), f' built from the input x and the output y."""
    def rule(g, n, dy):
        return [g.mul(dy, derivative(g, g[n.inputs[0]], n))]
    return rule


def _gelu_derivative(g: Graph, x: Node, y: Node) -> Node:
    if y.attrs["approximate"] == "tanh":
        c, k = math.sqrt(2 / math.pi), 0.044715
        x2 = g.mul(x, x)
        t = g.tanh(g.mul(g.add(x, g.mul(g.mul(x2, x), k)), c))
        inner = g.mul(g.sub(1.0, g.mul(t, t)), g.mul(g.add(g.mul(x2, 3 * k), 1.0), c))
        return g.mul(g.add(g.add(t, 1.0), g.mul(x, inner)), 0.5)
    cdf = g.mul(g.add(g.emit("erf", (g.mul(x, 1 / math.sqrt(2)),)), 1.0), 0.5)
    pdf = g.mul(g.exp(g.mul(g.mul(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))
    return g.add(cdf, g.mul(x, pdf))


def _clip_derivative(g: Graph, x: Node, y: Node) -> Node:
    return g.mul(_mask(g, g.sub(x, float(y.attrs["min"]))), _mask(g, g.sub(float(y.attrs["max"]), x)))


def _elu_like(g: Graph, x: Node, y: Node) -> Node:
    alpha, gamma = y.attrs["alpha"], y.attrs.get("gamma", 1.0)
    below = g.mul(g.exp(g.emit("minimum", (x, g.constant(0.0, x.dtype)))), float(alpha * gamma))
    return g.emit("where", (g.relu(x), g.constant(float(gamma), x.dtype), below))


def _matmul(g, n, dy):
    """dA = dY @ B^T, dB = A^T @ dY on the last two axes, summed over broadcast batch axes; a vector
    operand is a one-row (A) or one-column (B) matrix."""
    a, b = _inputs(g, n)
    a2 = g.reshape(a, (1, *a.shape)) if a.type.rank == 1 else a
    b2 = g.reshape(b, (*b.shape, 1)) if b.type.rank == 1 else b
    batch = n.shape[:-2] if a.type.rank > 1 and b.type.rank > 1 else n.shape[:max(a.type.rank, b.type.rank) - 2]
    dy2 = g.reshape(dy, (*batch, a2.shape[-2], b2.shape[-1])) if (a.type.rank == 1 or b.type.rank == 1) else dy

    def t(x: Node) -> Node:
        return g.transpose(x, (*range(x.type.rank - 2), x.type.rank - 1, x.type.rank - 2))

    da = unbroadcast(g, g.matmul(dy2, t(b2)), a2.shape)
    db = unbroadcast(g, g.matmul(t(a2), dy2), b2.shape)
    return [da if da.shape == a.shape else g.reshape(da, a.shape),
            db if db.shape == b.shape else g.reshape(db, b.shape)]


def _softmax(g, n, dy):
    axis = n.attrs["axis"]
    inner = g.reduce_sum(g.mul(dy, n), axis, keepdims=True)
    return [g.mul(n, g.sub(dy, inner))]


def _log_softmax(g, n, dy):
    total = g.reduce_sum(dy, n.attrs["axis"], keepdims=True)
    return [g.sub(dy, g.mul(g.exp(n), total))]


def _layernorm(g, n, dy):
    """x_hat = (x - mean) * rstd over the normalised axes; with dx_hat = dy * gamma,
    dx = rstd (dx_hat - mean(dx_hat) - x_hat mean(dx_hat x_hat)); dgamma = sum(dy x_hat), dbeta = sum(dy)."""
    x, *affine = _inputs(g, n)
    axes = tuple(range(n.attrs["axis"], x.type.rank))
    centred = g.sub(x, g.reduce_mean(x, axes, keepdims=True))
    var = g.reduce_mean(g.mul(centred, centred), axes, keepdims=True)
    rstd = g.div(1.0, g.emit("sqrt", (g.add(var, float(n.attrs["eps"])),)))
    xhat = g.mul(centred, rstd)
    dxhat = g.mul(dy, affine[0]) if affine else dy
    mean_d = g.reduce_mean(dxhat, axes, keepdims=True)
    mean_dx = g.reduce_mean(g.mul(dxhat, xhat), axes, keepdims=True)
    dx = g.mul(rstd, g.sub(g.sub(dxhat, mean_d), g.mul(xhat, mean_dx)))
    grads: list[Node | None] = [dx]
    if affine:
        grads.append(unbroadcast(g, g.mul(dy, xhat), affine[0].shape))
    if len(affine) > 1:
        grads.append(unbroadcast(g, dy, affine[1].shape))
    return grads


def _reduce_sum(g, n, dy):
    x = g[n.inputs[0]]
    return [expand(g, g.reshape(dy, _kept(x, n.attrs["axes"])), x.shape)]


def _reduce_mean(g, n, dy):
    x = g[n.inputs[0]]
    count = math.prod(x.shape[a] for a in n.attrs["axes"])
    return [g.mul(expand(g, g.reshape(dy, _kept(x, n.attrs["axes"])), x.shape), 1.0 / max(count, 1))]


def _reduce_max(g, n, dy):
    """To the maximal elements, shared evenly among ties: mask = 1 - sign|x - max|, mask / sum(mask)."""
    x = g[n.inputs[0]]
    kept = _kept(x, n.attrs["axes"])
    top = expand(g, g.reshape(n, kept), x.shape)
    mask = g.sub(1.0, g.emit("sign", (g.emit("abs", (g.sub(x, top),)),)))
    count = expand(g, g.reduce_sum(mask, n.attrs["axes"], keepdims=True), x.shape)
    return [g.div(g.mul(mask, expand(g, g.reshape(dy, kept), x.shape)), count)]


def _transpose(g, n, dy):
    inverse = tuple(int(i) for i in np.argsort(n.attrs["perm"]))
    return [g.transpose(dy, inverse)]


def _reshape(g, n, dy):
    return [g.reshape(dy, g[n.inputs[0]].shape)]


def _concat(g, n, dy):
    """Each operand's slice of dy along the axis (a remap reading at an offset)."""
    axis, start, grads = n.attrs["axis"], 0, []
    rank = n.type.rank
    for x in _inputs(g, n):
        coef = tuple(tuple(int(a == j) for j in range(rank)) for a in range(rank))
        offset = tuple(start if a == axis else 0 for a in range(rank))
        grads.append(g.emit("remap", (dy,), {"shape": x.shape, "coef": coef, "offset": offset,
                                             "wrap": (False,) * rank, "fill": 0.0}))
        start += x.shape[axis]
    return grads


def _conv(g, n, dy):
    """Both gradients are convolutions, so the backward pass lowers to the same implicit-GEMM kernel.

    Along one spatial axis (input size n, kernel k, output o; stride s, dilation d, input dilation u,
    pads p before and q after) the forward multiplies x[i] by w[t] into y[j] exactly where
    s j + d t = u i + p. The output holds the o windows that fit, leaving a remainder
    e = (u (n - 1) + p + q - d (k - 1)) mod s of padded input after the last one unread.

    dx: a conv of dy with the weights' taps flipped (t' = k - 1 - t) and their channels swapped per group
    (M x C/group -> C x M/group), over dy stuffed with s - 1 zeros (input_dilation s), stride u,
    dilation d. Its tap t' under output i reads stuffed position u i + d t' - p' = s j, which is the
    forward's condition when p' = d (k - 1) - p; the pad after, q' = d (k - 1) - q + e, makes it produce
    exactly n outputs (the remainder e is a transposed convolution's output_padding: rows the forward
    never read get a zero gradient).

    dw: a conv of x with dy as the kernel (a correlation: tap j of dy under output t reads stuffed
    position d t + s j - p = u i): stride d, dilation s, input dilation u, pads p before and q - e after
    (the unread remainder cropped) so that it produces exactly k outputs. The image axis becomes the
    reduced channel axis: x as C/group images of group x N channels, dy as M kernels of N channels,
    group `group`; the result C/group x M x kernel.. is transposed to the weights' M x C/group.

    A conv rather than a matmul over an explicit window gather: one kernel per gradient, no im2col tensor
    in memory (for dw it would hold kernel taps x the input), and the lowering already verified for
    every attribute combination the forward uses."""
    x, w = _inputs(g, n)
    a, group = n.attrs, n.attrs["group"]
    batch, channels, *size = x.shape
    m, cg, *kernel = w.shape
    r, mg = len(size), m // group
    s, d, u, pads = a["strides"], a["dilations"], a["input_dilation"], a["pads"]
    before, after = pads[:r], pads[r:]
    span = [d[ax] * (kernel[ax] - 1) for ax in range(r)]
    extra = [(u[ax] * (size[ax] - 1) + before[ax] + after[ax] - span[ax]) % s[ax] for ax in range(r)]
    # the weights M x C/group x k.. as C x M/group x k.., taps flipped: one remap of the per-group view
    coef = ((1, 0, 0) + (0,) * r, (0, 0, 1) + (0,) * r, (0, 1, 0) + (0,) * r,
            *(tuple(-int(j == 3 + ax) for j in range(3 + r)) for ax in range(r)))
    flipped = g.emit("remap", (g.reshape(w, (group, mg, cg, *kernel)),),
                     {"shape": (group, cg, mg, *kernel), "coef": coef,
                      "offset": (0, 0, 0, *(k - 1 for k in kernel)), "wrap": (False,) * (3 + r), "fill": 0.0})
    dx = g.emit("conv", (dy, g.reshape(flipped, (channels, mg, *kernel))), {
        "strides": tuple(u), "dilations": tuple(d), "input_dilation": tuple(s), "group": group,
        "pads": (*(span[ax] - before[ax] for ax in range(r)), *(span[ax] - after[ax] + extra[ax] for ax in range(r)))})
    # x as C/group images of group x N channels (channel gi N + b: image b's channel gi C/group + c)
    spatial = tuple(range(3, 3 + r))
    images = g.reshape(g.transpose(g.reshape(x, (batch, group, cg, *size)), (2, 1, 0, *spatial)),
                       (cg, group * batch, *size))
    kernels = g.transpose(dy, (1, 0, *range(2, 2 + r)))
    dw = g.emit("conv", (images, kernels), {
        "strides": tuple(d), "dilations": tuple(s), "input_dilation": tuple(u), "group": group,
        "pads": (*before, *(after[ax] - extra[ax] for ax in range(r)))})
    return [dx, g.transpose(dw, (1, 0, *range(2, 2 + r)))]


REMAP_MATRIX_LIMIT = 1 << 22  # elements of the selection matrix a remap's gradient may build


def _remap(g, n, dy):
    """The adjoint of a gather is a scatter-add; here the product of dy with the remap's constant 0/1
    selection matrix (output element x input element), so that it lowers to the matmul template."""
    from gpusim.compiler.ops import remap_indices

    x = g[n.inputs[0]]
    if n.type.size * x.type.size > REMAP_MATRIX_LIMIT:
        raise GraphError(f"gradient of a remap of {x.type} to {n.type}: its selection matrix would hold "
                         f"{n.type.size * x.type.size:,} elements (limit {REMAP_MATRIX_LIMIT:,})", node=n.name, op=n.op)
    flat, inside = remap_indices(x.shape, n.attrs)
    select = np.zeros((n.type.size, x.type.size), np.float32)
    select[np.arange(n.type.size)[inside], flat[inside]] = 1.0
    row = g.reshape(dy, (1, n.type.size))
    return [g.reshape(g.matmul(row, g.constant(select, dy.dtype)), x.shape)]


def _cast(g, n, dy):
    return [g.emit("cast", (dy,), {"to": g[n.inputs[0]].dtype})]


def _zero(g, n, dy):
    return [None] * len(n.inputs)


RULES: dict[str, Rule] = {
    "matmul": _matmul, "conv": _conv, "add": _add, "sub": _sub, "mul": _mul, "div": _div, "pow": _pow,
    "maximum": _minmax, "minimum": _minmax, "where": _where,
    "relu": _unary(lambda g, x, y: _mask(g, x)),
    "gelu": _unary(_gelu_derivative),
    "exp": _unary(lambda g, x, y: y),
    "tanh": _unary(lambda g, x, y: g.sub(1.0, g.mul(y, y))),
    "sigmoid": _unary(lambda g, x, y: g.mul(y, g.sub(1.0, y))),
    "erf": _unary(lambda g, x, y: g.mul(g.exp(g.emit("neg", (g.mul(x, x),))), 2 / math.sqrt(math.pi))),
    "sqrt": _unary(lambda g, x, y: g.div(0.5, y)),
    "log": _unary(lambda g, x, y: g.div(1.0, x)),
    "neg": lambda g, n, dy: [g.emit("neg", (dy,))],
    "abs": _unary(lambda g, x, y: g.emit("sign", (x,))),
    "sign": _zero,
    "clip": _unary(_clip_derivative),
    "leaky_relu": _unary(lambda g, x, y: g.emit("where", (g.relu(x), g.constant(1.0, x.dtype),
                                                           g.constant(float(y.attrs["alpha"]), x.dtype)))),
    "elu": _unary(_elu_like), "selu": _unary(_elu_like),
    "softplus": _unary(lambda g, x, y: g.emit("sigmoid", (x,))),
    "cast": _cast,
    "softmax": _softmax, "log_softmax": _log_softmax, "layernorm": _layernorm,
    "reduce_sum": _reduce_sum, "reduce_mean": _reduce_mean, "reduce_max": _reduce_max,
    "transpose": _transpose, "reshape": _reshape, "concat": _concat, "remap": _remap,
}


def ops_without_rule() -> list[str]:
    """The operators of the IR that `grad` cannot differentiate through, sorted."""
    from gpusim.compiler.ops import OPS

    return sorted(op for op in OPS if op not in RULES)


# --- the transformation ---------------------------------------------------------------------------

def grad(graph: Graph, loss: str, wrt: Sequence[str], *, keep_outputs: bool = True) -> Graph:
    """A graph computing `graph`'s outputs (unless `keep_outputs` is False: the loss alone) and, as
    outputs `grad_<name>`, the gradient of the scalar output or node `loss` with respect to each node
    named in `wrt` (parameters, usually). CompilerError for an unknown name, a loss that is not a float
    scalar, or a path through an operator without a rule."""
    name = graph.outputs.get(loss, loss)
    if name not in graph:
        raise CompilerError(f"grad: loss '{loss}' is neither an output nor a node of graph '{graph.name}'")
    for w in wrt:
        if w not in graph:
            raise CompilerError(f"grad: '{w}' is not a node of graph '{graph.name}'")
    if graph[name].type.size != 1 or graph[name].dtype not in ("f32", "f16"):
        raise CompilerError(f"grad: the loss %{name} is {graph[name].type}; it must be a float scalar")
    g = graph.derive()
    for node in graph.topo_order():
        g.add_node(node)
    for out, ref in graph.outputs.items():
        if keep_outputs or ref == name:
            g.output(ref, out)
    needed = _on_path(graph, name, set(wrt))
    adjoints: dict[str, list[Node]] = {name: [g.constant(np.ones(graph[name].shape), graph[name].dtype)]}
    for node in reversed(graph.topo_order([name])):
        if node.name not in adjoints or node.op in ("parameter", "constant"):
            continue
        dy = _total(g, adjoints[node.name])
        adjoints[node.name] = [dy]
        if not any(i in needed for i in node.inputs):
            continue
        rule = RULES.get(node.op)
        if rule is None:
            raise CompilerError(f"grad: no gradient rule for %{node.name} ({node.op}): {NO_RULE.get(node.op, '')}")
        for i, gi in zip(node.inputs, rule(g, node, dy), strict=True):
            if gi is not None and i in needed:
                adjoints.setdefault(i, []).append(gi)
    for w in wrt:
        total = _total(g, adjoints[w]) if w in adjoints else g.constant(np.zeros(graph[w].shape), graph[w].dtype)
        g.output(total, f"grad_{w}")
    from gpusim.compiler.passes.dce import eliminate_dead_code

    return eliminate_dead_code(g)[0]  # the rules' adjoints of inputs no gradient needs (data, targets)


def _on_path(graph: Graph, loss: str, wrt: set[str]) -> set[str]:
    """Nodes that depend on some node in `wrt` (the ones through which a gradient flows)."""
    depends: set[str] = set()
    for node in graph.topo_order([loss]):
        if node.name in wrt or any(i in depends for i in node.inputs):
            depends.add(node.name)
    return depends


def _total(g: Graph, parts: list[Node]) -> Node:
    total = parts[0]
    for p in parts[1:]:
        total = g.add(total, p)
    return total


# --- losses ---------------------------------------------------------------------------------------

def mse_loss(g: Graph, prediction: Node | str, target: Node | str, *, name: str | None = None) -> Node:
    """Mean squared error: mean((prediction - target) ** 2), a scalar."""
    diff = g.sub(prediction, target)
    return g.reduce_mean(g.mul(diff, diff), name=name)


def softmax_cross_entropy(g: Graph, logits: Node | str, labels: Node | str, *, axis: int = -1,
                          name: str | None = None) -> Node:
    """Softmax cross-entropy with one-hot (or soft) `labels`: -mean over rows of sum(labels *
    log_softmax(logits)) along `axis`, a scalar."""
    logp = g.emit("log_softmax", (logits,), {"axis": axis % g.type_of(logits).rank})
    per_row = g.reduce_sum(g.mul(labels, logp), axis)
    return g.emit("neg", (g.reduce_mean(per_row),), name=name)
