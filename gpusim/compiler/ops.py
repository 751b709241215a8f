"""The operator table: the ONE place that says, for every operator, its fusion kind, how many inputs and
which attributes it takes, how its output type follows from its inputs, and what it computes (numpy).

Kinds (after TVM's operator patterns) drive fusion (passes/fuse.py):

| kind | meaning | operators |
|---|---|---|
| elementwise | one output element from the same element of one input | relu, gelu, exp, tanh, sigmoid, erf, |
| | | sqrt, neg, abs, sign, log, clip, leaky_relu, elu, selu, softplus, cast |
| broadcast | element-wise over numpy-broadcast operands | add, sub, mul, div, pow, maximum, minimum, where |
| injective | each output element is one input element, moved | transpose, reshape, remap, concat |
| reduction | output elements combine many input elements along axes | reduce_sum, reduce_mean, reduce_max, |
| | | softmax, log_softmax, layernorm |
| out-fusable | opaque itself, but element-wise consumers fuse into its epilogue (TVM's OutEWiseFusable) | matmul, |
| | | matmul_t, conv |
| opaque | never fused | parameter, constant, fused, if, loop (control flow), all_reduce, all_gather, embedding_bag, |
| | | fused_attention |

`compute` functions receive float64 (float dtypes) or int64 (i32) arrays; the evaluator rounds each
result to the node's dtype, so every operator computes exactly and rounds once.

The table is the compiler's lowest layer: it imports nothing of the compiler but tensor types and errors.
An operator whose rules need a higher layer (control flow's `if` and `loop` verify their subgraphs, run
them in the evaluator and on the host) is declared here and its rules are filled in from above with
`register`, as TVM's operator registry takes an operator's compute and strategy from the layers above
it: control_flow.py registers their type rules, evaluate.py their numpy semantics, control_flow_run.py
how they run on the host (docs/architecture.md, "The compiler's layers")."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import numpy as np

from gpusim.compiler.errors import GraphError
from gpusim.compiler.tensor import FLOAT_DTYPES, TensorType, dtype_of

Infer = Callable[[tuple[TensorType, ...], Mapping[str, Any]], TensorType]
Compute = Callable[[list[np.ndarray], Mapping[str, Any]], np.ndarray]
HostRun = Callable[..., np.ndarray]  # (node, input values, config, cost model, the run, label) -> its value

FUSION_KINDS = ("elementwise", "epilogue", "reduction")


class Kind(StrEnum):
    ELEMENTWISE = "elementwise"
    BROADCAST = "broadcast"
    INJECTIVE = "injective"
    REDUCTION = "reduction"
    OUT_FUSABLE = "out-fusable"
    OPAQUE = "opaque"


@dataclass(frozen=True, slots=True)
class OpDef:
    """One operator: its kind, its input count range, its attributes (in printing order), its type
    inference (None: the node's declared type is taken, as for parameters), its numpy computation
    (None: the evaluator handles it: parameters, fused nodes) and, for an operator that is not one
    kernel but a decision of the host (control flow), how the host runs it (`register`)."""

    name: str
    kind: Kind
    inputs: tuple[int, int]
    attrs: tuple[str, ...]
    infer: Infer | None
    compute: Compute | None
    doc: str
    run_on_host: HostRun | None = None


def _same_dtype(types: tuple[TensorType, ...]) -> str:
    if len({t.dtype for t in types}) > 1:
        raise GraphError(f"operand dtypes differ: {', '.join(map(str, types))}")
    return types[0].dtype


def _need_float(t: TensorType) -> None:
    if t.dtype not in FLOAT_DTYPES:
        raise GraphError(f"needs a float operand ({', '.join(FLOAT_DTYPES)}), got {t}")


def _axis(axis: Any, rank: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise GraphError(f"axis {axis!r} is out of range for rank {rank}")
    return axis % rank


def _broadcast_shape(a: TensorType, b: TensorType) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise GraphError(f"shapes {a} and {b} do not broadcast") from None


def _unary(float_only: bool) -> Infer:
    def infer(types, attrs):
        if float_only:
            _need_float(types[0])
        return types[0]
    return infer


def _binary(float_only: bool) -> Infer:
    def infer(types, attrs):
        dtype = _same_dtype(types)
        if float_only:
            _need_float(types[0])
        return TensorType(_broadcast_shape(*types), dtype)
    return infer


def _infer_gelu(types, attrs):
    if attrs["approximate"] not in ("none", "tanh"):
        raise GraphError(f"approximate is 'none' or 'tanh', not {attrs['approximate']!r}")
    return _unary(True)(types, attrs)


def _swap_last(t: TensorType, swap: Any, what: str) -> TensorType:
    """`t` with its last two axes swapped when `swap` (matmul_t's trans_a / trans_b)."""
    if not isinstance(swap, bool):
        raise GraphError(f"{what} is true or false, not {swap!r}")
    if swap and t.rank < 2:
        raise GraphError(f"{what} needs an operand of rank >= 2, got {t}")
    return TensorType((*t.shape[:-2], t.shape[-1], t.shape[-2]), t.dtype) if swap else t


def _infer_matmul_t(types, attrs):
    a, b = types
    return _infer_matmul((_swap_last(a, attrs["trans_a"], "trans_a"), _swap_last(b, attrs["trans_b"], "trans_b")),
                         {})


def _matmul_t(args, attrs):
    a, b = (np.swapaxes(x, -1, -2) if attrs[t] else x for x, t in zip(args, ("trans_a", "trans_b"), strict=True))
    return np.matmul(a, b)


def _infer_matmul(types, attrs):
    a, b = types
    dtype = _same_dtype(types)
    if a.rank == 0 or b.rank == 0:
        raise GraphError(f"operands need rank >= 1: {a} @ {b}")
    sa = (1, *a.shape) if a.rank == 1 else a.shape
    sb = (*b.shape, 1) if b.rank == 1 else b.shape
    if sa[-1] != sb[-2]:
        raise GraphError(f"inner dimensions differ: {a} @ {b}")
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    except ValueError:
        raise GraphError(f"batch dimensions do not broadcast: {a} @ {b}") from None
    # i8 @ i8 accumulates exactly in i32, as the tensor cores' s8 mma does
    return TensorType(batch + sa[-2:-1] * (a.rank > 1) + sb[-1:] * (b.rank > 1), "i32" if dtype == "i8" else dtype)


def _infer_attention(types, attrs):
    q, b, v = types
    dtype = _same_dtype(types)
    _need_float(q)
    if isinstance(attrs["scale"], bool) or not isinstance(attrs["scale"], int | float):
        raise GraphError(f"scale is a number, not {attrs['scale']!r}")
    scores = _infer_matmul((q, _swap_last(b, attrs["trans_b"], "trans_b")), {})
    if scores.rank < 2 or v.rank < 2:
        raise GraphError(f"q, k and v need rank >= 2: {q}, {b}, {v}")
    out = _infer_matmul((scores, v), {})
    return TensorType(out.shape, dtype)


def _attention(args, attrs):
    q, b, v = args
    s = np.matmul(q, np.swapaxes(b, -1, -2) if attrs["trans_b"] else b) * attrs["scale"]
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.matmul(p / p.sum(axis=-1, keepdims=True), v)


def _infer_softmax(types, attrs):
    _need_float(types[0])
    _axis(attrs["axis"], types[0].rank)
    return types[0]


def _infer_layernorm(types, attrs):
    x = types[0]
    _need_float(x)
    _same_dtype(types)
    norm = x.shape[_axis(attrs["axis"], x.rank):]
    eps = attrs["eps"]
    if isinstance(eps, bool) or not isinstance(eps, int | float) or eps < 0:
        raise GraphError(f"eps is a non-negative number, not {eps!r}")
    for t in types[1:]:
        try:
            fits = tuple(np.broadcast_shapes(t.shape, norm)) == norm
        except ValueError:
            fits = False
        if not fits:
            raise GraphError(f"scale/bias {t} must broadcast to the normalised shape {list(norm)}")
    return x


def _reduced_axes(attrs, rank: int) -> tuple[int, ...]:
    axes = attrs["axes"]
    if not isinstance(attrs["keepdims"], bool):
        raise GraphError(f"keepdims is a bool, not {attrs['keepdims']!r}")
    if not isinstance(axes, tuple) or len(set(axes)) != len(axes):
        raise GraphError(f"axes are a tuple of distinct ints, not {axes!r}")
    return tuple(sorted(_axis(a, rank) for a in axes))


def _reduce(float_only: bool) -> Infer:
    def infer(types, attrs):
        x = types[0]
        if float_only:
            _need_float(x)
        axes = _reduced_axes(attrs, x.rank)
        keep = attrs["keepdims"]
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
        return TensorType(shape, x.dtype)
    return infer


def _infer_transpose(types, attrs):
    x, perm = types[0], attrs["perm"]
    if not isinstance(perm, tuple) or sorted(perm) != list(range(x.rank)):
        raise GraphError(f"perm {perm!r} is not a permutation of the {x.rank} axes of {x}")
    return TensorType(tuple(x.shape[p] for p in perm), x.dtype)


def _infer_reshape(types, attrs):
    x, shape = types[0], attrs["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise GraphError(f"shape is a tuple of non-negative ints, not {shape!r}")
    if math.prod(shape) != x.size:
        raise GraphError(f"cannot reshape {x} ({x.size} elements) to {list(shape)}")
    return TensorType(shape, x.dtype)


def _infer_constant(types, attrs):
    value = attrs["value"]
    if not isinstance(value, np.ndarray):
        raise GraphError(f"value is a numpy array, not {type(value).__name__}")
    return TensorType(value.shape, dtype_of(value))


def _infer_fused(types, attrs):
    body, kind = attrs["body"], attrs["kind"]
    if kind not in FUSION_KINDS:
        raise GraphError(f"fusion kind is one of {', '.join(FUSION_KINDS)}, not {kind!r}")
    params = body.parameters()
    if tuple(p.type for p in params) != types:
        raise GraphError(f"inputs {', '.join(map(str, types))} do not match the body's parameters "
                         f"{', '.join(f'%{p.name}: {p.type}' for p in params)}")
    if len(body.outputs) != 1:
        raise GraphError(f"a fused body has one output, not {len(body.outputs)}")
    return body[next(iter(body.outputs.values()))].type


def _infer_where(types, attrs):
    cond, a, b = types
    dtype = _same_dtype((a, b))
    try:
        shape = tuple(np.broadcast_shapes(cond.shape, a.shape, b.shape))
    except ValueError:
        raise GraphError(f"shapes {cond}, {a} and {b} do not broadcast") from None
    return TensorType(shape, dtype)


def _number(attrs, *names: str) -> None:
    for name in names:
        v = attrs[name]
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise GraphError(f"{name} is a number, not {v!r}")


def _scalar_attrs(*names: str) -> Infer:
    def infer(types, attrs):
        _number(attrs, *names)
        return _unary(True)(types, attrs)
    return infer


def _infer_clip(types, attrs):
    _number(attrs, "min", "max")
    return types[0]


def _cast(x: np.ndarray, to: str) -> np.ndarray:
    """To i8 (a quantiser's cast): rounded to nearest even and saturated, as cvt.rni.sat.s8.f32 does;
    to any other type the evaluator's rounding to the node's dtype is the cast."""
    return np.clip(np.rint(x), -128, 127) if to == "i8" else x


def _infer_cast(types, attrs):
    return TensorType(types[0].shape, attrs["to"])


def _infer_remap(types, attrs):
    """remap: output element at coordinates o reads input element i[a] = sum_j coef[a][j] o[j] + offset[a]
    (taken modulo the input's dimension where wrap[a]); outside the input it is `fill`."""
    x, shape = types[0], attrs["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise GraphError(f"shape is a tuple of non-negative ints, not {shape!r}")
    coef, offset, wrap = attrs["coef"], attrs["offset"], attrs["wrap"]
    if (not isinstance(coef, tuple) or len(coef) != x.rank
            or not all(isinstance(c, tuple) and len(c) == len(shape) for c in coef)):
        raise GraphError(f"coef has one row of {len(shape)} coefficients per input axis ({x.rank}), not {coef!r}")
    if not isinstance(offset, tuple) or len(offset) != x.rank or not isinstance(wrap, tuple) or len(wrap) != x.rank:
        raise GraphError(f"offset and wrap have one entry per input axis ({x.rank})")
    _number(attrs, "fill")
    return TensorType(shape, x.dtype)


def _infer_concat(types, attrs):
    dtype = _same_dtype(types)
    first = types[0]
    axis = _axis(attrs["axis"], first.rank)
    for t in types[1:]:
        if t.rank != first.rank or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape, strict=True))
                                  if i != axis):
            raise GraphError(f"operands {first} and {t} differ off axis {axis}")
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in types)
    return TensorType(tuple(shape), dtype)


def remap_indices(in_shape: tuple[int, ...], attrs) -> tuple[np.ndarray, np.ndarray]:
    """For every output element of a remap (attrs as its node's): the row-major index of the input element
    it reads, and whether it reads one (False: it is the fill value)."""
    shape = attrs["shape"]
    out = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    flat = np.zeros(out.shape[1], np.int64)
    inside = np.ones(out.shape[1], bool)
    for a, n in enumerate(in_shape):
        i = np.asarray(attrs["coef"][a], np.int64) @ out + attrs["offset"][a]
        if attrs["wrap"][a]:
            i = np.mod(i, n)
        inside &= (i >= 0) & (i < n)
        flat = flat * n + np.clip(i, 0, max(n - 1, 0))
    return flat, inside


def _remap(args, attrs):
    x = args[0]
    flat, inside = remap_indices(x.shape, attrs)
    values = x.reshape(-1)[flat] if x.size else np.zeros(flat.shape, x.dtype)
    return np.where(inside, values, attrs["fill"]).reshape(attrs["shape"])


def conv_sizes(size: tuple[int, ...], kernel: tuple[int, ...], attrs: Mapping[str, Any]) -> tuple[int, ...]:
    """A convolution's output spatial sizes: along axis a the input (its elements input_dilation apart,
    the zeros between them a transposed convolution's), padded by pads[a] before and pads[r + a] after
    (negative: cropped), holds (extent - span) // stride + 1 windows of span dilation (k - 1) + 1."""
    r = len(size)
    out = []
    for a in range(r):
        extent = attrs["input_dilation"][a] * (size[a] - 1) + 1 + attrs["pads"][a] + attrs["pads"][r + a]
        out.append((extent - attrs["dilations"][a] * (kernel[a] - 1) - 1) // attrs["strides"][a] + 1)
    return tuple(out)


def _ints(attrs, name: str, count: int, least: int) -> None:
    v = attrs[name]
    if (not isinstance(v, tuple) or len(v) != count
            or not all(isinstance(i, int) and not isinstance(i, bool) and i >= least for i in v)):
        raise GraphError(f"{name} is a tuple of {count} ints{f' >= {least}' if least > -2**31 else ''}, not {v!r}")


def _infer_conv(types, attrs):
    x, w = types
    dtype = _same_dtype(types)
    if x.rank < 3 or w.rank != x.rank:
        raise GraphError(f"conv needs x as N x C x spatial.. and w as M x C/group x kernel.. of the same rank, "
                         f"not {x} and {w}")
    r, group = x.rank - 2, attrs["group"]
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise GraphError(f"group is a positive int, not {group!r}")
    for name, count, least in (("strides", r, 1), ("dilations", r, 1), ("input_dilation", r, 1),
                               ("pads", 2 * r, -2**31)):
        _ints(attrs, name, count, least)
    if x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise GraphError(f"{x.shape[1]} input channels and {w.shape[0]} output channels do not match weights "
                         f"{w} in {group} group(s)")
    out = conv_sizes(x.shape[2:], w.shape[2:], attrs)
    if min(out) < 1:
        raise GraphError(f"the window ({list(w.shape[2:])}) does not fit the padded input {x}: output {list(out)}")
    return TensorType((x.shape[0], w.shape[0], *out), dtype)


def conv_taps(size: tuple[int, ...], out: tuple[int, ...], tap: tuple[int, ...],
              attrs: Mapping[str, Any]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per spatial axis, for kernel tap `tap`: the input index each output position reads, and whether it
    reads one (False: the padding, or a zero a transposed convolution stuffed between the elements)."""
    index, inside = [], []
    for a, n in enumerate(size):
        u = attrs["input_dilation"][a]
        j = attrs["strides"][a] * np.arange(out[a]) + attrs["dilations"][a] * tap[a] - attrs["pads"][a]
        i = np.floor_divide(j, u)
        index.append(np.clip(i, 0, n - 1))
        inside.append((np.mod(j, u) == 0) & (i >= 0) & (i < n))
    return index, inside


def _conv(args, attrs):
    x, w = args
    n, c, *size = x.shape
    m, cg, *kernel = w.shape
    g = attrs["group"]
    out = conv_sizes(tuple(size), tuple(kernel), attrs)
    xg, wg = x.reshape(n, g, cg, *size), w.reshape(g, m // g, cg, *kernel)
    y = np.zeros((n, g, m // g, *out), x.dtype)
    for tap in np.ndindex(*kernel):
        index, inside = conv_taps(tuple(size), out, tap, attrs)
        mask = np.ones(out, bool)
        for a, ok in enumerate(inside):
            mask &= ok.reshape([-1 if b == a else 1 for b in range(len(out))])
        patch = xg[(slice(None),) * 3 + np.ix_(*index)] * mask
        y += np.einsum("ngc...,gmc->ngm...", patch, wg[(...,) + tap])
    return y.reshape(n, m, *out)


def _log_softmax(args, attrs):
    x, axis = args[0], attrs["axis"]
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _selu(args, attrs):
    x = args[0]
    return attrs["gamma"] * np.where(x > 0, x, attrs["alpha"] * (np.exp(np.minimum(x, 0)) - 1))


_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu(args, attrs):
    x = args[0]
    if attrs["approximate"] == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def _softmax(args, attrs):
    x, axis = args[0], attrs["axis"]
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _layernorm(args, attrs):
    x = args[0]
    axes = tuple(range(attrs["axis"] % x.ndim, x.ndim))
    centred = x - np.mean(x, axis=axes, keepdims=True)
    y = centred / np.sqrt(np.mean(centred * centred, axis=axes, keepdims=True) + attrs["eps"])
    for extra, combine in zip(args[1:], (np.multiply, np.add), strict=False):
        y = combine(y, extra)
    return y


def _infer_all_reduce(types, attrs):
    _group(attrs)
    return types[0]


def _infer_all_gather(types, attrs):
    x = types[0]
    axis = _axis(attrs["axis"], x.rank)
    shape = list(x.shape)
    shape[axis] *= _group(attrs)
    return TensorType(tuple(shape), x.dtype)


def _infer_embedding_bag(types, attrs):
    table, ids = types
    if table.rank != 2 or table.dtype not in FLOAT_DTYPES:
        raise GraphError(f"the table is a float matrix (rows x dim), not {table}")
    if ids.rank != 2 or ids.dtype != "i32":
        raise GraphError(f"the indices are an i32 matrix (batch x bag), not {ids}")
    return TensorType((ids.shape[0], table.shape[1]), table.dtype)


def _embedding_bag(args, attrs):
    table, ids = args
    return table[ids.astype(np.int64)].sum(axis=1)


def _group(attrs) -> int:
    gpus = attrs["gpus"]
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise GraphError(f"gpus is a positive int, not {gpus!r}")
    return gpus


def _collective(args, attrs):
    # one GPU's graph sees only its own value: the group's values meet in shard.evaluate_sharded
    if attrs["gpus"] != 1:
        raise GraphError(f"a collective over {attrs['gpus']} GPUs is evaluated by shard.evaluate_sharded")
    return args[0]


def _registered(op: str, what: str, module: str) -> Callable[..., Any]:
    """Stands for a rule that gpusim.compiler.`module` registers on import (importing gpusim.compiler
    imports control_flow and evaluate; control_flow_run is imported by whoever runs control flow)."""
    def missing(*args):
        raise GraphError(f"the {what} of '{op}' is registered by gpusim.compiler.{module}, which is not imported")
    return missing


E, B, I, R, M, O = Kind.ELEMENTWISE, Kind.BROADCAST, Kind.INJECTIVE, Kind.REDUCTION, Kind.OUT_FUSABLE, Kind.OPAQUE
ONE, TWO = (1, 1), (2, 2)

OPS: dict[str, OpDef] = {d.name: d for d in (
    OpDef("parameter", O, (0, 0), (), None, None, "a named graph input"),
    OpDef("constant", O, (0, 0), ("value",), _infer_constant, lambda a, at: at["value"], "a numpy value"),
    OpDef("matmul", M, TWO, (), _infer_matmul, lambda a, at: np.matmul(a[0], a[1]), "numpy matmul (batched)"),
    OpDef("matmul_t", M, TWO, ("trans_a", "trans_b"), _infer_matmul_t, _matmul_t,
        "matmul reading a (trans_a) or b (trans_b) with its last two axes swapped"),
    OpDef("conv", M, TWO, ("strides", "dilations", "pads", "group", "input_dilation"), _infer_conv, _conv,
        "N x C x spatial.. convolved with M x C/group x kernel.. (cross-correlation, NCHW); pads before.., "
        "after..; input_dilation > 1: zeros between the input's elements (a transposed convolution)"),
    OpDef("add", B, TWO, (), _binary(False), lambda a, at: a[0] + a[1], "a + b"),
    OpDef("sub", B, TWO, (), _binary(False), lambda a, at: a[0] - a[1], "a - b"),
    OpDef("mul", B, TWO, (), _binary(False), lambda a, at: a[0] * a[1], "a * b"),
    OpDef("div", B, TWO, (), _binary(True), lambda a, at: a[0] / a[1], "a / b (floats)"),
    OpDef("pow", B, TWO, (), _binary(True), lambda a, at: np.power(a[0], a[1]), "a ** b (floats)"),
    OpDef("relu", E, ONE, (), _unary(False), lambda a, at: np.maximum(a[0], 0), "max(x, 0)"),
    OpDef("gelu", E, ONE, ("approximate",), _infer_gelu, _gelu, "x * Phi(x), erf-exact or tanh-approximated"),
    OpDef("exp", E, ONE, (), _unary(True), lambda a, at: np.exp(a[0]), "e ** x"),
    OpDef("tanh", E, ONE, (), _unary(True), lambda a, at: np.tanh(a[0]), "tanh x"),
    OpDef("sigmoid", E, ONE, (), _unary(True), lambda a, at: 1 / (1 + np.exp(-a[0])), "1 / (1 + e ** -x)"),
    OpDef("erf", E, ONE, (), _unary(True), lambda a, at: _erf(a[0]).astype(np.float64), "the error function"),
    OpDef("sqrt", E, ONE, (), _unary(True), lambda a, at: np.sqrt(a[0]), "square root"),
    OpDef("log", E, ONE, (), _unary(True), lambda a, at: np.log(a[0]), "natural logarithm"),
    OpDef("neg", E, ONE, (), _unary(False), lambda a, at: -a[0], "-x"),
    OpDef("abs", E, ONE, (), _unary(False), lambda a, at: np.abs(a[0]), "|x|"),
    OpDef("sign", E, ONE, (), _unary(False), lambda a, at: np.sign(a[0]), "-1, 0 or 1"),
    OpDef("clip", E, ONE, ("min", "max"), _infer_clip, lambda a, at: np.clip(a[0], at["min"], at["max"]),
        "min(max(x, min), max)"),
    OpDef("leaky_relu", E, ONE, ("alpha",), _scalar_attrs("alpha"),
        lambda a, at: np.where(a[0] >= 0, a[0], at["alpha"] * a[0]), "x if x >= 0 else alpha x"),
    OpDef("elu", E, ONE, ("alpha",), _scalar_attrs("alpha"),
        lambda a, at: np.where(a[0] > 0, a[0], at["alpha"] * np.expm1(np.minimum(a[0], 0))),
        "x if x > 0 else alpha (e ** x - 1)"),
    OpDef("selu", E, ONE, ("alpha", "gamma"), _scalar_attrs("alpha", "gamma"), _selu,
        "gamma (x if x > 0 else alpha (e ** x - 1))"),
    OpDef("softplus", E, ONE, (), _unary(True), lambda a, at: np.logaddexp(a[0], 0), "ln(1 + e ** x)"),
    OpDef("cast", E, ONE, ("to",), _infer_cast, lambda a, at: _cast(a[0], at["to"]),
          "the value in dtype `to` (rounded to it; to i8: to nearest even, saturated to -128..127)"),
    OpDef("maximum", B, TWO, (), _binary(False), lambda a, at: np.maximum(a[0], a[1]), "max(a, b)"),
    OpDef("minimum", B, TWO, (), _binary(False), lambda a, at: np.minimum(a[0], a[1]), "min(a, b)"),
    OpDef("where", B, (3, 3), (), _infer_where, lambda a, at: np.where(a[0] != 0, a[1], a[2]),
        "b where cond is non-zero, else c"),
    OpDef("softmax", R, ONE, ("axis",), _infer_softmax, _softmax, "exp(x) / sum(exp(x)) along axis"),
    OpDef("layernorm", R, (1, 3), ("axis", "eps"), _infer_layernorm, _layernorm,
        "(x - mean) / sqrt(var + eps) over axes axis.. [* gamma [+ beta]]"),
    OpDef("reduce_sum", R, ONE, ("axes", "keepdims"), _reduce(False),
        lambda a, at: np.sum(a[0], axis=at["axes"], keepdims=at["keepdims"]), "sum over axes"),
    OpDef("reduce_mean", R, ONE, ("axes", "keepdims"), _reduce(True),
        lambda a, at: np.mean(a[0], axis=at["axes"], keepdims=at["keepdims"]), "mean over axes"),
    OpDef("reduce_max", R, ONE, ("axes", "keepdims"), _reduce(False),
        lambda a, at: np.max(a[0], axis=at["axes"], keepdims=at["keepdims"]), "maximum over axes"),
    OpDef("log_softmax", R, ONE, ("axis",), _infer_softmax, _log_softmax, "log(softmax(x)) along axis"),
    OpDef("fused_attention", O, (3, 3), ("scale", "trans_b"), _infer_attention, _attention,
        "softmax(scale q @ b) @ v along the last axis (b = k^T, or k read transposed when trans_b): "
        "attention as one flash-attention kernel (passes/rules.py)"),
    OpDef("remap", I, ONE, ("shape", "coef", "offset", "wrap", "fill"), _infer_remap, _remap,
        "each output element one input element at an affine function of its coordinates, or fill outside "
        "(slice, pad, expand, tile, im2col)"),
    OpDef("concat", I, (1, 1 << 16), ("axis",), _infer_concat, lambda a, at: np.concatenate(a, at["axis"]),
        "operands joined along axis"),
    OpDef("transpose", I, ONE, ("perm",), _infer_transpose, lambda a, at: np.transpose(a[0], at["perm"]),
        "axes permuted: output axis i is input axis perm[i]"),
    OpDef("reshape", I, ONE, ("shape",), _infer_reshape, lambda a, at: np.reshape(a[0], at["shape"]),
        "the same elements in a new shape (row-major)"),
    OpDef("embedding_bag", O, TWO, (), _infer_embedding_bag, _embedding_bag,
        "row b: the sum of table rows ids[b, 0..bag-1] (a recommender's sparse lookup; data-dependent, not lowered)"),
    OpDef("all_reduce", O, ONE, ("gpus",), _infer_all_reduce, _collective,
        "the sum of x over the `gpus` GPUs running the graph (a sharded graph's collective)"),
    OpDef("all_gather", O, ONE, ("gpus", "axis"), _infer_all_gather, _collective,
        "the `gpus` GPUs' x joined along axis, in GPU order (a sharded graph's collective)"),
    OpDef("fused", O, (0, 1 << 30), ("kind", "body"), _infer_fused, None,
        "a group of nodes run as one kernel: its body is a graph whose parameters are the inputs"),
    # graph-level control flow: subgraphs whose parameters are the node's inputs; their rules are
    # registered from the layers that own them (`register`)
    OpDef("if", O, (1, 1 << 16), ("then_branch", "else_branch"), _registered("if", "type rule", "control_flow"),
        _registered("if", "numpy semantics", "evaluate"), "then_branch(inputs) if cond != 0 else else_branch(inputs)",
        _registered("if", "host run", "control_flow_run")),
    OpDef("loop", O, (1, 1 << 16), ("body", "trip_count"), _registered("loop", "type rule", "control_flow"),
        _registered("loop", "numpy semantics", "evaluate"),
        "x = body(i, x, captures) for i < trip_count (an attribute, or the first input when None)",
        _registered("loop", "host run", "control_flow_run")),
)}


def register(op: str, *, infer: Infer | None = None, compute: Compute | None = None,
             run_on_host: HostRun | None = None) -> None:
    """Fill in a declared operator's type rule, numpy semantics or host run from the layer that owns
    them (the operator table never imports a layer above it)."""
    if op not in OPS:
        raise GraphError(f"unknown operator '{op}': declare it in OPS before registering its rules")
    d = OPS[op]
    OPS[op] = replace(d, infer=infer or d.infer, compute=compute or d.compute, run_on_host=run_on_host or d.run_on_host)


def infer_type(op: str, types: tuple[TensorType, ...], attrs: Mapping[str, Any]) -> TensorType | None:
    """The output type of `op` applied to inputs of `types` (None for a parameter, whose type is declared);
    GraphError (without a node) if it is not defined: an unknown operator, a wrong input count, a missing
    or unknown attribute, a mismatch."""
    d = OPS.get(op)
    if d is None:
        raise GraphError(f"unknown operator '{op}' (known: {', '.join(OPS)})")
    lo, hi = d.inputs
    if not lo <= len(types) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise GraphError(f"takes {want} input(s), got {len(types)}")
    missing = [a for a in d.attrs if a not in attrs]
    unknown = [a for a in attrs if a not in d.attrs]
    if missing or unknown:
        raise GraphError("; ".join(
            [f"missing attribute(s) {', '.join(missing)}"] * bool(missing)
            + [f"unknown attribute(s) {', '.join(unknown)}"] * bool(unknown)))
    return d.infer(types, attrs) if d.infer else None


def kind_of(op: str) -> Kind:
    """The fusion kind of an operator."""
    return OPS[op].kind
