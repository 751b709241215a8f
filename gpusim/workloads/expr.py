"""Safe arithmetic on workload parameters, for the `launch:` (and `flops:` / `bytes_moved:`) fields of a
workload.yaml: numbers, parameter names, `+ - * / // % **`, parentheses and the functions
`ceil_div`, `min`, `max`, `int`. Parsed with `ast` and walked node by node; nothing is ever `eval`-ed."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

Number = int | float


class ExprError(ValueError):
    """What is wrong with an expression (the caller adds the file and field)."""


def ceil_div(a: Number, b: Number) -> int:
    if b == 0:
        raise ExprError("ceil_div by zero")
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return int(math.ceil(a / b))


def _int(x: Number) -> int:
    return int(x)


def _pow(a: Number, b: Number) -> Number:
    if abs(b) > 256:
        raise ExprError(f"exponent {b} is too large")
    return a**b


FUNCTIONS: dict[str, Callable[..., Number]] = {"ceil_div": ceil_div, "min": min, "max": max, "int": _int}
_ARITY = {"ceil_div": (2, 2), "min": (1, 99), "max": (1, 99), "int": (1, 1)}
_BINOPS: dict[type, Callable[[Number, Number], Number]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _pow,
}
_UNOPS: dict[type, Callable[[Number], Number]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def evaluate(expr: str | Number, names: Mapping[str, Number]) -> Number:
    """Value of `expr` with `names` bound (an int stays an int unless `/` or a float enters).
    Raises ExprError on syntax outside the small language, an unknown name or a division by zero."""
    if isinstance(expr, bool):
        raise ExprError(f"expected a number or an expression, got {expr!r}")
    if isinstance(expr, int | float):
        return expr
    if not isinstance(expr, str):
        raise ExprError(f"expected a number or an expression string, got {type(expr).__name__} {expr!r}")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"syntax error: {e.msg}") from None
    return _eval(tree.body, names)


def names_in(expr: str | Number) -> list[str]:
    """The parameter names `expr` reads, each once (a function name is not a parameter); a number or an
    expression that does not parse reads none."""
    if not isinstance(expr, str):
        return []
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return []
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    seen = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in calls]
    return list(dict.fromkeys(seen))


def _eval(node: ast.AST, names: Mapping[str, Number]) -> Number:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExprError(f"only numbers are allowed, got {node.value!r}")
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            known = ", ".join(sorted(names)) or "none"
            raise ExprError(f"unknown name '{node.id}' (parameters: {known})")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left, names), _eval(node.right, names)
        try:
            return _BINOPS[type(node.op)](a, b)
        except ZeroDivisionError:
            raise ExprError("division by zero") from None
        except OverflowError:
            raise ExprError("result too large") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _UNOPS[type(node.op)](_eval(node.operand, names))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ExprError(f"unknown function '{what}' (allowed: {', '.join(FUNCTIONS)})")
        if node.keywords:
            raise ExprError(f"{node.func.id}() takes no keyword arguments")
        lo, hi = _ARITY[node.func.id]
        if not lo <= len(node.args) <= hi:
            raise ExprError(f"{node.func.id}() takes {lo if lo == hi else f'{lo} or more'} argument(s), "
                            f"got {len(node.args)}")
        return FUNCTIONS[node.func.id](*(_eval(a, names) for a in node.args))
    raise ExprError(f"'{ast.unparse(node)}' is not allowed (numbers, parameter names, + - * / // % **, "
                    f"parentheses, {', '.join(FUNCTIONS)})")
