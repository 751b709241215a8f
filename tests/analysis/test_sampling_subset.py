"""The SM subset (docs/sampling.md, "How it works"): a kernel of few waves sampled by running its first
blocks, loops whole, on k and 2k of the chip's SMs, each SM taking as many blocks as it does in the kernel."""

import pytest

from gpusim.analysis.sampling import simulate_sampled
from gpusim.analysis.sampling.model import on_subsets
from gpusim.analysis.sampling.plan import SUBSET_COST, subset_blocks, subset_plan
from gpusim.analysis.sampling.run import subset_config
from gpusim.config import load_config
from gpusim.errors import GpusimError
from gpusim.stats.simulate import simulate


def test_each_sm_of_a_subset_takes_its_share_of_the_grid_and_one_takes_one_more_where_it_does_not_split():
    # 4,096 blocks on 132 SMs: 31 each, 32 on four of them (the SMs that end the kernel)
    assert subset_blocks(4096, 132, 3) == 3 * 31 + 1
    assert subset_blocks(4096, 132, 6) == 6 * 31 + 1
    # 1,024 blocks: 7 each and 100 SMs with an eighth, so 12 SMs take 84 + 9
    assert subset_blocks(1024, 132, 12) == 84 + 9
    assert subset_blocks(264, 132, 4) == 8  # an even split: no block more


def test_the_subset_plan_takes_the_most_sms_whose_two_runs_fit_the_ceiling():
    per_block, ceiling = 36_568.0, 14_978_252.0  # matmul_tiled at n = 1024 on h200, a tenth of its instructions
    cost = {k: (subset_blocks(4096, 132, k) + subset_blocks(4096, 132, 2 * k)) * per_block * SUBSET_COST
            for k in (3, 4)}
    assert cost[3] <= ceiling < cost[4]
    plan = subset_plan(4096, 132, per_block, ceiling)
    assert plan.kind == "sms" and plan.sms == (3, 6) and plan.subset_blocks == (94, 187) and plan.blocks == 187
    assert plan.cost == (94 + 187) * per_block
    assert subset_plan(4096, 132, per_block, 1e6) is None  # not even 2 and 4 SMs fit
    assert subset_plan(100, 132, per_block, 1e12) is None  # a grid that leaves SMs without a block


def test_the_subset_estimate_is_the_run_on_more_sms_bounded_by_twice_its_move_from_half_as_many():
    est = on_subsets({6: 629_396, 3: 631_485}, spread=0.01)
    assert est.cycles == 629_396 and est.model == "sms"
    assert est.bounds["SM subset"] == 2 * (631_485 - 629_396)
    assert est.bounds["instruction count"] == pytest.approx(6_293.96)
    assert est.confidence == pytest.approx((2 * 2_089 + 6_293.96) / 629_396)
    assert on_subsets({6: 629_396, 3: 629_400}).confidence == 0.01  # never under 1 %
    with pytest.raises(ValueError):
        on_subsets({6: 1})


def test_a_subset_keeps_the_l2_and_dram_and_scales_the_slices_with_the_sms():
    cfg = load_config("h200")
    sub = subset_config(cfg, 6)
    assert sub.chip.sm_count == 6 and sub.l2.slices == 4  # 80 x 6 / 132 = 3.6: the nearest even divisor of the sets
    assert sub.l2.size_bytes == cfg.l2.size_bytes and sub.dram == cfg.dram


SIXTEEN = {"chip.sm_count": 16}  # an a100 of 16 SMs: matmul_tiled at n = 256 is 2 waves of 128 blocks


def test_the_full_run_lies_within_the_subsets_bound():
    params = {"n": 256}
    full = simulate("matmul_tiled", "a100", overrides=SIXTEEN, verify=False, **params)
    r = simulate_sampled("matmul_tiled", "a100", sample="on", subset=True, overrides=SIXTEEN,
                         max_sample_warp_instructions=2_000_000, **params)
    assert r.sampled and r.estimate.model == "sms" and [run.sms for run in r.runs] == [3, 6]
    assert [run.blocks for run in r.runs] == [3 * 16, 6 * 16]
    assert r.estimate.low <= full.cycles <= r.estimate.high
    # the whole kernel's DRAM bytes and L2 hit rate within their bounds (its data fits the L2: read once)
    for key in ("dram_bytes_read", "l2_hit_rate_pct"):
        low, high = r.result.bounds[key]
        assert low <= full.kernel[key] <= high, (key, low, high, full.kernel[key])
    # subset=False keeps the other plans, which find nothing to extrapolate in 2 waves of a 15-step loop
    with pytest.raises(GpusimError, match="nothing to extrapolate"):
        simulate_sampled("matmul_tiled", "a100", sample="on", subset=False, overrides=SIXTEEN,
                         max_sample_warp_instructions=2_000_000, **params)
