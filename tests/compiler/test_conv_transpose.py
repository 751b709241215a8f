"""ONNX ConvTranspose: imported as a convolution over the zero-stuffed input (input_dilation = strides)
with the weights' channels swapped and taps flipped; the numpy evaluator against onnx's
ReferenceEvaluator over strides, pads, output_padding, dilations, output_shape and auto_pad; groups
against the groups computed apart; one implicit-GEMM kernel that matches."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx.reference import ReferenceEvaluator  # noqa: E402

from gpusim.compiler import evaluate, import_onnx  # noqa: E402
from gpusim.compiler.lower import lower  # noqa: E402

from .test_onnx_ops import N, compiled, model, rand  # noqa: E402

X = {"x": [2, 3, 4, 5]}
CASES = {
    "plain": ({}, (3, 2, 3, 3)),
    "strides": ({"strides": [2, 3]}, (3, 2, 3, 2)),
    "pads": ({"strides": [2, 2], "pads": [1, 0, 2, 1]}, (3, 4, 3, 3)),
    "output-padding": ({"strides": [3, 2], "output_padding": [2, 1]}, (3, 2, 3, 3)),
    "dilations": ({"dilations": [2, 1], "strides": [1, 2]}, (3, 2, 2, 3)),
    "output-shape": ({"strides": [2, 2], "output_shape": [10, 12]}, (3, 2, 3, 3)),
    "same-upper": ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (3, 2, 3, 3)),
    "same-lower": ({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, (3, 2, 4, 4)),
    "big-pads": ({"pads": [3, 2, 2, 3], "strides": [2, 2]}, (3, 2, 3, 3)),  # cropped below the kernel's reach
}


@pytest.mark.parametrize("case", CASES)
def test_the_evaluator_matches_onnx_reference(case):
    attrs, w = CASES[case]
    m = model([N("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], X, ["y"], {"w": rand(*w), "b": rand(w[1])})
    x = rand(*X["x"])
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    got = evaluate(import_onnx(m), {"x": x})["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_1d_and_3d():
    for shape, w in (([1, 2, 7], (2, 3, 3)), ([1, 2, 3, 4, 2], (2, 1, 2, 3, 2))):
        r = len(shape) - 2
        m = model([N("ConvTranspose", ["x", "w"], ["y"], strides=[2] * r, pads=[1] * r + [0] * r)], {"x": shape},
                  ["y"], {"w": rand(*w)})
        compiled(m, {"x": rand(*shape)})


def test_groups_equal_the_groups_computed_apart():
    """(onnx's reference evaluator does not take groups with these weights: the two halves run apart.)"""
    x, w, b = rand(2, 4, 3, 4), rand(4, 3, 3, 2), rand(6)
    attrs = {"strides": [2, 1], "pads": [1, 0, 0, 1], "output_padding": [1, 0]}
    m = model([N("ConvTranspose", ["x", "w", "b"], ["y"], group=2, **attrs)], {"x": list(x.shape)}, ["y"],
              {"w": w, "b": b})
    halves = []
    for g in range(2):
        half = model([N("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)], {"x": [2, 2, 3, 4]}, ["y"],
                     {"w": w[2 * g:2 * g + 2], "b": b[3 * g:3 * g + 3]})
        halves.append(ReferenceEvaluator(half).run(None, {"x": x[:, 2 * g:2 * g + 2]})[0])
    np.testing.assert_allclose(evaluate(import_onnx(m), {"x": x})["y"], np.concatenate(halves, 1), rtol=1e-5,
                               atol=1e-5)


def test_lowers_to_one_conv_kernel_with_the_bias_fused_and_the_weights_flipped_once():
    m = model([N("ConvTranspose", ["x", "w", "b"], ["c"], strides=[2, 2], pads=[1, 1, 0, 0]),
               N("Relu", ["c"], ["y"])], X, ["y"], {"w": rand(3, 4, 3, 3), "b": rand(4)})
    optimised = compiled(m, {"x": rand(*X["x"])})
    (kernel,) = lower(optimised)  # the flipped weights are a constant (folded), bias and ReLU in the epilogue
    assert kernel.template == "conv"
    conv = next(n for n in kernel.node.attrs["body"].nodes.values() if n.op == "conv")
    assert conv.attrs["input_dilation"] == (2, 2) and conv.attrs["pads"] == (1, 1, 2, 2)


def test_weights_given_as_an_input_are_flipped_by_a_gather_kernel():
    m = model([N("ConvTranspose", ["x", "w"], ["y"], strides=[1, 2])], {"x": [1, 3, 4, 4], "w": [3, 2, 2, 3]}, ["y"])
    optimised = compiled(m, {"x": rand(1, 3, 4, 4), "w": rand(3, 2, 2, 3)})
    assert [k.template for k in lower(optimised)] == ["gather", "conv"]
