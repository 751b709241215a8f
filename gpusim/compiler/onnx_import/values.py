"""ONNX converters of values known at import: constants, the shape and size of a tensor, and the
operators that pass a value through (Identity, Dropout at inference)."""

from __future__ import annotations

import numpy as np

from gpusim.compiler.onnx_import.importer import Importer


def identity(imp: Importer, node, attrs, out):
    if node.input[0] not in imp.values:
        return imp.tensor(node.input[0], node)  # raises: the input is not defined
    return [imp.values[node.input[0]]]


def dropout(imp: Importer, node, attrs, out):
    if any(node.output[1:]):
        raise imp.error(node, "only the first output is supported (inference: no mask)")
    return identity(imp, node, attrs, out)


def constant(imp: Importer, node, attrs, out):
    for key, convert in (("value", imp.onnx.numpy_helper.to_array), ("value_float", np.float32),
                         ("value_floats", lambda v: np.array(v, np.float32)), ("value_int", np.int64),
                         ("value_ints", lambda v: np.array(v, np.int64))):
        if key in attrs:
            return np.asarray(convert(attrs[key]))
    raise imp.error(node, f"only value, value_float(s) and value_int(s) are supported, not {', '.join(attrs)}")


def constant_of_shape(imp: Importer, node, attrs, out):
    shape = imp.constant(node.input[0], node, "the shape")
    value = imp.onnx.numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    return np.full(tuple(int(d) for d in shape), value.reshape(-1)[0], value.dtype)


def shape(imp: Importer, node, attrs, out):
    shape = np.array(imp.shape(imp.tensor(node.input[0], node)), np.int64)
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return shape[start:end]


def size(imp: Importer, node, attrs, out):
    return np.array(imp.graph[imp.tensor(node.input[0], node)].type.size, np.int64)
