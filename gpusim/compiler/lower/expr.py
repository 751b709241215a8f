"""Element-wise code shared by every template: the offset of a broadcast operand at one position of an
output, and the values of a region's tensors at that position, each operation emitted when first
needed (f32 arithmetic; exp and tanh through ex2, erf by Abramowitz and Stegun 7.1.26, |error| < 1.5e-7)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Node
from gpusim.compiler.lower.asm import Asm, fimm
from gpusim.compiler.lower.region import Input, Region

LOG2E = 1.4426950408889634
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def divide(e: Asm, reg: str, n: int) -> str:
    """reg / n (u32; a shift for a power of two)."""
    if n == 1:
        return reg
    if n & (n - 1) == 0:
        return e.value("shr.u32", "u32", reg, str(n.bit_length() - 1))
    return e.value("div.u32", "u32", reg, str(n))


def modulo(e: Asm, reg: str, n: int) -> str:
    """reg % n (u32; a mask for a power of two)."""
    if n & (n - 1) == 0:
        return e.value("and.b32", "u32", reg, str(n - 1))
    return e.value("rem.u32", "u32", reg, str(n))


class Indexer:
    """Offsets (u32 registers, or "0") into operands that broadcast to `shape`, at the position whose
    row-major index is the register `flat`. Coordinates known already (`coords`: axis -> register)
    are used as they are; `tail` = (n, register) gives flat % n, the position within the last axes."""

    def __init__(self, e: Asm, shape: tuple[int, ...], flat: str, *, coords: Mapping[int, str] | None = None,
                 tail: tuple[int, str] | None = None):
        self.e, self.shape, self.flat = e, shape, flat
        self._coords = dict(coords or {})
        self._tails = dict([tail]) if tail else {}
        self._offsets: dict[tuple[int, ...], str] = {}

    def coord(self, axis: int) -> str:
        if axis not in self._coords:
            q = divide(self.e, self.flat, math.prod(self.shape[axis + 1:]))
            self._coords[axis] = q if axis == 0 else modulo(self.e, q, self.shape[axis])
        return self._coords[axis]

    def offset(self, shape: tuple[int, ...]) -> str:
        """The offset of the element of an operand of `shape` read at this position."""
        s = (1,) * (len(self.shape) - len(shape)) + tuple(shape)
        if s not in self._offsets:
            self._offsets[s] = self._offset(s)
        return self._offsets[s]

    def _offset(self, s: tuple[int, ...]) -> str:
        if math.prod(s) == 1:
            return "0"
        if s == self.shape:
            return self.flat
        first = next(d for d, n in enumerate(s) if n != 1)
        if s[first:] == self.shape[first:]:  # the operand is the output's last axes: flat % their size
            n = math.prod(s[first:])
            if n not in self._tails:
                self._tails[n] = modulo(self.e, self.flat, n)
            return self._tails[n]
        acc = None
        for d in reversed(range(len(s))):  # sum of coordinate x stride over the operand's own axes
            if s[d] != 1:
                stride = math.prod(s[d + 1:])
                if acc is None:
                    acc = (self.coord(d) if stride == 1
                           else self.e.value("mul.lo.u32", "u32", self.coord(d), str(stride)))
                else:
                    acc = self.e.value("mad.lo.u32", "u32", self.coord(d), str(stride), acc)
        return acc


class Values:
    """The values (f32 registers or immediates) of a region's tensors at one position: inputs loaded
    through `indexer` (guarded by `guard`), operations emitted on first use. `preset` gives values the
    template computed itself (a matmul's accumulator)."""

    def __init__(self, e: Asm, region: Region, params: Mapping[str, str], indexer: Indexer, guard: str | None,
                 preset: Mapping[str, str] | None = None):
        self.e, self.indexer, self.guard, self.params = e, indexer, guard, params
        self.inputs: dict[str, Input] = {i.name: i for i in region.inputs}
        self.ops: dict[str, Node] = {n.name: n for n in region.ops}
        self.values: dict[str, str] = dict(preset or {})

    def __getitem__(self, name: str) -> str:
        if name not in self.values:
            self.values[name] = self._input(self.inputs[name]) if name in self.inputs else self._op(self.ops[name])
        return self.values[name]

    def derived(self, key: str, make: Callable[[], str]) -> str:
        """A value the template computes from this position's values, made once (`key` starts with '#')."""
        if key not in self.values:
            self.values[key] = make()
        return self.values[key]

    def prefetch(self) -> None:
        """Load every input the operations not yet emitted read, so that the loads overlap."""
        for node in self.ops.values():
            if node.name not in self.values:
                for i in node.inputs:
                    if i in self.inputs:
                        self[i]

    def _scalar(self, name: str) -> float | None:
        i = self.inputs.get(name)
        return i.scalar if i is not None else None

    def _input(self, i: Input) -> str:
        if i.scalar is not None:
            return fimm(i.scalar)
        offset = self.indexer.offset(i.type.shape)
        address = self.e.address(self.params[i.name], offset, i.type.dtype)
        return self.e.load(address, i.type.dtype, guard=None if offset == "0" else self.guard)

    def _op(self, node: Node) -> str:
        args = [self[i] for i in node.inputs]
        e, op = self.e, node.op
        if op in ("add", "sub", "mul"):
            return e.value(f"{op}.f32", "f32", *args)
        if op == "div":
            return e.value("div.rn.f32", "f32", *args)
        if op == "pow":
            return _pow(e, args[0], args[1], self._scalar(node.inputs[1]))
        if op == "relu":
            return e.value("max.f32", "f32", args[0], fimm(0.0))
        if op == "exp":
            return exp(e, args[0])
        if op == "tanh":
            return _tanh(e, args[0])
        if op == "gelu":
            return _gelu(e, args[0], node.attrs["approximate"])
        if op in UNARY:
            return UNARY[op](e, args[0], node.attrs)
        if op in ("maximum", "minimum"):
            return e.value(f"{op[:3]}.f32", "f32", *args)
        if op == "where":
            nonzero = e.value("setp.ne.f32", "pred", args[0], fimm(0.0))
            return e.value("selp.f32", "f32", args[1], args[2], nonzero)
        raise CompilerError(f"node %{node.name} ({op}): no element-wise code for this operator")


def exp(e: Asm, x: str) -> str:
    """e ** x as 2 ** (x log2 e)."""
    return e.value("ex2.approx.f32", "f32", e.value("mul.f32", "f32", x, fimm(LOG2E)))


def _tanh(e: Asm, x: str) -> str:
    """tanh x = 1 - 2 / (e^(2x) + 1): exact limits at +-inf."""
    t = e.value("ex2.approx.f32", "f32", e.value("mul.f32", "f32", x, fimm(2 * LOG2E)))
    r = e.value("rcp.approx.f32", "f32", e.value("add.f32", "f32", t, fimm(1.0)))
    return e.value("fma.rn.f32", "f32", r, fimm(-2.0), fimm(1.0))


def _erf(e: Asm, z: str) -> str:
    """erf z = sign(z) (1 - t (a1 + t (a2 + ... + t a5)) e^(-z^2)), t = 1 / (1 + p |z|)."""
    a = e.value("abs.f32", "f32", z)
    t = e.value("rcp.approx.f32", "f32", e.value("fma.rn.f32", "f32", a, fimm(ERF_P), fimm(1.0)))
    poly = fimm(ERF_A[-1])
    for c in reversed(ERF_A[:-1]):
        poly = e.value("fma.rn.f32", "f32", poly, t, fimm(c))
    poly = e.value("mul.f32", "f32", poly, t)
    decay = e.value("ex2.approx.f32", "f32", e.value("mul.f32", "f32", e.value("mul.f32", "f32", a, a),
                                                       fimm(-LOG2E)))
    mag = e.value("fma.rn.f32", "f32", e.value("neg.f32", "f32", poly), decay, fimm(1.0))
    neg = e.value("setp.lt.f32", "pred", z, fimm(0.0))
    return e.value("selp.f32", "f32", e.value("neg.f32", "f32", mag), mag, neg)


def _sigmoid(e: Asm, x: str) -> str:
    """1 / (1 + e^-x)."""
    t = e.value("ex2.approx.f32", "f32", e.value("mul.f32", "f32", x, fimm(-LOG2E)))
    return e.value("rcp.approx.f32", "f32", e.value("add.f32", "f32", t, fimm(1.0)))


def _log(e: Asm, x: str) -> str:
    """ln x = log2(x) / log2(e)."""
    return e.value("mul.f32", "f32", e.value("lg2.approx.f32", "f32", x), fimm(1 / LOG2E))


def _expm1_neg(e: Asm, x: str, alpha: float) -> str:
    """x if x > 0 else alpha (e^x - 1) (ELU)."""
    em1 = e.value("add.f32", "f32", exp(e, e.value("min.f32", "f32", x, fimm(0.0))), fimm(-1.0))
    positive = e.value("setp.gt.f32", "pred", x, fimm(0.0))
    return e.value("selp.f32", "f32", x, e.value("mul.f32", "f32", em1, fimm(alpha)), positive)


def _softplus(e: Asm, x: str) -> str:
    """ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|): no overflow for large x."""
    a = e.value("abs.f32", "f32", x)
    t = exp(e, e.value("neg.f32", "f32", a))
    return e.value("add.f32", "f32", e.value("max.f32", "f32", x, fimm(0.0)),
                   _log(e, e.value("add.f32", "f32", t, fimm(1.0))))


def _sign(e: Asm, x: str) -> str:
    pos = e.value("selp.f32", "f32", fimm(1.0), fimm(0.0), e.value("setp.gt.f32", "pred", x, fimm(0.0)))
    neg = e.value("selp.f32", "f32", fimm(1.0), fimm(0.0), e.value("setp.lt.f32", "pred", x, fimm(0.0)))
    return e.value("sub.f32", "f32", pos, neg)


def _leaky(e: Asm, x: str, alpha: float) -> str:
    scaled = e.value("mul.f32", "f32", x, fimm(alpha))
    return e.value("selp.f32", "f32", x, scaled, e.value("setp.ge.f32", "pred", x, fimm(0.0)))


UNARY: dict[str, Callable[[Asm, str, Mapping], str]] = {
    "sigmoid": lambda e, x, at: _sigmoid(e, x),
    "erf": lambda e, x, at: _erf(e, x),
    "sqrt": lambda e, x, at: e.value("sqrt.approx.f32", "f32", x),
    "log": lambda e, x, at: _log(e, x),
    "neg": lambda e, x, at: e.value("neg.f32", "f32", x),
    "abs": lambda e, x, at: e.value("abs.f32", "f32", x),
    "sign": lambda e, x, at: _sign(e, x),
    "clip": lambda e, x, at: e.value("min.f32", "f32", e.value("max.f32", "f32", x, fimm(at["min"])),
                                     fimm(at["max"])),
    "leaky_relu": lambda e, x, at: _leaky(e, x, at["alpha"]),
    "elu": lambda e, x, at: _expm1_neg(e, x, at["alpha"]),
    "selu": lambda e, x, at: e.value("mul.f32", "f32", _expm1_neg(e, x, at["alpha"]), fimm(at["gamma"])),
    "softplus": lambda e, x, at: _softplus(e, x),
    "cast": lambda e, x, at: _cast(e, x, at["to"]),
}


def _cast(e: Asm, x: str, to: str) -> str:
    """x rounded to `to` (to nearest even for f16 and bf16; i8 also saturated) and held in f32 again, so
    that a fused chain rounds where the graph does."""
    if to in ("f16", "bf16", "i8"):
        return e.rounded(x, to)
    return x


def _gelu(e: Asm, x: str, approximate: str) -> str:
    """x Phi(x) = x/2 (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi) (x + 0.044715 x^3)) for erf."""
    if approximate == "tanh":
        cube = e.value("mul.f32", "f32", e.value("mul.f32", "f32", x, x), x)
        inner = e.value("mul.f32", "f32", e.value("fma.rn.f32", "f32", cube, fimm(0.044715), x),
                        fimm(math.sqrt(2 / math.pi)))
        phi = _tanh(e, inner)
    else:
        phi = _erf(e, e.value("mul.f32", "f32", x, fimm(1 / math.sqrt(2))))
    half = e.value("mul.f32", "f32", x, fimm(0.5))
    return e.value("fma.rn.f32", "f32", half, phi, half)


def _pow(e: Asm, x: str, y: str, exponent: float | None) -> str:
    """x ** y: repeated multiplication for a constant integer exponent 1..8, else 2 ** (y log2 x)
    (NaN for negative x, as numpy gives for a non-integer exponent)."""
    if exponent is not None and exponent == int(exponent) and 1 <= exponent <= 8:
        result = x
        for _ in range(int(exponent) - 1):
            result = e.value("mul.f32", "f32", result, x)
        return result
    return e.value("ex2.approx.f32", "f32", e.value("mul.f32", "f32", y, e.value("lg2.approx.f32", "f32", x)))
