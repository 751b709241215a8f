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

"Constant 1" means a constant whose every element is 1. Nodes left unused are for dead-code elimination."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.passes.base import Change, constant_value, rewrite
from gpusim.compiler.printer import format_node
from gpusim.compiler.tensor import FLOAT_DTYPES

Simplification = Callable[[Graph, Node], tuple[str, str] | None]  # -> (kind, name standing for the node)


def simplify(graph: Graph) -> tuple[Graph, list[Change]]:
    """Apply the rules of the module doc once, in topological order (so chains like x*1*1 simplify fully)."""
    changes: list[Change] = []

    def rule(new: Graph, node: Node) -> str | None:
        for simplification in RULES.get(node.op, ()):
            found = simplification(new, node)
            if found is not None:
                kind, target = found
                after = format_node(new[target]) if target == node.name else f"%{target}"
                changes.append(Change(kind, f"{format_node(node)} -> {after}"))
                return target
        return None

    return rewrite(graph, rule), changes


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


RULES: dict[str, tuple[Simplification, ...]] = {
    "mul": (_zero_product, _neutral_operand, _to_pow),
    "div": (_neutral_operand,),
    "add": (_neutral_operand,),
    "sub": (_neutral_operand,),
    "transpose": (_stacked,),
    "reshape": (_stacked,),
}
