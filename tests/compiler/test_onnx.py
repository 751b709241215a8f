"""ONNX import: small models built with onnx.helper, each imported graph checked against onnx's own
ReferenceEvaluator; unsupported operators and inputs give errors naming the node and operator."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from gpusim.compiler import CompilerError, evaluate, import_onnx, run_pipeline  # noqa: E402
from gpusim.compiler.onnx_import import SUPPORTED  # noqa: E402

RNG = np.random.default_rng(7)


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def model(nodes, inputs: dict, outputs: dict, initializers: dict | None = None, opset: int = 17):
    """A checked ONNX model of `nodes`; inputs/outputs map names to shapes, initializers names to arrays."""
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        [numpy_helper.from_array(v, n) for n, v in (initializers or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def assert_matches_onnx(m, feeds: dict, rtol=1e-5, atol=1e-5):
    """The imported graph, before and after the pipeline, gives what onnx's ReferenceEvaluator gives."""
    want = dict(zip([o.name for o in m.graph.output], ReferenceEvaluator(m).run(None, feeds), strict=True))
    graph = import_onnx(m)
    optimised, _ = run_pipeline(graph)
    for g in (graph, optimised):
        got = evaluate(g, feeds)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=rtol, atol=atol, err_msg=name)
    return graph, optimised


def test_two_layer_mlp():
    w1, b1, w2, b2 = rand(8, 16), rand(16), rand(16, 4), rand(4)
    m = model([helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
               helper.make_node("Add", ["h0", "b1"], ["h1"]),
               helper.make_node("Relu", ["h1"], ["h"]),
               helper.make_node("MatMul", ["h", "w2"], ["y0"], name="fc2"),
               helper.make_node("Add", ["y0", "b2"], ["y"])],
              {"x": [5, 8]}, {"y": [5, 4]}, {"w1": w1, "b1": b1, "w2": w2, "b2": b2})
    x = rand(5, 8)
    graph, optimised = assert_matches_onnx(m, {"x": x})
    np.testing.assert_allclose(evaluate(graph, {"x": x})["y"], np.maximum(x @ w1 + b1, 0) @ w2 + b2, rtol=1e-5,
                               atol=1e-5)
    assert [n.op for n in graph.topo_order()] == ["parameter", "constant", "matmul", "constant", "add", "relu",
                                                  "constant", "matmul", "constant", "add"]
    assert [n.attrs["kind"] for n in optimised.topo_order() if n.op == "fused"] == ["epilogue", "epilogue"]


def test_attention_block():
    seq, d = 6, 8
    m = model([helper.make_node("MatMul", ["x", "wq"], ["q"]),
               helper.make_node("MatMul", ["x", "wk"], ["k"]),
               helper.make_node("MatMul", ["x", "wv"], ["v"]),
               helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
               helper.make_node("MatMul", ["q", "kt"], ["s"]),
               helper.make_node("Constant", [], ["scale"], value_float=math.sqrt(d)),
               helper.make_node("Div", ["s", "scale"], ["ss"]),
               helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
               helper.make_node("MatMul", ["p", "v"], ["y"])],
              {"x": [seq, d]}, {"y": [seq, d]}, {"wq": rand(d, d), "wk": rand(d, d), "wv": rand(d, d)}, opset=13)
    graph, optimised = assert_matches_onnx(m, {"x": rand(seq, d)})
    assert "%ss = div(%s, %scale) : f32[6,6]" in str(graph)
    assert [n.attrs["kind"] for n in optimised.topo_order() if n.op == "fused"] == ["reduction"]


N = helper.make_node


@pytest.mark.parametrize("opset, nodes, inputs, out_shape, initializers", [
    (13, [N("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transA=1, transB=1)],
     {"a": [3, 4], "b": [5, 3]}, [4, 5], {"c": rand(5)}),
    (13, [N("Gemm", ["a", "b"], ["y"])], {"a": [4, 3], "b": [3, 5]}, [4, 5], {}),
    (13, [N("Sub", ["a", "b"], ["d"]), N("Exp", ["d"], ["e"]), N("Tanh", ["e"], ["y"])],
     {"a": [2, 3], "b": [3]}, [2, 3], {}),
    (13, [N("Constant", [], ["two"], value=numpy_helper.from_array(np.float32(2.0))), N("Pow", ["a", "two"], ["p"]),
          N("Mul", ["p", "a"], ["m"]), N("Identity", ["m"], ["y"])], {"a": [2, 3]}, [2, 3], {}),
    (13, [N("Constant", [], ["shape"], value_ints=[0, -1]), N("Reshape", ["a", "shape"], ["y"])],
     {"a": [2, 3, 4]}, [2, 12], {}),
    (13, [N("ReduceSum", ["a", "axes"], ["y"], keepdims=0)], {"a": [2, 3, 4]}, [2, 4],
     {"axes": np.array([1], np.int64)}),
    (13, [N("ReduceSum", ["a"], ["y"])], {"a": [2, 3]}, [1, 1], {}),
    (13, [N("ReduceMean", ["a"], ["y"], axes=[-1])], {"a": [2, 3, 4]}, [2, 3, 1], {}),
    (18, [N("ReduceMean", ["a", "axes"], ["y"])], {"a": [2, 3, 4]}, [1, 3, 4], {"axes": np.array([0], np.int64)}),
    (13, [N("Softmax", ["a"], ["y"], axis=1)], {"a": [2, 3, 4]}, [2, 3, 4], {}),
    (17, [N("LayerNormalization", ["a", "g", "b"], ["y"], epsilon=1e-3)], {"a": [2, 3, 4]}, [2, 3, 4],
     {"g": rand(4), "b": rand(4)}),
    (17, [N("LayerNormalization", ["a", "g"], ["y"], axis=1)], {"a": [2, 3, 4]}, [2, 3, 4], {"g": rand(3, 4)}),
    (20, [N("Gelu", ["a"], ["y"])], {"a": [2, 3]}, [2, 3], {}),
    (20, [N("Gelu", ["a"], ["y"], approximate="tanh")], {"a": [2, 3]}, [2, 3], {}),
])
def test_operator(opset, nodes, inputs, out_shape, initializers):
    m = model(nodes, inputs, {"y": out_shape}, initializers, opset=opset)
    assert_matches_onnx(m, {n: rand(*s) for n, s in inputs.items()})


def test_softmax_before_opset_13_normalises_the_flattened_trailing_axes():
    # onnx's ReferenceEvaluator applies opset 13's semantics here, so numpy is the ground truth
    m = model([N("Softmax", ["a"], ["y"])], {"a": [2, 3, 4]}, {"y": [2, 3, 4]}, opset=11)
    a = rand(2, 3, 4)
    flat = np.exp(a.reshape(2, 12) - a.reshape(2, 12).max(1, keepdims=True))
    want = (flat / flat.sum(1, keepdims=True)).reshape(2, 3, 4)
    np.testing.assert_allclose(evaluate(import_onnx(m), {"a": a})["y"], want, rtol=1e-5, atol=1e-6)


def test_unsupported_operator_names_node_and_lists_the_supported():
    m = model([N("LRN", ["x"], ["y"], name="norm1", size=3)], {"x": [1, 1, 4, 4]}, {"y": [1, 1, 4, 4]})
    with pytest.raises(CompilerError) as e:
        import_onnx(m)
    assert str(e.value) == (f"onnx node 'norm1' (LRN): unsupported operator; supported: "
                            f"{', '.join(SUPPORTED)}")
    assert "MatMul, Max, MaxPool" in str(e.value) and "Conv," in str(e.value)


@pytest.mark.parametrize("nodes, initializers, message", [
    ([N("LayerNormalization", ["a", "g"], ["y", "mean"], name="ln")], {"g": rand(3)},
     "onnx node 'ln' (LayerNormalization): only the first output (Y) is supported, not Mean or InvStdDev"),
    ([N("Reshape", ["a", "a"], ["y"], name="r")], {},
     "onnx node 'r' (Reshape): the shape ('a') must be a constant (an initializer or a Constant node)"),
    ([N("Add", ["a", "i"], ["y"], name="add")], {"i": np.ones(3, np.int64)},
     "onnx node 'add' (Add): operand dtypes differ: f32[2,3], i32[3]"),  # INT64 narrowed to i32
    ([N("Add", ["a", "i"], ["y"], name="add")], {"i": np.full(3, 2**40, np.int64)},
     "onnx node 'add' (Add): 'i' is int64 with values outside the int32 range"),
    ([N("Add", ["a", "s"], ["y"], name="add")], {"s": np.ones(3, np.uint8)},
     "onnx node 'add' (Add): 's' is uint8; supported element types: FLOAT, FLOAT16, INT32"),
    ([N("Add", ["a", "b"], ["y"], name="add")], {"b": rand(4)},
     "onnx node 'add' (Add): shapes f32[2,3] and f32[4] do not broadcast"),
])
def test_import_errors(nodes, initializers, message):
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    with pytest.raises(CompilerError) as e:
        import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert str(e.value) == message


def test_symbolic_dimensions_need_shapes():
    m = model([N("Relu", ["x"], ["y"])], {"x": ["batch", 4]}, {"y": ["batch", 4]})
    with pytest.raises(CompilerError, match=r"^input 'x' has no static shape \(\['batch', 4\]\); give it with "
                                            r"shapes=\{'x': \(\.\.\.\)\}$"):
        import_onnx(m)
    assert str(import_onnx(m, shapes={"x": (3, 4)})["x"].type) == "f32[3,4]"
    with pytest.raises(CompilerError, match=r"^shapes given for z, which are not graph inputs \(those are x\)$"):
        import_onnx(m, shapes={"z": (3, 4)})


def test_import_from_a_file(tmp_path):
    m = model([N("Tanh", ["x"], ["y"])], {"x": [2, 2]}, {"y": [2, 2]})
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    assert str(import_onnx(path)).splitlines()[1:] == ["  %x = parameter() : f32[2,2]", "  %y = tanh(%x) : f32[2,2]",
                                                       "  output y = %y"]


def test_missing_onnx_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(CompilerError, match=r'^importing ONNX models needs the onnx package: pip install -e '
                                            r'"\.\[onnx\]"$'):
        import_onnx("model.onnx")
