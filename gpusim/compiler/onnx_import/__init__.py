"""ONNX import: `import_onnx(model)` turns an ONNX model (a path or a ModelProto) into a Graph.

Graph inputs become parameters, initializers and Constant nodes constants (materialised where a value is
used as data; shapes and axes are read from them directly). Node names are the ONNX value names; helper
nodes an operator needs (Gemm's transposes and scalings) are named `<output>.<what>`. The `onnx` package
(`pip install -e ".[onnx]"`) is imported only when this is called.

`CONVERTERS` is the table: each ONNX operator's converter, a small function of (importer, node,
attributes, output name) in the module of its family (elementwise.py, values.py, layout.py, nn.py,
control_flow.py); importer.py holds one model's import (values, constants, folding, errors). A new
operator is one function and one row here (docs/architecture.md, "Where a change goes")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

from gpusim.compiler.ir import Graph
from gpusim.compiler.onnx_import import control_flow, elementwise, layout, nn, values
from gpusim.compiler.onnx_import.importer import Converter, Importer, load_onnx

CONVERTERS: dict[str, Converter] = {
    **dict.fromkeys(elementwise.BINARY, elementwise.binary), **dict.fromkeys(elementwise.UNARY, elementwise.unary),
    **dict.fromkeys(elementwise.VARIADIC, elementwise.variadic),
    **dict.fromkeys(elementwise.SCALAR_OPS, elementwise.scalar_op),
    "Cast": elementwise.cast, "Where": elementwise.where, "Clip": elementwise.clip, "PRelu": elementwise.prelu,
    "Shrink": elementwise.shrink, "Gelu": elementwise.gelu,
    "Identity": values.identity, "Dropout": values.dropout, "Constant": values.constant,
    "ConstantOfShape": values.constant_of_shape, "Shape": values.shape, "Size": values.size,
    "Gemm": nn.gemm, "Softmax": nn.softmax, "LogSoftmax": nn.softmax, "LayerNormalization": nn.layernorm,
    "InstanceNormalization": nn.instancenorm, "BatchNormalization": nn.batchnorm,
    **dict.fromkeys(("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"), nn.reduce),
    "Conv": nn.conv, "ConvTranspose": nn.conv_transpose,
    **dict.fromkeys(("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"), nn.pool),
    "Transpose": layout.transpose, "Reshape": layout.reshape, "Flatten": layout.flatten,
    "Squeeze": layout.squeeze, "Unsqueeze": layout.unsqueeze, "Concat": layout.concat, "Slice": layout.slice,
    "Split": layout.split, "Gather": layout.gather, "Expand": layout.expand, "Tile": layout.tile, "Pad": layout.pad,
    "If": control_flow.import_if, "Loop": control_flow.import_loop,
}
SUPPORTED = tuple(sorted(CONVERTERS))


def import_onnx(model: str | PathLike | Any, *, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """The Graph of an ONNX model (a file path or an onnx.ModelProto). `shapes` gives static shapes for
    graph inputs whose shapes are symbolic or missing. CompilerError naming the ONNX node and its operator
    for what is not supported."""
    onnx = load_onnx()
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    return Importer(onnx, proto, dict(shapes or {}), CONVERTERS).graph


__all__ = ["CONVERTERS", "SUPPORTED", "Importer", "import_onnx"]
