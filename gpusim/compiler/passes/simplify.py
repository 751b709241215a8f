"""Algebraic simplification, each rule replacing a node by a simpler equivalent:

| kind | before | after |
|---|---|---|
| mul-one, add-zero, div-one, sub-zero | x*1, 1*x, x+0, 0+x, x/1, x-0 | x (when x already has the result's type) |
| mul-zero | x*0, 0*x | a zeros constant of the result's type (assumes x finite, as fast-math does) |
| pow | x*x*x, (x*x)*(x*x), pow(x, n)*x | pow(x, 3), pow(x, 4), pow(x, n+1) (x*x stays: a multiply is cheaper) |
| transpose-transpose | transpose(transpose(x, p), q) | x if the perms compose to the identity, else one transpose |
| transpose-identity | transpose(x, [0,1,..]) | x |
| reshape-reshape | reshape(reshape(x, s), t) | reshape(x, t), or x if t is x's shape |
| reshape-identity | reshape(x, x's shape) | x |
| gelu-erf | x * (erf(x / sqrt 2) + 1) * 0.5, (x * 0.5) * (1 + erf(x * (1 / sqrt 2))) (PyTorch's GELU) | gelu(x) |
| layernorm | (x - mean(x)) / sqrt(mean((x - mean(x)) ** 2) + eps), trailing-axes means, keepdims | layernorm(x) |
| layernorm-scale, -shift | layernorm(x) * g, layernorm(x, g) + b (g, b fit its axes) | layernorm(x, g[, b]) |
| transpose-matmul | matmul(transpose(a), b), matmul(a, transpose(b)) (last two axes swapped) | matmul_t(a, b) |

transpose-matmul is defined in passes/rules.py.

"Constant 1" means a constant whose every element is 1. Nodes left unused are for dead-code elimination.
Every rule is a pattern of the pattern-rewrite engine (passes/pattern.py); `RULES` lists them in the
order they are tried."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.passes.base import Change, constant_value
from gpusim.compiler.passes.pattern import SQRT2, Build, C, Match, P, Pat, PatternMatcher, Rule, V
from gpusim.compiler.passes.rules import TRANSPOSE_RULES
from gpusim.compiler.tensor import FLOAT_DTYPES

Simplification = Callable[[Graph, Node], tuple[str, str] | None]  # -> (kind, name standing for the node)


def simplify(graph: Graph) -> tuple[Graph, list[Change]]:
    """Apply the rules of the module doc once, in topological order (so chains like x*1*1 simplify fully)."""
    return PatternMatcher(RULES)(graph)


def _all(new: Graph, name: str, value: float) -> bool:
    v = constant_value(new, name)
    return v is not None and v.size > 0 and bool(np.all(v == value))


NEUTRAL = {"mul": (1, True), "div": (1, False), "add": (0, True), "sub": (0, False)}  # element, commutative


def _neutral_operand(new: Graph, node: Node) -> tuple[str, str] | None:
    element, commutative = NEUTRAL[node.op]
    a, b = node.inputs
    for keep, other in ((a, b), (b, a)) if commutative else ((a, b),):
        if _all(new, other, element) and new[keep].type == node.type:
            return f"{node.op}-{'one' if element else 'zero'}", keep
    return None


def _zero_product(new: Graph, node: Node) -> tuple[str, str] | None:
    if not any(_all(new, i, 0) for i in node.inputs):
        return None
    return "mul-zero", new.constant(np.zeros(node.shape), node.dtype, name=node.name).name


def _power(new: Graph, name: str) -> tuple[str, float]:
    """`name` as base ** exponent: mul(x, x) is x ** 2, pow(x, scalar constant n) is x ** n, else name ** 1."""
    node = new[name]
    if node.op == "mul" and node.inputs[0] == node.inputs[1]:
        return node.inputs[0], 2.0
    if node.op == "pow":
        n = constant_value(new, node.inputs[1])
        if n is not None and n.ndim == 0 and new[node.inputs[0]].type == node.type:
            return node.inputs[0], float(n)
    return name, 1.0


def _to_pow(new: Graph, node: Node) -> tuple[str, str] | None:
    (base, m), (other, n) = (_power(new, i) for i in node.inputs)
    if base != other or m + n < 3 or node.dtype not in FLOAT_DTYPES or new[base].type != node.type:
        return None
    return "pow", new.pow(base, new.constant(m + n, node.dtype), name=node.name).name


# op -> (its attribute, how two stacked ones compose: (inner, outer) -> one, when one is the identity)
STACKED: dict[str, tuple[str, Callable, Callable]] = {
    "transpose": ("perm", lambda p, q: tuple(p[i] for i in q), lambda perm, x: perm == tuple(range(x.rank))),
    "reshape": ("shape", lambda s, t: t, lambda shape, x: shape == x.shape),
}


def _stacked(new: Graph, node: Node) -> tuple[str, str] | None:
    """transpose(transpose(x)) and reshape(reshape(x)) as one; one that changes nothing as its input."""
    attr, compose, is_identity = STACKED[node.op]
    inner = new[node.inputs[0]]
    stacked = inner.op == node.op
    source = inner.inputs[0] if stacked else inner.name
    value = compose(inner.attrs[attr], node.attrs[attr]) if stacked else node.attrs[attr]
    kind = f"{node.op}-{node.op if stacked else 'identity'}"
    if is_identity(value, new[source].type):
        return kind, source
    if stacked:
        return kind, new.emit(node.op, (source,), {attr: value}, name=node.name).name
    return None


def _as(simplification: Simplification) -> Build:
    """A rule's build from a simplification that names its own change kind."""
    return lambda new, node, m: simplification(new, node)


def _gelu(new: Graph, node: Node, m: Match) -> str | None:
    if new[m["x"]].type != node.type or node.dtype not in FLOAT_DTYPES:
        return None
    return new.gelu(m["x"], name=node.name).name


def _trailing_mean(graph, node: Node) -> bool:
    axes = node.attrs["axes"]
    return node.attrs["keepdims"] and axes == tuple(range(node.type.rank - len(axes), node.type.rank))


def _layernorm(new: Graph, node: Node, m: Match) -> str | None:
    mean, var, eps = new[m["mean"]], new[m["var"]], new[m["eps"]].attrs["value"]
    if mean.attrs["axes"] != var.attrs["axes"] or eps.size != 1 or new[m["x"]].type != node.type:
        return None
    # the shortest decimal that rounds to the constant (an f32 1e-5 stays 1e-05)
    value = float(np.format_float_positional(eps.reshape(-1)[0], unique=True))
    return new.layernorm(m["x"], axis=mean.attrs["axes"][0], eps=value, name=node.name).name


def _layernorm_affine(new: Graph, node: Node, m: Match) -> str | None:
    ln, extra = new[m["ln"]], new[m["extra"]]
    x = new[ln.inputs[0]]
    norm = x.shape[ln.attrs["axis"]:]
    try:
        fits = tuple(np.broadcast_shapes(extra.shape, norm)) == norm
    except ValueError:
        fits = False
    if not fits or node.type != ln.type or extra.dtype != ln.dtype:
        return None
    return new.emit("layernorm", (*ln.inputs, extra.name), ln.attrs, name=node.name).name


def _gelu_patterns() -> list[Pat]:
    """x * Phi(x) as exporters write it: the 0.5 outside or beside x, x / sqrt 2 or x * (1 / sqrt 2)."""
    out = []
    for scaled in (P("div", V("x"), C(SQRT2)), P("mul", V("x"), C(1 / SQRT2))):
        phi = P("add", P("erf", scaled), C(1.0))
        out += [P("mul", P("mul", V("x"), phi), C(0.5)), P("mul", P("mul", V("x"), C(0.5)), phi)]
    return out


def _layernorm_pattern(square: Pat) -> Pat:
    mean = P("reduce_mean", V("x"), name="mean", where=_trailing_mean)
    var = P("reduce_mean", square, name="var", where=_trailing_mean)
    return P("div", P("sub", V("x"), mean, name="d"), P("sqrt", P("add", var, C(name="eps"))))


RULES: tuple[Rule, ...] = (
    Rule("mul-zero", P("mul", V(), C(0.0)), _as(_zero_product)),
    *(Rule(f"{op}-{'one' if e else 'zero'}", P(op, V(), C(float(e))), _as(_neutral_operand))
      for op, (e, _) in NEUTRAL.items()),
    Rule("pow", P("mul", V(), V()), _as(_to_pow)),
    *(Rule(f"{op}-stacked", P(op, V()), _as(_stacked)) for op in STACKED),
    *(Rule("gelu-erf", p, _gelu) for p in _gelu_patterns()),
    *(Rule("layernorm", _layernorm_pattern(sq), _layernorm)
      for sq in (P("pow", V("d"), C(2.0)), P("mul", V("d"), V("d")))),
    Rule("layernorm-scale", P("mul", P("layernorm", V(), name="ln"), V("extra")), _layernorm_affine),
    Rule("layernorm-shift", P("add", P("layernorm", V(), V(), name="ln"), V("extra")), _layernorm_affine),
    *TRANSPOSE_RULES,
)
