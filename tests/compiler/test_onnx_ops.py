"""The ONNX operators added for CNNs and transformers: each small model imported, compiled (the default
pipeline), lowered, run on the functional executor and compared with onnx's ReferenceEvaluator; shape
folding (Shape -> Gather -> Concat -> Reshape, ConstantOfShape) leaves no shape arithmetic in the graph;
BatchNormalization after a convolution is folded into its weights."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from gpusim.compiler import import_onnx, run_pipeline  # noqa: E402
from gpusim.compiler.lower import lower, run_kernels  # noqa: E402

RNG = np.random.default_rng(11)
N = helper.make_node


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def i64(*values) -> np.ndarray:
    return np.array(values, np.int64)


def model(nodes, inputs: dict, outputs: list, initializers: dict | None = None, opset: int = 17):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def compiled(m, feeds: dict, rtol=2e-4, atol=2e-5):
    """The model's graph optimised; its kernels' outputs match onnx's ReferenceEvaluator."""
    want = dict(zip([o.name for o in m.graph.output], ReferenceEvaluator(m).run(None, feeds), strict=True))
    optimised, _ = run_pipeline(import_onnx(m))
    got = run_kernels(optimised, lower(optimised), feeds)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=rtol, atol=atol, err_msg=name)
    return optimised


X4 = {"x": [2, 3, 7, 6]}
CASES = {
    "conv-pad-stride": ([N("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 2, 1], strides=[2, 1])], X4,
                        {"w": rand(4, 3, 3, 2), "b": rand(4)}),
    "conv-dilation": ([N("Conv", ["x", "w"], ["y"], dilations=[2, 2])], X4, {"w": rand(5, 3, 2, 2)}),
    "conv-groups": ([N("Conv", ["x", "w", "b"], ["y"], group=3, pads=[1, 1, 1, 1])], X4,
                    {"w": rand(6, 1, 3, 3), "b": rand(6)}),
    "conv-same-upper": ([N("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])], X4,
                        {"w": rand(2, 3, 3, 3)}),
    "conv1d": ([N("Conv", ["x", "w"], ["y"], pads=[1, 1])], {"x": [1, 2, 9]}, {"w": rand(3, 2, 3)}),
    "maxpool": ([N("MaxPool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 0])], X4, {}),
    "maxpool-ceil": ([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)], X4, {}),
    "avgpool-excl-pad": ([N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], X4, {}),
    "avgpool-incl-pad": ([N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                            count_include_pad=1)], X4, {}),
    "global-avgpool": ([N("GlobalAveragePool", ["x"], ["y"])], X4, {}),
    "batchnorm": ([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)], X4,
                  {"s": rand(3), "b": rand(3), "m": rand(3), "v": np.abs(rand(3)) + 0.5}),
    "sigmoid-erf-sqrt": ([N("Sigmoid", ["x"], ["s"]), N("Erf", ["s"], ["e"]), N("Sqrt", ["e"], ["y"])], X4, {}),
    "neg-abs-clip": ([N("Neg", ["x"], ["n"]), N("Abs", ["n"], ["a"]), N("Clip", ["a", "lo", "hi"], ["y"])], X4,
                     {"lo": np.array(0.2, np.float32), "hi": np.array(0.9, np.float32)}),
    "leaky-elu-selu": ([N("LeakyRelu", ["x"], ["l"], alpha=0.2), N("Elu", ["l"], ["e"]), N("Selu", ["e"], ["y"])],
                       X4, {}),
    "where-cast": ([N("Cast", ["x"], ["c"], to=TensorProto.FLOAT16), N("Cast", ["c"], ["f"], to=TensorProto.FLOAT),
                    N("Where", ["m", "f", "x"], ["y"])], X4, {"m": np.array([1, 0, 1, 1, 0, 0], np.float32)}),
    "concat-split": ([N("Concat", ["x", "x"], ["c"], axis=1), N("Split", ["c"], ["y", "z"], axis=1,
                                                                    split=[2, 4])], X4, {}),
    "slice-steps": ([N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], X4,
                    {"st": i64(5, 1), "en": i64(0, 100), "ax": i64(2, 3), "sp": i64(-2, 2)}),
    "gather": ([N("Gather", ["x", "i"], ["y"], axis=2)], X4, {"i": i64(4, 0, 6)}),
    "squeeze-unsqueeze-flatten": ([N("Unsqueeze", ["x", "a"], ["u"]), N("Squeeze", ["u", "a"], ["s"]),
                                   N("Flatten", ["s"], ["y"], axis=2)], X4, {"a": i64(0)}),
    "expand-tile": ([N("Expand", ["b", "sh"], ["e"]), N("Tile", ["e", "r"], ["y"])], {"b": [3, 1]},
                    {"sh": i64(2, 3, 4), "r": i64(1, 2, 1)}),
    "pad-constant": ([N("Pad", ["x", "p", "v"], ["y"])], X4, {"p": i64(0, 0, 1, 2, 0, 0, 2, 0),
                                                              "v": np.array(0.5, np.float32)}),
    "pad-reflect": ([N("Pad", ["x", "p"], ["y"], mode="reflect")], X4, {"p": i64(0, 0, 2, 1, 0, 0, 1, 2)}),
    "pad-edge": ([N("Pad", ["x", "p"], ["y"], mode="edge")], X4, {"p": i64(0, 0, 2, 1, 0, 0, 1, 2)}),
    "dropout-identity": ([N("Dropout", ["x"], ["y"])], X4, {}),
    "reduce-axes": ([N("ReduceMax", ["x"], ["a"], axes=[0, 2]), N("ReduceMin", ["x"], ["b"], axes=[1], keepdims=0),
                     N("ReduceSum", ["x", "ax"], ["y"])], X4, {"ax": i64(1, 3)}),
    "logsoftmax-axis1": ([N("LogSoftmax", ["x"], ["y"], axis=1)], X4, {}),
    "batched-matmul": ([N("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]), N("MatMul", ["x", "t"], ["y"])], X4, {}),
    "prelu-max-min-sum": ([N("PRelu", ["x", "s"], ["p"]), N("Max", ["p", "x"], ["m"]), N("Min", ["m", "x", "p"], ["n"]),
                           N("Sum", ["n", "x", "m"], ["y"])], X4, {"s": rand(3, 1, 1)}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_operator_compiles_and_matches_onnx(case):
    nodes, inputs, init = CASES[case]
    outputs = [o for n in nodes[-1:] for o in n.output]
    if case == "reduce-axes":
        outputs = ["a", "b", "y"]
    compiled(model(nodes, inputs, outputs, init), {n: rand(*s) for n, s in inputs.items()})


def test_shape_chain_folds_to_a_constant_reshape():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape and ConstantOfShape, as exporters write them:
    folded at import, so only the reshape (a view) and the add remain."""
    nodes = [N("Shape", ["x"], ["shape"]), N("Gather", ["shape", "zero"], ["batch"], axis=0),
             N("Unsqueeze", ["batch", "zero1"], ["b1"]), N("Concat", ["b1", "minus1"], ["target"], axis=0),
             N("Reshape", ["x", "target"], ["flat"]), N("Shape", ["flat"], ["fs"]),
             N("ConstantOfShape", ["fs"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32))),
             N("Add", ["flat", "ones"], ["y"])]
    m = model(nodes, X4, ["y"], {"zero": i64(0)[0], "zero1": i64(0), "minus1": i64(-1)})
    optimised = compiled(m, {"x": rand(*X4["x"])})
    assert sorted(n.op for n in optimised.nodes.values()) == ["add", "constant", "parameter", "reshape"]
    assert optimised["flat"].attrs["shape"] == (2, 126)


def test_batchnorm_after_conv_is_folded_into_its_weights():
    w, b = rand(4, 3, 3, 3), rand(4)
    s, sh, mean, var = rand(4), rand(4), rand(4), np.abs(rand(4)) + 0.5
    m = model([N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
               N("BatchNormalization", ["c", "s", "sh", "mean", "var"], ["y"])], X4, ["y"],
              {"w": w, "b": b, "s": s, "sh": sh, "mean": mean, "var": var})
    graph = import_onnx(m)
    assert not [n for n in graph.nodes.values() if n.name.startswith("y.")]  # no scale and shift nodes
    a = s / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(graph["c.w"].attrs["value"], w * a[:, None, None, None], rtol=1e-6)
    np.testing.assert_allclose(graph["c.b"].attrs["value"], (b - mean) * a + sh, rtol=1e-5, atol=1e-6)
    compiled(m, {"x": rand(*X4["x"])})


def test_conv_lowers_to_one_implicit_gemm_with_the_bias_and_relu_in_its_epilogue():
    m = model([N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["y"])], X4, ["y"],
              {"w": rand(4, 3, 3, 3), "b": rand(4)})
    optimised = compiled(m, {"x": rand(*X4["x"])})
    (kernel,) = lower(optimised)
    assert kernel.template == "conv" and kernel.launch.grid == (3, 1, 2)  # 42 pixels, 4 channels, 2 images
    body = kernel.node.attrs["body"]
    assert [n.op for n in body.topo_order() if n.op != "parameter"] == ["conv", "add", "relu"]


def test_data_dependent_gather_is_refused_with_the_reason():
    m = model([N("Gather", ["x", "i"], ["y"], name="g")], X4, ["y"])
    m.graph.input.append(helper.make_tensor_value_info("i", TensorProto.INT64, [2]))
    with pytest.raises(Exception, match=r"onnx node 'g' \(Gather\): the indices \(data-dependent gathers are not "
                                        r"supported\) \('i'\) must be a constant"):
        import_onnx(m)


def test_pytorch_exported_gelu_imports_and_becomes_one_gelu():
    """GELU as torch.onnx exports it (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5): the simplifier's
    gelu-erf rule makes it one gelu, fused into the preceding MatMul's epilogue."""
    nodes = [N("MatMul", ["x", "w"], ["h"]), N("Div", ["h", "sqrt2"], ["d"]), N("Erf", ["d"], ["e"]),
             N("Add", ["e", "one"], ["a"]), N("Mul", ["h", "a"], ["m"]), N("Mul", ["m", "half"], ["y"])]
    scalars = {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)}
    m = model(nodes, {"x": [8, 16]}, ["y"], {"w": rand(16, 12), **{k: np.array(v) for k, v in scalars.items()}})
    optimised = compiled(m, {"x": rand(8, 16)})
    (fused,) = [n for n in optimised.nodes.values() if n.op == "fused"]
    assert [n.op for n in fused.attrs["body"].nodes.values() if n.op != "parameter"] == ["matmul", "gelu"]
