"""The tensor-parallel transformer layer on dgx_a100 (NVSwitch) and a100x8_pcie (PCIe through host
memory), and the GEMM cost model under it."""

import pytest

import gpusim
from gpusim.analysis.gemm import gemm_cost, gemm_workload
from gpusim.analysis.sharding import LayerShape, layer_program, sharding_study
from gpusim.config import load_config
from gpusim.errors import GpusimError

NVLINK, PCIE = "dgx_a100", "a100x8_pcie"


@pytest.fixture(scope="module")
def study():
    return sharding_study((NVLINK, PCIE), (1, 2, 4, 8))


def test_gemm_extrapolation_matches_a_full_simulation():
    # gtx980 holds 128 gemm_tiled blocks at once (16 SMs x 8): 192 blocks are 1.5 waves, k = 48 three steps;
    # the model sees only one wave at one and two steps and two waves at one step
    cfg = load_config("gtx980")
    cost = gemm_cost(cfg, 192, 48, 256)
    full = gpusim.simulate(gemm_workload(), cfg, m=192, k=48, n=256).cycles
    assert cost.extrapolated and cost.cycles == pytest.approx(full, rel=0.05)


def test_small_gemm_is_simulated_as_it_is():
    cfg = load_config("gtx980")
    cost = gemm_cost(cfg, 32, 32, 48)
    assert not cost.extrapolated
    assert cost.cycles == gpusim.simulate(gemm_workload(), cfg, m=32, k=32, n=48).cycles


def test_shard_shapes():
    assert LayerShape(2048, 512, 2048).gemms(4, 2048) == [("qkv", 2048, 512, 384), ("out", 2048, 128, 512),
                                                        ("up", 2048, 512, 512), ("down", 2048, 512, 512)]
    with pytest.raises(GpusimError, match="hidden 512 does not split over 3 GPUs"):
        LayerShape().gemms(3, 2048)


def test_layer_program_all_reduces_tokens_x_hidden_twice():
    program, _ = layer_program(load_config(NVLINK), LayerShape(), 2)
    reduces = [op for op in program.ops if op.kind == "all_reduce"]
    assert [op.bytes for op in reduces] == [2048 * 512 * 4] * 2 and reduces[0].gpus == (0, 1)
    assert sum(op.kind == "kernel" for op in program.ops) == 8


def test_compute_splits_and_is_the_same_on_both_nodes(study):
    for n in (1, 2, 4, 8):
        assert study.row(NVLINK, n).compute_seconds == pytest.approx(study.row(PCIE, n).compute_seconds)
    one, eight = study.row(NVLINK, 1).compute_seconds, study.row(NVLINK, 8).compute_seconds
    assert 6 < one / eight < 8  # an eighth of the work, a little less efficiently spread
    assert study.row(NVLINK, 1).communication_seconds == study.row(PCIE, 1).communication_seconds == 0


def test_nvlink_communication_follows_the_ring_formula(study):
    # two all-reduces of 2048 x 512 x 4 = 4 MiB: 2 x 2(N-1)(1 us + S/N / 240 GB/s) on NVSwitch
    s = 2048 * 512 * 4
    for n in (2, 4, 8):
        formula = 2 * 2 * (n - 1) * (1e-6 + s / n / 240e9)
        assert study.row(NVLINK, n).communication_seconds == pytest.approx(formula, rel=0.01)


def test_nvlink_eight_gpus_beat_one(study):
    assert study.row(NVLINK, 8).total_seconds < study.row(NVLINK, 1).total_seconds / 4
    assert study.row(NVLINK, 8).speedup > 4


def test_pcie_communication_outweighs_the_compute_saved(study):
    # from 4 to 8 GPUs over PCIe the all-reduces grow by more than the GEMMs shrink
    four, eight = study.row(PCIE, 4), study.row(PCIE, 8)
    assert eight.communication_seconds - four.communication_seconds > four.compute_seconds - eight.compute_seconds
    assert eight.total_seconds > four.total_seconds
    assert eight.total_seconds > 2.5 * study.row(NVLINK, 8).total_seconds
    assert eight.communication_seconds > eight.compute_seconds


def test_chunks_overlap_communication_with_compute():
    chunked = sharding_study((PCIE,), (2,), chunks=2)
    row = chunked.rows[0]
    assert row.overlap_seconds > 0
    assert row.total_seconds < row.compute_seconds + row.communication_seconds


def test_table_and_dict(study):
    text = study.table()
    assert "dgx_a100" in text and "a100x8_pcie" in text and "speed-up" in text
    d = study.to_dict()
    assert d["shape"] == {"tokens": 2048, "hidden": 512, "ffn_hidden": 2048} and len(d["rows"]) == 8
