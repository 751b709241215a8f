"""Occupancy worked by hand from the CUDA Occupancy Calculator's rules (cuda_occupancy.h).

Notation: W = warps per block = ceil(block / 32); rpw = registers per warp = ceil(regs * 32, 256);
register limit = floor(floor(65536 / 4) / rpw) * 4 // W (registers live in 4 sub-partition banks);
smem alloc = ceil(smem + reserved, unit) with reserved/unit = 1024/128 on cc 8.0 and 0/256 on cc 5.2;
smem limit = carve-out // alloc (carve-out 167936 on cc 8.0, 98304 on cc 5.2);
warp limit = 64 // W; block limit = 32. Active blocks = the minimum; ties go warps, registers,
shared_memory, blocks.
"""

import pytest

from gpusim.analysis import Occupancy, occupancy
from gpusim.config import load_config
from gpusim.errors import LaunchError


@pytest.fixture(scope="module")
def a100():
    return load_config("a100")


@pytest.fixture(scope="module")
def gtx980():
    return load_config("gtx980")


# (block, regs, smem, carveout) -> (active blocks, active warps, limiter)
A100_CASES = [
    # W=8; warps 64//8=8; rpw 1024 -> 16384//1024=16 per bank, 64 warps // 8 = 8; smem 1024 -> 164
    ((256, 32, 0, None), (8, 64, "warps")),
    # W=8; rpw 2048 -> 8 per bank = 32 warps // 8 = 4; smem 16384+1024=17408 -> 167936//17408 = 9
    ((256, 64, 16384, None), (4, 32, "registers")),
    # W=4; no register limit; warps 64//4 = 16; smem 1024 -> 164
    ((128, 0, 0, None), (16, 64, "warps")),
    # W=1; warps 64; rpw 512 -> 32 per bank = 128 warps; block limit 32 -> 32 blocks of 1 warp
    ((32, 16, 0, None), (32, 32, "blocks")),
    # W=2; warps 32; rpw 1024 -> 64 warps // 2 = 32; blocks 32: three-way tie, warps first
    ((64, 32, 0, None), (32, 64, "warps")),
    # W=3; warps 64//3 = 21; registers 64//3 = 21 -> 21 blocks, 63 warps
    ((96, 32, 0, None), (21, 63, "warps")),
    # block 100 is not a multiple of 32: W=ceil(100/32)=4; warps 16; registers 64//4 = 16
    ((100, 32, 0, None), (16, 64, "warps")),
    # block 33: W=2 -> warps 32; blocks 32 (tie, warps first)
    ((33, 0, 0, None), (32, 64, "warps")),
    # rpw = ceil(255*32=8160, 256) = 8192 -> 16384//8192 = 2 per bank = 8 warps // 8 = 1 block
    ((256, 255, 0, None), (1, 8, "registers")),
    # 256 registers per thread > max 255 -> nothing fits
    ((256, 256, 0, None), (0, 0, "registers_per_thread")),
    # W=32; rpw 2048; block needs 65536 <= 65536; 8 per bank = 32 warps // 32 = 1; warps 64//32 = 2
    ((1024, 64, 0, None), (1, 32, "registers")),
    # rpw = ceil(65*32=2080, 256) = 2304; block needs 2304*32 = 73728 > 65536 -> 0
    ((1024, 65, 0, None), (0, 0, "registers")),
    # 1025 threads > max_threads_per_block 1024 -> 0
    ((1025, 32, 0, None), (0, 0, "block_size")),
    # hardware check: W=25, rpw 80*32=2560; 2560*25 = 64000 fits, but rounded up to 28 warps
    # 2560*28 = 71680 > 65536 -> 0
    ((800, 80, 0, None), (0, 0, "registers")),
    # W=24 (a multiple of 4): 2560*24 = 61440 fits; 16384//2560 = 6 per bank = 24 warps // 24 = 1
    ((768, 80, 0, None), (1, 24, "registers")),
    # smem 49152+1024 = 50176 -> 167936//50176 = 3; warps 16; registers 16
    ((128, 32, 49152, None), (3, 12, "shared_memory")),
    # the 1 KB reservation: 5120+1024 = 6144 -> 167936//6144 = 27 (it would be 32 without it)
    ((64, 0, 5120, None), (27, 54, "shared_memory")),
    # the opt-in maximum 166912 + 1024 = 167936 -> exactly 1 block
    ((256, 0, 166912, None), (1, 8, "shared_memory")),
    # one byte more: ceil(167937, 128) = 168064 > 166912 + 1024 -> 0
    ((256, 0, 166913, None), (0, 0, "shared_memory_per_block")),
    # 1000+1024 = 2024 -> rounded to 2048 -> 82 blocks; warps 16
    ((128, 0, 1000, None), (16, 64, "warps")),
    # carve-out 64 KB: 20000+1024 = 21024 -> 21120; 65536//21120 = 3
    ((128, 0, 20000, 65536), (3, 12, "shared_memory")),
    # carve-out 50000 rounds up to the 64 KB carve-out: same as above
    ((128, 0, 20000, 50000), (3, 12, "shared_memory")),
    # carve-out 8 KB cannot hold 21120 bytes: the smallest that can is 32 KB -> 32768//21120 = 1
    ((128, 0, 20000, 8192), (1, 4, "shared_memory")),
    # carve-out 0 with the 1 KB reservation: 8 KB is used -> 8192//1024 = 8; warps 8 (tie)
    ((256, 0, 0, 0), (8, 64, "warps")),
    # W=16; rpw 1280 -> 16384//1280 = 12 per bank = 48 warps // 16 = 3; warps 4
    ((512, 40, 0, None), (3, 48, "registers")),
    # W=6; rpw 1536 -> 10 per bank = 40 warps // 6 = 6; warps 10; smem 9216 -> 18
    ((192, 48, 8192, None), (6, 36, "registers")),
    # a 1-thread block: W=1, warps 64, blocks 32
    ((1, 0, 0, None), (32, 32, "blocks")),
]

GTX980_CASES = [
    # W=8; warps 8; rpw 1024 -> 16 per bank = 64 warps // 8 = 8; no shared memory -> no limit
    ((256, 32, 0, None), (8, 64, "warps")),
    # registers 32 warps // 8 = 4; smem 98304//16384 = 6
    ((256, 64, 16384, None), (4, 32, "registers")),
    # W=4; warps 16
    ((128, 0, 0, None), (16, 64, "warps")),
    # W=1; blocks 32
    ((32, 16, 0, None), (32, 32, "blocks")),
    # W=2; warps 32 = registers 32 = blocks 32 -> warps first
    ((64, 32, 0, None), (32, 64, "warps")),
    # W=3; 64//3 = 21
    ((96, 32, 0, None), (21, 63, "warps")),
    # block 100: W=4 -> 16
    ((100, 32, 0, None), (16, 64, "warps")),
    # rpw 8192 -> 2 per bank = 8 warps // 8 = 1
    ((256, 255, 0, None), (1, 8, "registers")),
    # 256 > 255 registers per thread
    ((256, 256, 0, None), (0, 0, "registers_per_thread")),
    # W=32, rpw 2048, block 65536 registers: 1 block
    ((1024, 64, 0, None), (1, 32, "registers")),
    # rpw 2304 * 32 = 73728 > 65536
    ((1024, 65, 0, None), (0, 0, "registers")),
    # 2048 threads > 1024
    ((2048, 32, 0, None), (0, 0, "block_size")),
    # hardware check: 2560 * ceil4(25)=28 = 71680 > 65536
    ((800, 80, 0, None), (0, 0, "registers")),
    # 2560 * 24 = 61440; 6 per bank = 24 warps // 24 = 1
    ((768, 80, 0, None), (1, 24, "registers")),
    # smem 49152 (the per-block maximum) -> 98304//49152 = 2
    ((128, 32, 49152, None), (2, 8, "shared_memory")),
    # 49153 -> ceil(49153, 256) = 49408 > 49152 -> 0
    ((128, 32, 49153, None), (0, 0, "shared_memory_per_block")),
    # 3000 -> 3072 -> 98304//3072 = 32; warps 32; blocks 32 -> warps first
    ((64, 0, 3000, None), (32, 64, "warps")),
    # 3100 -> 3328 -> 98304//3328 = 29 -> 58 warps
    ((64, 0, 3100, None), (29, 58, "shared_memory")),
    # no reservation on cc 5.2: 5120 -> 98304//5120 = 19
    ((64, 0, 5120, None), (19, 38, "shared_memory")),
    # 12288 -> 8 blocks
    ((128, 0, 12288, None), (8, 32, "shared_memory")),
    # W=16; rpw 1280 -> 12 per bank = 48 // 16 = 3
    ((512, 40, 0, None), (3, 48, "registers")),
    # W=6; rpw 1536 -> 10 per bank = 40 // 6 = 6; warps 10; smem 98304//8192 = 12
    ((192, 48, 8192, None), (6, 36, "registers")),
    # W=9; rpw ceil(37*32=1184, 256) = 1280 -> 12 per bank = 48 // 9 = 5; warps 64//9 = 7
    ((288, 37, 0, None), (5, 45, "registers")),
    # 100 bytes -> 256 -> 384 blocks; warps 8
    ((256, 0, 100, None), (8, 64, "warps")),
    # a 1-thread block
    ((1, 0, 0, None), (32, 32, "blocks")),
]


def _check(cfg, case, expect):
    block, regs, smem, carve = case
    blocks, warps, limiter = expect
    occ = occupancy(cfg, block, regs, smem, carveout_bytes=carve)
    assert (occ.active_blocks_per_sm, occ.active_warps_per_sm, occ.limiter) == (blocks, warps, limiter)
    assert occ.occupancy == pytest.approx(warps / 64)
    assert occ.max_warps_per_sm == 64
    return occ


@pytest.mark.parametrize("case,expect", A100_CASES)
def test_a100(a100, case, expect):
    _check(a100, case, expect)


@pytest.mark.parametrize("case,expect", GTX980_CASES)
def test_gtx980(gtx980, case, expect):
    _check(gtx980, case, expect)


def test_enough_cases():
    assert len(A100_CASES) >= 20 and len(GTX980_CASES) >= 20


def test_details_of_a_register_limited_case(a100):
    occ = occupancy(a100, 256, 64, 16384)
    assert occ.limits == {"warps": 8, "registers": 4, "shared_memory": 9, "blocks": 32}
    assert occ.limiters == ("registers",)
    assert occ.warps_per_block == 8
    assert occ.regs_per_warp == 2048 and occ.regs_per_block == 16384
    assert occ.smem_allocated_per_block == 17408
    assert occ.shared_memory_per_sm_bytes == 167936
    assert occ.occupancy == 0.5
    assert occ.reason == ""


def test_unlimited_resources_are_none(gtx980):
    occ = occupancy(gtx980, 128, 0, 0)
    assert occ.limits["registers"] is None and occ.limits["shared_memory"] is None
    assert occ.regs_per_warp == 0 and occ.smem_allocated_per_block == 0


def test_ties_list_every_limiter(a100):
    occ = occupancy(a100, 64, 32, 0)
    assert occ.limiters == ("warps", "registers", "blocks")


def test_zero_fit_gives_a_reason(a100):
    occ = occupancy(a100, 1025, 32)
    assert occ.active_blocks_per_sm == 0 and occ.occupancy == 0.0
    assert "1025" in occ.reason and "1024" in occ.reason
    occ = occupancy(a100, 256, 0, 200000)
    assert occ.limiter == "shared_memory_per_block" and "166912" in occ.reason


def test_to_dict_is_plain(a100):
    d = occupancy(a100, 256, 64, 16384).to_dict()
    assert d["active_blocks_per_sm"] == 4 and d["limiter"] == "registers"
    assert d["limits"]["shared_memory"] == 9 and d["limiters"] == ["registers"]


def test_result_is_frozen(a100):
    occ = occupancy(a100, 256, 32)
    assert isinstance(occ, Occupancy)
    with pytest.raises(AttributeError):
        occ.active_blocks_per_sm = 3


def test_exported_from_the_package():
    import gpusim.analysis

    assert gpusim.analysis.occupancy is occupancy


@pytest.mark.parametrize("args,field", [((0, 32, 0), "block_size"), ((32, -1, 0), "regs_per_thread"),
                                        ((32, 32, -5), "smem_per_block")])
def test_nonsense_arguments_raise(a100, args, field):
    with pytest.raises(LaunchError) as info:
        occupancy(a100, *args)
    assert info.value.field == field


def test_carveout_beyond_the_largest_raises(a100):
    with pytest.raises(LaunchError, match="carveout_bytes"):
        occupancy(a100, 128, 0, 0, carveout_bytes=200000)
