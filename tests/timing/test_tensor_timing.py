"""The tensor core and cp.async in the timing model: an mma holds its sub-partition's tensor core
ceil(M*N*K / FMA per cycle) cycles (A100: 2048 / 256 = 8 for m16n8k16 f16), a cp.async.wait_group waits
(long scoreboard) until the older groups' copies are in shared memory, and a GPU without tensor cores
refuses mma in one line."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.errors import LaunchError
from tests.timing.helpers import time_kernel

MNEM = {"f16": "m16n8k16.row.col.f32.f16.f16.f32", "tf32": "m16n8k8.row.col.f32.tf32.tf32.f32",
        "s8": "m16n8k32.row.col.s32.s8.s8.s32"}


def _mmas(n: int, prec: str = "f16", dependent: bool = False) -> str:
    acc = "s32" if prec == "s8" else "f32"
    lines = []
    for i in range(n):
        d = "%c0, %c1, %c2, %c3" if dependent else f"%d{4 * i}, %d{4 * i + 1}, %d{4 * i + 2}, %d{4 * i + 3}"
        lines.append(f"    mma.sync.aligned.{MNEM[prec]} {{{d}}}, {{%a0, %a1, %a2, %a3}}, {{%b0, %b1}}, "
                     "{%c0, %c1, %c2, %c3}")
    return f""".kernel mmas
.reg .b32 %a<4>, %b<2>
.reg .{acc} %c<4>, %d<{4 * n}>
""" + "\n".join(lines) + "\n"


def test_mma_holds_the_tensor_core_its_fma_count_over_the_rate():
    n = 16
    base = time_kernel(_mmas(n)).cycles
    slower = time_kernel(_mmas(n), overrides={"units.tensor.f16_fma_per_cycle": 128}).cycles
    # 16 independent m16n8k16: issued 8 cycles apart at 256 FMA/clk, 16 apart at 128: 15 gaps of 8 more
    assert slower - base == (n - 1) * 8
    # tf32 (1024 FMA at 128/clk) and s8 (4096 at 512/clk) also take 8 cycles each on the A100
    assert time_kernel(_mmas(n, "tf32")).cycles == base
    assert time_kernel(_mmas(n, "s8")).cycles == base
    t = time_kernel(_mmas(n), overrides={"units.tensor.tf32_fma_per_cycle": 64})  # not f16's figure
    assert t.cycles == base


def test_dependent_mmas_wait_the_tensor_latency():
    n = 8
    chain = time_kernel(_mmas(n, dependent=True)).cycles
    free = time_kernel(_mmas(n)).cycles
    # each mma of the chain reads the C the previous one wrote: 32 cycles apart instead of 8
    assert chain - free == (n - 1) * (32 - 8)


def test_gtx980_refuses_mma_in_one_line():
    with pytest.raises(LaunchError, match=r"gtx980 has no tensor cores .*timing_test\.sasm:4") as exc:
        time_kernel(_mmas(1), "gtx980")
    assert "\n" not in str(exc.value)


CP = """.kernel cpw
.param .u64 src
.shared .align 16 .b32 buf[1024]
.reg .u32 %t, %s
.reg .u64 %a, %off
    mov.u32 %t, %tid.x
    ld.param.u64 %a, [src]
    mul.wide.u32 %off, %t, 16
    add.u64 %a, %a, %off
    shl.b32 %s, %t, 4
    cp.async.cg.shared.global [%s+buf], [%a], 16
    cp.async.commit_group
    cp.async.cg.shared.global [%s+buf+2048], [%a+2048], 16
    cp.async.commit_group
{wait}
    ld.shared.u32 %t, [%s+buf]
    add.u32 %t, %t, 1
"""


def test_cp_async_wait_group_waits_for_the_older_groups_in_long_scoreboard():
    arrays = {"src": np.zeros(2048, np.uint32)}
    none = time_kernel(CP.format(wait=""), block=128, arrays=arrays)
    wait1 = time_kernel(CP.format(wait="    cp.async.wait_group 1"), block=128, arrays=arrays)
    wait0 = time_kernel(CP.format(wait="    cp.async.wait_group 0"), block=128, arrays=arrays)
    lsb, drain = "long_scoreboard", "drain"
    # no register is written by a copy: without a wait nothing waits for it but the warps' end (drain)
    assert none.warp_states[lsb] == 0 and none.warp_states[drain] > 4 * 300
    # waiting for the first group costs about a DRAM round trip, the warps in long scoreboard meanwhile
    assert wait1.warp_states[lsb] > 4 * 300
    assert wait0.warp_states[lsb] >= wait1.warp_states[lsb]
    # the kernel ends when the copies have landed, either way (then the shared load and add: a few cycles)
    assert 0 <= wait1.cycles - none.cycles < 40
