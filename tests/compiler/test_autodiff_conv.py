"""The conv gradient rule's backward graph compiled and lowered: its kernels (two implicit-GEMM
convolutions per forward conv, the weights' flip, the transposes) run on the functional executor and
equal the numpy evaluator, over the finite-difference grid of test_autodiff.py."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.compiler import Graph, evaluate, run_pipeline
from gpusim.compiler.autodiff import grad
from gpusim.compiler.lower import lower, run_kernels

from .helpers import random_inputs
from .test_autodiff import CONV_GRID, conv_attrs


@pytest.mark.parametrize("case", CONV_GRID)
def test_backward_kernels_match_the_evaluator(case):
    x, w, attrs = CONV_GRID[case]
    g = Graph("conv")
    y = g.emit("conv", (g.parameter("x", x), g.parameter("w", w)), conv_attrs(len(x) - 2, **attrs))
    g.output(g.reduce_sum(g.mul(y, g.parameter("dy", y.shape))), "loss")  # dy: the adjoint reaching y
    backward = grad(g, "loss", ["x", "w"], keep_outputs=False)
    optimised, _ = run_pipeline(backward)
    kernels = lower(optimised)
    # the forward conv, dx and dw: each one implicit-GEMM kernel
    assert [k.template for k in kernels].count("conv") == 3
    inputs = random_inputs(g, seed=5)
    got, want = run_kernels(optimised, kernels, inputs), evaluate(backward, inputs)
    for name in ("grad_x", "grad_w"):
        assert got[name].shape == want[name].shape
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)
