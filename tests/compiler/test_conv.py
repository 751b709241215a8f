"""Convolution as an implicit GEMM (lower/conv.py): the conv operator's type and numpy value, its one
kernel on the matmul template (values against the evaluator on the functional executor, over a grid of
padding, stride, dilation, groups, input dilation and odd sizes), the 1x1 case as the plain batched
matmul's kernel, and the bias / ReLU / residual add fused into its epilogue."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import CompilerError, Graph, GraphError, evaluate, run_pipeline
from gpusim.compiler.lower import lower, run_kernels

from .helpers import random_inputs


def conv_graph(x, w, *, strides=None, dilations=None, pads=None, group=1, input_dilation=None, bias=False,
               relu=False, residual=False) -> Graph:
    r = len(x) - 2
    g = Graph("conv")
    xs, ws = g.parameter("x", x), g.parameter("w", w)
    y = g.emit("conv", (xs, ws), {"strides": tuple(strides or (1,) * r), "dilations": tuple(dilations or (1,) * r),
                                  "pads": tuple(pads or (0,) * 2 * r), "group": group,
                                  "input_dilation": tuple(input_dilation or (1,) * r)}, name="c")
    if bias:
        y = g.add(y, g.parameter("b", (w[0], *[1] * r)), name="biased")
    if residual:
        y = g.add(y, g.parameter("skip", y.shape), name="summed")
    if relu:
        y = g.relu(y, name="y")
    g.output(y, "y")
    return g


def kernels_match_evaluator(g: Graph, params=None):
    optimised, _ = run_pipeline(g)
    kernels = lower(optimised, params)
    inputs = random_inputs(g, seed=3)
    got, want = run_kernels(optimised, kernels, inputs)["y"], evaluate(g, inputs)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    return kernels


def reference_conv(x, w, strides, pads, dilations, group):
    """A direct convolution, one output element at a time (float64)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]))
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    oh = (xp.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for o in range(m):
        chans = slice(o // mg * cg, (o // mg + 1) * cg)
        for i in range(oh):
            for j in range(ow):
                window = xp[:, chans, i * strides[0]:i * strides[0] + dilations[0] * (kh - 1) + 1:dilations[0],
                            j * strides[1]:j * strides[1] + dilations[1] * (kw - 1) + 1:dilations[1]]
                y[:, o, i, j] = (window * w[o]).sum(axis=(1, 2, 3))
    return y


def test_the_evaluator_matches_a_direct_convolution():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 2))
    g = conv_graph(x.shape, w.shape, strides=(2, 1), pads=(1, 0, 2, 1), dilations=(1, 2), group=2)
    got = evaluate(g, {"x": x, "w": w})["y"]
    np.testing.assert_allclose(got, reference_conv(x, w, (2, 1), (1, 0, 2, 1), (1, 2), 2), rtol=1e-5, atol=1e-5)


def test_type_inference():
    g = conv_graph((2, 4, 9, 8), (6, 2, 3, 3), strides=(2, 3), pads=(1, 1, 0, 2), dilations=(2, 1), group=2)
    # (9 + 1 + 0 - 2*2 - 1) // 2 + 1 = 3, (8 + 1 + 2 - 2 - 1) // 3 + 1 = 3
    assert g["c"].shape == (2, 6, 3, 3)
    # a transposed convolution's stuffed input: 3 elements 2 apart span 5
    assert conv_graph((1, 1, 3), (1, 1, 2), input_dilation=(2,), pads=(1, 1))["c"].shape == (1, 1, 6)


@pytest.mark.parametrize("x, w, attrs, message", [
    ((1, 4, 5, 5), (6, 3, 3, 3), {}, "4 input channels and 6 output channels do not match weights f32[6,3,3,3] "
                                     "in 1 group(s)"),
    ((1, 4, 5, 5), (6, 2, 3, 3), {"group": 2, "strides": (1,)}, "strides is a tuple of 2 ints >= 1, not (1,)"),
    ((1, 4, 2, 2), (6, 4, 3, 3), {}, "the window ([3, 3]) does not fit the padded input f32[1,4,2,2]: output [0, 0]"),
    ((4, 5), (6, 4), {}, "conv needs x as N x C x spatial.. and w as M x C/group x kernel.. of the same rank"),
])
def test_type_errors_name_the_field(x, w, attrs, message):
    with pytest.raises(GraphError, match="node %c \\(conv\\): " + message.replace("[", "\\[").replace(
            "(", "\\(").replace(")", "\\)").replace(".", "\\.")):
        conv_graph(x, w, **attrs)


# padding, stride, dilation, groups, input dilation (transposed), odd sizes, 1-D and 3-D
GRID = {
    "pad-stride": ((2, 3, 7, 6), (4, 3, 3, 2), {"pads": (1, 0, 2, 1), "strides": (2, 1)}),
    "dilation": ((1, 3, 9, 7), (5, 3, 2, 3), {"dilations": (2, 3)}),
    "groups": ((2, 6, 5, 5), (9, 2, 3, 3), {"group": 3, "pads": (1, 1, 1, 1)}),
    "depthwise": ((1, 5, 6, 7), (5, 1, 3, 3), {"group": 5, "pads": (1, 1, 1, 1), "strides": (2, 2)}),
    "odd": ((3, 5, 11, 13), (7, 5, 5, 3), {"pads": (2, 1, 2, 1), "strides": (3, 2)}),
    "crop": ((1, 2, 8, 8), (3, 2, 3, 3), {"pads": (-1, 0, 1, -2)}),
    "stuffed": ((1, 3, 4, 5), (2, 3, 3, 3), {"input_dilation": (2, 3), "pads": (2, 1, 3, 2)}),
    "stuffed-groups": ((2, 4, 3, 3), (6, 2, 2, 2), {"input_dilation": (2, 2), "pads": (1, 0, 1, 1), "group": 2}),
    "1d": ((2, 3, 17), (4, 3, 3), {"pads": (1, 1), "strides": (2,)}),
    "3d": ((1, 2, 4, 5, 3), (3, 2, 2, 3, 2), {"pads": (1, 0, 1, 0, 1, 0)}),
    "pointwise-strided": ((1, 8, 7, 7), (16, 8, 1, 1), {"strides": (2, 2)}),
}


@pytest.mark.parametrize("case", GRID)
def test_one_kernel_matches_the_evaluator(case):
    x, w, attrs = GRID[case]
    (kernel,) = kernels_match_evaluator(conv_graph(x, w, **attrs))
    assert kernel.template == "conv"


@pytest.mark.parametrize("params", [{"BM": 32, "BN": 32, "BK": 8, "TM": 2, "TN": 2},
                                    {"BM": 32, "BN": 16, "BK": 32, "TM": 4, "TN": 1}])
def test_other_tiles_partial_k_panels_and_partial_tiles(params):
    # K = 3 x 3 x 3 = 27: a partial last K panel; 5 x 7 = 35 pixels and 6 channels: partial tiles
    g = conv_graph((2, 3, 5, 7), (6, 3, 3, 3), pads=(1, 1, 1, 1))
    (kernel,) = kernels_match_evaluator(g, {"c": params})
    assert kernel.params["BK"] == params["BK"]


def test_a_1x1_convolution_is_the_batched_matmul_kernel():
    """W (M x C) @ X_n (C x H W) per image: the kernel of the plain batched matmul."""
    n, c, m, h, w = 2, 16, 32, 6, 6
    kernel = kernels_match_evaluator(conv_graph((n, c, h, w), (m, c, 1, 1)))[0]
    g = Graph("mm")
    ws = g.parameter("w", (m, c))
    y = g.matmul(ws, g.parameter("x", (n, c, h * w)), name="c")
    g.output(y, "y")
    (plain,) = lower(g)
    assert kernel.launch == plain.launch == plain.launch.make((3, 2, n), (16, 16))  # 36 pixels, 32 channels
    assert kernel.work.instructions == plain.work.instructions
    assert len(kernel.program) == len(plain.program)
    assert "div.u32" not in kernel.source and "rem.u32" not in kernel.source  # no window arithmetic


def test_bias_relu_and_residual_add_fuse_into_the_epilogue():
    g = conv_graph((2, 4, 6, 5), (8, 4, 3, 3), pads=(1, 1, 1, 1), bias=True, residual=True, relu=True)
    (kernel,) = kernels_match_evaluator(g)
    body = kernel.node.attrs["body"]
    assert [n.op for n in body.topo_order() if n.op != "parameter"] == ["conv", "add", "add", "relu"]
    assert sorted(kernel.args.values()) == ["b", "skip", "w", "x", "y"]  # one kernel reads all, writes y


def test_grouped_epilogue_operands_follow_the_group():
    # a per-channel bias and a per-image scale with 3 groups: each block moves to its image's and group's
    g = Graph("conv")
    x, w = g.parameter("x", (2, 6, 5, 5)), g.parameter("w", (9, 2, 3, 3))
    c = g.emit("conv", (x, w), {"strides": (1, 1), "dilations": (1, 1), "pads": (1, 1, 1, 1), "group": 3,
                                "input_dilation": (1, 1)}, name="c")
    y = g.mul(g.add(c, g.parameter("b", (9, 1, 1))), g.parameter("s", (2, 1, 1, 1)), name="y")
    g.output(y, "y")
    (kernel,) = kernels_match_evaluator(g)
    assert kernel.launch.grid[2] == 6  # 2 images x 3 groups


def test_the_windows_are_read_through_shared_memory_only():
    g, _ = run_pipeline(conv_graph((1, 3, 5, 5), (4, 3, 3, 3)))
    with pytest.raises(CompilerError, match=r"node %c: a convolution reads its windows through shared memory "
                                            r"\(use_shared must be true\)"):
        lower(g, {"c": {"use_shared": False}})


def test_an_operand_broadcasting_over_some_spatial_axes_is_refused():
    g = Graph("conv")
    x, w = g.parameter("x", (1, 2, 4, 4)), g.parameter("w", (3, 2, 1, 1))
    c = g.emit("conv", (x, w), {"strides": (1, 1), "dilations": (1, 1), "pads": (0, 0, 0, 0), "group": 1,
                                "input_dilation": (1, 1)}, name="c")
    g.output(g.add(c, g.parameter("row", (4, 1)), name="y"), "y")
    optimised, _ = run_pipeline(g)
    with pytest.raises(CompilerError, match=r"node %y: operand %row: f32\[4,1\] broadcasts over some of the "
                                            r"output's spatial axes \[4, 4\] but not all"):
        lower(optimised)


def test_the_input_also_read_by_the_epilogue():
    """y = relu(conv(x) + x): x is the windows' source and, in another shape, the residual."""
    g = Graph("conv")
    x, w = g.parameter("x", (2, 4, 5, 5)), g.parameter("w", (4, 4, 3, 3))
    c = g.emit("conv", (x, w), {"strides": (1, 1), "dilations": (1, 1), "pads": (1, 1, 1, 1), "group": 1,
                                "input_dilation": (1, 1)}, name="c")
    g.output(g.relu(g.add(c, x), name="y"), "y")
    (kernel,) = kernels_match_evaluator(g)
    assert sorted(kernel.args) == ["in0", "in1", "in2", "out"] and list(kernel.args.values()).count("x") == 2
