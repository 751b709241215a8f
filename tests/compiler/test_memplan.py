"""Memory planning: liveness over the kernel order, in-place element-wise kernels, greedy placement;
figures derived by hand for the unfused two-layer perceptron, and the planned offsets used on the
functional executor."""

import numpy as np
import pytest

from gpusim.compiler import evaluate, lower, models, run_kernels, run_pipeline
from gpusim.compiler.memplan import liveness, plan_memory

H, O = 32 * 128 * 4, 32 * 10 * 4  # 16,384 B hidden activations, 1,280 B outputs


def test_mlp2_by_hand():
    # kernels: 0 matmul -> %0 (H), 1 add b1 -> %1 (H), 2 relu -> %2 (H), 3 matmul -> %3 (O), 4 add b2 -> %4 (O)
    g = models.mlp2(32, 64, 128, 10)
    kernels = lower(g)
    assert liveness(g, kernels) == {"0": (0, 1), "1": (1, 2), "2": (2, 3), "3": (3, 4), "4": (4, 5)}
    # one allocation each: 3 H + 2 O (1,280 rounds to 1,280: a multiple of 256)
    plain = plan_memory(g, kernels, in_place=False)
    assert plain.unplanned_bytes == 3 * H + 2 * O == 51_712
    # without in-place: %0 and %2 share (their lives do not meet), %1 sits above them; %3 (alive with %2 at
    # kernel 3) goes above, %4 (alive with %3 only) back to 0
    assert plain.offsets == {"0": 0, "2": 0, "1": H, "3": H, "4": 0} and plain.size == 2 * H == 32_768
    # in place: add and relu overwrite their input (same shape, last reader), so do the bias add of the output:
    # two buffers, alive together at kernel 3
    planned = plan_memory(g, kernels)
    assert planned.in_place == (("0", "1"), ("1", "2"), ("3", "4"))
    assert planned.offsets == {"0": 0, "1": 0, "2": 0, "3": H, "4": H}
    assert planned.size == planned.live_peak_bytes == H + O == 17_664


def _no_overlap(plan):
    for a in plan.buffers:
        for b in plan.buffers:
            if a is not b and a.first <= b.last and b.first <= a.last:
                assert a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset


@pytest.mark.parametrize("fused", [False, True])
def test_planning_lowers_the_transformer_blocks_peak_and_values_still_verify(fused):
    g = models.transformer(32, 64, 4, 128)
    if fused:
        g = run_pipeline(g)[0]
    kernels = lower(g)
    plan = plan_memory(g, kernels)
    _no_overlap(plan)
    assert plan.live_peak_bytes <= plan.size < plan.unplanned_bytes / 3
    rng = np.random.default_rng(5)
    inputs = {p.name: (0.3 * rng.standard_normal(p.shape)).astype(np.float32) for p in g.parameters()}
    with_plan = run_kernels(g, kernels, inputs, plan=plan)["y"]
    np.testing.assert_array_equal(with_plan, run_kernels(g, kernels, inputs)["y"])
    np.testing.assert_allclose(with_plan, evaluate(g, inputs)["y"], rtol=1e-4, atol=1e-4)
