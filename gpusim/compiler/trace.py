"""A tracing front end (dynamic to static): `trace(fn, x=(4, 8), ...)` runs the Python function `fn` once
on symbolic tensors, and every operation it performs on them (operator overloading: + - * / ** @, .T,
.reshape, .softmax(), .relu(), .layer_norm(), ...) adds a node to a Graph; what `fn` returns becomes the
graph's outputs. Python control flow runs at trace time: a `for` over a Python range is unrolled, an `if`
on a Python value keeps one path. A branch on a tensor's *value* cannot be traced: the tensor has no
value while tracing, so `bool()` (and `float()`, `int()`, numpy conversion) of a symbolic tensor raises
TracingError naming the line. Use `where` (both sides computed, one selected per element) or a graph
`if` (control_flow.emit_if) there; capturing such a branch as it is written needs the source, not an
execution (AST-based capture). See docs/compiler.md, "Tracing".

    >>> def mlp(x, w1, w2):
    ...     return (x @ w1).relu() @ w2
    >>> print(trace(mlp, x=(2, 4), w1=(4, 8), w2=(8, 3)))          # doctest: +NORMALIZE_WHITESPACE
    graph mlp
      %x = parameter() : f32[2,4]
      %w1 = parameter() : f32[4,8]
      %w2 = parameter() : f32[8,3]
      %0 = matmul(%x, %w1) : f32[2,8]
      %1 = relu(%0) : f32[2,8]
      %2 = matmul(%1, %w2) : f32[2,3]
      output y = %2
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node


class TracingError(CompilerError):
    """What a trace cannot capture (a branch on a tensor's value), or a traced function's misuse."""


class Tensor:
    """A symbolic tensor: a node of the graph being traced. Arithmetic with another Tensor, a Python
    number or a numpy array (a constant) adds nodes."""

    __slots__ = ("graph", "node")
    __array_ufunc__ = None  # numpy operators defer to the reflected ones of Tensor (array @ tensor)

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node = graph, node

    # --- what it is ---
    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def dtype(self) -> str:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    def size(self, dim: int | None = None) -> int | tuple[int, ...]:
        return self.shape if dim is None else self.shape[dim]

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tensor(%{self.node.name}: {self.node.type})"

    # --- values it does not have ---
    def __bool__(self) -> bool:
        raise _no_value(self, "bool()", "branches on a tensor's value (if/while/and/or/not)")

    def __float__(self) -> float:
        raise _no_value(self, "float()", "reads a tensor's value")

    def __int__(self) -> int:
        raise _no_value(self, "int()", "reads a tensor's value")

    def __index__(self) -> int:
        raise _no_value(self, "an index", "uses a tensor's value as an index")

    def __array__(self, *args, **kwargs):
        raise _no_value(self, "numpy conversion", "reads a tensor's value")

    # --- operators ---
    def _wrap(self, node: Node) -> Tensor:
        return Tensor(self.graph, node)

    def _operand(self, other: Any) -> Node | float:
        if isinstance(other, Tensor):
            if other.graph is not self.graph:
                raise TracingError(f"{other!r} belongs to another trace")
            return other.node
        if isinstance(other, int | float | np.number) and not isinstance(other, bool):
            return float(other) if self.dtype != "i32" else other
        if isinstance(other, np.ndarray | list | tuple):
            return self.graph.constant(np.asarray(other), self.dtype)
        raise TracingError(f"cannot combine {self!r} with {type(other).__name__}")

    def _binary(self, op: str, other: Any, reflected: bool = False) -> Tensor:
        a, b = self.node, self._operand(other)
        if reflected:
            a, b = b, a
        if op == "matmul":
            a = a if isinstance(a, Node) else self.graph.constant(a, self.dtype)
            b = b if isinstance(b, Node) else self.graph.constant(b, self.dtype)
            return self._wrap(self.graph.matmul(a, b))
        return self._wrap(getattr(self.graph, op)(a, b))

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, True)
    def __sub__(self, o): return self._binary("sub", o)
    def __rsub__(self, o): return self._binary("sub", o, True)
    def __mul__(self, o): return self._binary("mul", o)
    def __rmul__(self, o): return self._binary("mul", o, True)
    def __truediv__(self, o): return self._binary("div", o)
    def __rtruediv__(self, o): return self._binary("div", o, True)
    def __pow__(self, o): return self._binary("pow", o)
    def __rpow__(self, o): return self._binary("pow", o, True)
    def __matmul__(self, o): return self._binary("matmul", o)
    def __rmatmul__(self, o): return self._binary("matmul", o, True)

    def __neg__(self) -> Tensor:
        return self._unary("neg")

    def __abs__(self) -> Tensor:
        return self._unary("abs")

    def __gt__(self, o) -> Tensor:
        """1.0 where self > o, else 0.0 (a mask for where(); branching on it is not traceable)."""
        return (self - o)._unary("sign").relu()

    def __lt__(self, o) -> Tensor:
        return (-(self - o))._unary("sign").relu()

    __hash__ = object.__hash__  # tensors are keys by identity; == is not overloaded

    # --- shape ---
    @property
    def T(self) -> Tensor:  # noqa: N802 (PyTorch's and numpy's name)
        """The axes reversed (a matrix transposed)."""
        return self._wrap(self.graph.transpose(self.node))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """Axes dim0 and dim1 swapped (PyTorch's transpose)."""
        perm = list(range(self.ndim))
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        return self._wrap(self.graph.transpose(self.node, perm))

    def permute(self, *dims: int) -> Tensor:
        return self._wrap(self.graph.transpose(self.node, _dims(dims)))

    def reshape(self, *shape: int) -> Tensor:
        return self._wrap(self.graph.reshape(self.node, _dims(shape)))

    view = reshape

    # --- element-wise and reductions ---
    def _unary(self, op: str, attrs: Mapping[str, Any] | None = None) -> Tensor:
        return self._wrap(self.graph.emit(op, (self.node,), attrs))

    def relu(self) -> Tensor: return self._unary("relu")
    def sigmoid(self) -> Tensor: return self._unary("sigmoid")
    def tanh(self) -> Tensor: return self._unary("tanh")
    def exp(self) -> Tensor: return self._unary("exp")
    def log(self) -> Tensor: return self._unary("log")
    def sqrt(self) -> Tensor: return self._unary("sqrt")
    def erf(self) -> Tensor: return self._unary("erf")

    def gelu(self, approximate: str = "none") -> Tensor:
        return self._wrap(self.graph.gelu(self.node, approximate))

    def softmax(self, dim: int = -1) -> Tensor:
        return self._wrap(self.graph.softmax(self.node, dim))

    def log_softmax(self, dim: int = -1) -> Tensor:
        return self._unary("log_softmax", {"axis": dim % max(self.ndim, 1)})

    def layer_norm(self, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5,
                   dim: int = -1) -> Tensor:
        """Normalised over axes dim.. (default: the last), then * weight + bias if given."""
        extra = [t.node if isinstance(t, Tensor) else None for t in (weight, bias)]
        return self._wrap(self.graph.layernorm(self.node, *extra, axis=dim, eps=eps))

    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        return self._wrap(self.graph.reduce_sum(self.node, dim, keepdim))

    def mean(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        return self._wrap(self.graph.reduce_mean(self.node, dim, keepdim))

    def max(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        return self._wrap(self.graph.reduce_max(self.node, dim, keepdim))


def _dims(dims: Sequence[Any]) -> tuple[int, ...]:
    """`f(2, 3)` or `f((2, 3))` as (2, 3)."""
    return tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], tuple | list) else tuple(dims)


def where(cond: Tensor, a: Tensor | float, b: Tensor | float) -> Tensor:
    """a where cond is non-zero, else b, element by element: a data-dependent choice a trace keeps."""
    g = cond.graph
    a_node, b_node = (x.node if isinstance(x, Tensor) else g.constant(float(x), cond.dtype) for x in (a, b))
    return Tensor(g, g.emit("where", (cond.node, a_node, b_node)))


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    g = tensors[0].graph
    return Tensor(g, g.emit("concat", [t.node for t in tensors], {"axis": dim % tensors[0].ndim}))


def _no_value(t: Tensor, asked: str, what: str) -> TracingError:
    """The error for a traced function that needs a tensor's value, naming its line."""
    frame = sys._getframe(2)
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    return TracingError(
        f"{where}: {asked} of {t!r}: the traced function {what}, but while tracing a tensor has a shape and no "
        "value, so a trace would record only the path this one run happened to take. Compute both sides and "
        "select with where(cond, a, b), build a graph-level if (gpusim.compiler.control_flow.emit_if), or make "
        "the condition a Python value known at trace time")


def trace(fn: Callable[..., Any], *, name: str | None = None, dtype: str = "f32",
          **shapes: Sequence[int]) -> Graph:
    """The graph `fn` builds when called with one symbolic tensor per keyword (name=shape) for each of
    its positional arguments without a default (the parameters take those names, in `fn`'s order; other
    arguments keep their defaults, which is how Python values reach a trace). `fn` returns a Tensor
    (output `y`), a tuple of them (`y0`, `y1`, ...) or a dict (its keys). TracingError for a value `fn`
    needs at trace time."""
    try:
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in positional and (p.default is p.empty or p.name in shapes)]
    except (TypeError, ValueError):  # a builtin without a signature: the keywords' order
        params = list(shapes)
    missing = [p for p in params if p not in shapes]
    unknown = [s for s in shapes if s not in params]
    if missing or unknown:
        raise TracingError(f"trace of {getattr(fn, '__name__', fn)}: shapes are given by its argument names "
                           f"({', '.join(params)}); missing {', '.join(missing) or 'none'}, unknown "
                           f"{', '.join(unknown) or 'none'}")
    g = Graph(name or getattr(fn, "__name__", "traced"))
    result = fn(*(Tensor(g, g.parameter(p, shapes[p], dtype)) for p in params))
    outputs = (result.items() if isinstance(result, Mapping)
               else [(f"y{i}", r) for i, r in enumerate(result)] if isinstance(result, tuple | list)
               else [("y", result)])
    for out, r in outputs:
        if not isinstance(r, Tensor) or r.graph is not g:
            raise TracingError(f"trace of {g.name}: output '{out}' is {r!r}, not a Tensor of this trace")
        g.output(r.node, out)
    return g
