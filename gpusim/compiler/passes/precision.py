"""The precision pass: a graph in f32 rewritten to compute in a lower precision, as inference
compilers do (TensorRT's mixed precision, ONNX Runtime's static quantisation).

- **f16 / bf16**: every float parameter and constant is stored in the lower type, and matmuls and
  element-wise and injective operators compute in it (their kernels still accumulate and compute in
  f32 registers, rounding once when they store). Operators whose result depends on a sum over many
  elements, where a 10- or 7-bit mantissa loses the small terms, stay in f32 (`keep_f32`, by default
  every reduction: softmax, layer norm, reduce_*): their operand is cast up, their result cast down
  for its users. Graph outputs are cast back to f32, so the model's interface does not change.
- **int8**: every matmul whose B operand is a rank-2 weight parameter (a linear layer) runs on int8
  operands: A is quantised per tensor (symmetric: scale = max |A| / 127 over the calibration inputs,
  q = round-to-nearest-even(A / scale) saturated to -128..127), the weight per output channel (a scale
  per column of B, `per_channel=False` for one scale) or per tensor; the product accumulates exactly in
  i32, and the result is dequantised by one multiply by scale_A x scale_B[column]. The quantise and
  dequantise are element-wise, so the fusion pass folds the dequantise into the matmul's epilogue and
  the next layer's quantise into the epilogue before it. The quantised weight is stored transposed
  (N x K, a `matmul_t` with trans_b: each output channel's K bytes contiguous, the "TN" layout the
  tensor cores' s8 mma reads without a transposing load, as TensorRT reformats weights when it builds
  an engine); `Converted.inputs` transposes it. Everything else stays f32.

`convert` returns the rewritten graph with its scales; `Converted.inputs` turns the f32 inputs into
those of the new graph (the weights quantised with their scales)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.evaluate import bind_inputs, evaluate
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.ops import OPS, Kind, infer_type
from gpusim.compiler.passes.base import Change
from gpusim.compiler.tensor import FLOAT_DTYPES, NUMPY_DTYPES, TensorType

PRECISIONS = ("f16", "bf16", "int8")
KEEP_F32 = tuple(op for op, d in OPS.items() if d.kind == Kind.REDUCTION)
QMAX = 127  # symmetric int8: -127..127 used, so that -x quantises to -q


@dataclass(frozen=True, slots=True)
class Converted:
    """The rewritten graph; for int8 the per-tensor activation scales (by the matmul operand's node)
    and the weights' scales (by parameter; an array of one scale per column, or a 0-d array)."""

    graph: Graph
    precision: str
    changes: list[Change] = field(default_factory=list)
    activation_scales: Mapping[str, float] = field(default_factory=dict)
    weight_scales: Mapping[str, np.ndarray] = field(default_factory=dict)

    def inputs(self, inputs: Mapping[str, ArrayLike]) -> dict[str, np.ndarray]:
        """The new graph's inputs from the original's f32 ones: weights quantised with their scales and
        stored transposed (N x K), the rest as given (the kernels' loads round them to the parameters'
        types)."""
        return {name: value if name not in self.weight_scales
                else np.ascontiguousarray(quantise(value, self.weight_scales[name]).T)
                for name, value in inputs.items()}


def quantise(value: np.ndarray, scale: np.ndarray | float) -> np.ndarray:
    """Symmetric int8: value / scale rounded to nearest even, saturated."""
    return np.clip(np.rint(np.asarray(value, np.float64) / scale), -128, 127).astype(np.int8)


def convert(graph: Graph, precision: str, *, calibration: Mapping[str, ArrayLike] | None = None,
            keep_f32: Collection[str] = KEEP_F32, per_channel: bool = True) -> Converted:
    """`graph` (f32) rewritten to `precision` (PRECISIONS); int8 needs `calibration` inputs (the
    scales are their absolute maxima). CompilerError for an unknown precision, a graph already fused or
    not in f32, or int8 without calibration inputs."""
    if precision not in PRECISIONS:
        raise CompilerError(f"unknown precision '{precision}' (known: {', '.join(PRECISIONS)})")
    for node in graph.nodes.values():
        if node.op == "fused":
            raise CompilerError(f"the precision pass runs before fusion; %{node.name} is already fused")
        if node.dtype in FLOAT_DTYPES and node.dtype != "f32":
            raise CompilerError(f"the precision pass converts an f32 graph; %{node.name} is {node.type}")
    if precision == "int8":
        if calibration is None:
            raise CompilerError("int8 needs calibration inputs (the scales are their absolute maxima)")
        return _int8(graph, calibration, per_channel)
    return _float(graph, precision, frozenset(keep_f32))


class _Builder:
    """A new graph built node by node, with memoised casts."""

    def __init__(self, graph: Graph):
        self.new = graph.derive()
        self.alias: dict[str, str] = {}
        self._casts: dict[tuple[str, str], str] = {}
        self.changes: list[Change] = []

    def add(self, op: str, inputs: tuple[str, ...], attrs: Mapping, name: str | None = None,
            type_: TensorType | None = None) -> str:
        t = type_ or infer_type(op, tuple(self.new[i].type for i in inputs), attrs)
        name = name if name is not None else self.new.fresh_name()
        self.new.add_node(Node(name, op, inputs, t, dict(attrs)))
        return name

    def cast(self, name: str, dtype: str) -> str:
        if self.new[name].dtype == dtype:
            return name
        key = (name, dtype)
        if key not in self._casts:
            self._casts[key] = self.add("cast", (name,), {"to": dtype})
        return self._casts[key]

    def constant(self, value: np.ndarray, dtype: str) -> str:
        array = np.array(value, dtype=NUMPY_DTYPES[dtype])
        array.flags.writeable = False
        return self.add("constant", (), {"value": array})

    def finish(self, graph: Graph, cast_to: str | None) -> Graph:
        for out, name in graph.outputs.items():
            target = self.alias[name]
            if cast_to and self.new[target].dtype in FLOAT_DTYPES:
                target = self.cast(target, cast_to)
            self.new.output(target, out)
        return self.new


def _float(graph: Graph, low: str, keep: frozenset[str]) -> Converted:
    b = _Builder(graph)
    users, outputs = graph.users(), set(graph.outputs.values())
    for node in graph.topo_order():
        inputs = tuple(b.alias[i] for i in node.inputs)
        if node.op == "parameter":
            t = TensorType(node.shape, low) if node.dtype == "f32" else node.type
            b.alias[node.name] = b.add("parameter", (), {}, node.name, t)
            continue
        if node.op == "constant":
            value = node.attrs["value"]
            b.alias[node.name] = (b.constant(value, low) if node.dtype == "f32"
                                  else b.add("constant", (), node.attrs, node.name, node.type))
            continue
        if node.op == "cast":  # an explicit cast keeps its type
            b.alias[node.name] = b.add(node.op, inputs, node.attrs, node.name)
            continue
        # a kept operator whose every user is a matmul reads the lower type (exactly widened by its
        # kernel's loads), computes in f32 and rounds once as it stores: the type its matmuls read
        to_matmuls = node.name not in outputs and all(graph[u].op == "matmul" for u in users[node.name])
        target = "f32" if node.op in keep and not to_matmuls else low
        moved = tuple(b.cast(i, target) if b.new[i].dtype in FLOAT_DTYPES else i for i in inputs)
        b.alias[node.name] = b.add(node.op, moved, node.attrs, node.name)
        if node.op in keep:
            b.changes.append(Change("kept", f"%{node.name} ({node.op}) computed in f32, stored in {target}"
                                            + " (read by matmuls)" * (target == low)))
    converted = b.finish(graph, "f32")
    b.changes.insert(0, Change("converted", f"{sum(p.dtype == low for p in converted.parameters())} "
                                            f"parameter(s) and the matmuls and element-wise chains to {low}"))
    return Converted(converted, low, b.changes)


def _int8(graph: Graph, calibration: Mapping[str, ArrayLike], per_channel: bool) -> Converted:
    params = {p.name: p for p in graph.parameters()}
    users = graph.users()
    values = bind_inputs(graph, calibration)
    linear = [n for n in graph.topo_order() if n.op == "matmul" and n.inputs[1] in params
              and params[n.inputs[1]].type.rank == 2 and graph[n.inputs[0]].dtype == "f32"
              and all(graph[u].op == "matmul" and graph[u].inputs[1] == n.inputs[1] for u in users[n.inputs[1]])]
    if not linear:
        return Converted(graph, "int8", [Change("kept", "no matmul with a weight parameter: nothing quantised")])
    probe = Graph.from_nodes(graph.nodes.values(), {n.inputs[0]: n.inputs[0] for n in linear}, graph.name)
    seen = evaluate(probe, values)
    act = {a: _scale(np.max(np.abs(v.astype(np.float64)))) for a, v in seen.items()}
    weights = {}
    for n in linear:
        w = values[n.inputs[1]].astype(np.float64)
        weights[n.inputs[1]] = (np.vectorize(_scale)(np.max(np.abs(w), axis=0)) if per_channel
                                else np.asarray(_scale(np.max(np.abs(w)))))
    b = _Builder(graph)
    quantised: dict[str, str] = {}
    for node in graph.topo_order():
        inputs = tuple(b.alias[i] for i in node.inputs)
        if node.op == "parameter":
            t = TensorType(node.shape[::-1], "i8") if node.name in weights else node.type
            b.alias[node.name] = b.add("parameter", (), {}, node.name, t)
        elif node.name in {n.name for n in linear}:
            a, w = node.inputs
            if a not in quantised:
                scaled = b.add("mul", (inputs[0], b.constant(1 / act[a], "f32")), {})
                quantised[a] = b.add("cast", (scaled,), {"to": "i8"})
            acc = b.add("matmul_t", (quantised[a], inputs[1]), {"trans_a": False, "trans_b": True})
            scale = b.constant(act[a] * weights[w], "f32")
            b.alias[node.name] = b.add("mul", (b.cast(acc, "f32"), scale), {}, node.name)
            kind = "per channel" if per_channel else "per tensor"
            b.changes.append(Change("quantised", f"%{node.name}: int8, %{a} scale {act[a]:.4g}, %{w} {kind}"))
        else:
            b.alias[node.name] = b.add(node.op, inputs, node.attrs, node.name, node.type)
    return Converted(b.finish(graph, None), "int8", b.changes, act, weights)


def _scale(absmax: float) -> float:
    """The symmetric scale mapping max |x| to 127 (1 for an all-zero tensor)."""
    return float(absmax) / QMAX if absmax > 0 else 1.0
