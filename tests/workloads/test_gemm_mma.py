"""The tensor-core GEMMs: the cp.async pipeline's depth (`stages`) hides the copies' latency."""

import pytest

import gpusim
from gpusim.errors import LaunchError


def test_three_stages_beat_one():
    """n = 256 (4 blocks, 8 k tiles each): with one stage every tile's copies are waited for before its mma
    start (a DRAM/L2 round trip per tile, nothing to overlap); with three, two tiles are in flight while
    one is computed."""
    one = gpusim.simulate("gemm_mma", "a100", params={"n": 256, "stages": 1})
    three = gpusim.simulate("gemm_mma", "a100", params={"n": 256, "stages": 3})
    assert one.verified and three.verified
    # 14,335 against 9,690 cycles (14,783 and 11,154 before the copies were spread over both k-steps)
    assert one.cycles > 1.2 * three.cycles, (one.cycles, three.cycles)
    # the difference is time waiting for copies: long scoreboard (cp.async.wait_group)
    lsb = lambda r: r.to_dict()["kernel"]["warp_states"]["long_scoreboard"]  # noqa: E731
    assert lsb(one) > 2 * lsb(three)


def test_gtx980_refuses_the_tensor_core_gemm_for_its_missing_tensor_cores():
    """Refused for the mma (before the 64 KiB of shared memory over its 48 KiB limit): one line."""
    with pytest.raises(LaunchError, match=r"^launch: mma: gtx980 has no tensor cores .*gemm_mma\.sasm:\d+ cannot run"):
        gpusim.simulate("gemm_mma", "gtx980", params={"n": 128, "stages": 2})
