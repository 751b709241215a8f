"""The functional executor's compiled lane loops (gpusim.functional.kernels): the same results as the numpy
passes they replace, as plain Python and compiled, and a bad address still a fault naming its lane."""

from __future__ import annotations

import numpy as np
import pytest

import gpusim
from gpusim.errors import KernelFault
from gpusim.functional import kernels, ptx_ops
from gpusim.stats.simulate import timed_execute
from tests.functional.test_divergence import BARRIER_UNIFORM


@pytest.mark.parametrize("fn", [kernels._load_shared_lanes, kernels.load_shared_lanes], ids=["plain", "compiled"])
def test_load_shared_lanes_records_checks_and_gathers(fn):
    # 8 lanes, two blocks of 4 lanes whose shared regions start at bytes 0 and 64 of the batch's 128
    smem = np.arange(32, dtype=np.float32) * 10
    lane_smem = np.array([0, 0, 0, 0, 64, 64, 64, 64], np.int64)
    base = np.array([0, 4, 8, 60, 0, 4, 8, 60], np.uint32)
    row, dst = np.full(8, -1, np.int64), np.zeros(8, np.float32)
    assert fn(base, np.int64(0), row, lane_smem, 2, 64, 4, smem, dst)
    assert row.tolist() == [0, 4, 8, 60, 0, 4, 8, 60]  # (the addresses the timing model sees: the window's)
    assert dst.tolist() == [0, 10, 20, 150, 160, 170, 180, 310]
    # an offset, and a 32-bit register widened unsigned (as numpy's int64 sum widens it)
    assert fn(base[:4], np.int64(-4), row[:4], lane_smem[:4], 2, 64, 4, smem, dst[:4]) is False  # (0 - 4 < 0)
    assert row[:4].tolist() == [-4, 0, 4, 56]
    dst[:] = 7
    for bad in ([0, 4, 6, 8], [0, 4, 8, 64]):  # misaligned; past the window's last element
        assert fn(np.array(bad, np.uint32), np.int64(0), row[:4], lane_smem[:4], 2, 64, 4, smem, dst[:4]) is False
        assert (dst == 7).all()  # (nothing gathered)
    assert not fn(np.array([2**32 - 4], np.uint32), np.int64(0), row[:1], lane_smem[:1], 2, 64, 4, smem, dst[:1])
    assert row[0] == 2**32 - 4  # (unsigned: far above the window, not -4)


def _timed(src, grid, block, n, monkeypatch=None):
    prog = gpusim.assemble(src, "t.sasm")
    cfg = gpusim.load_config("a100", overrides={"chip.sm_count": 2})
    mem = gpusim.GlobalMemory()
    out = mem.alloc_array(np.zeros(n, np.uint32), "out")
    t = timed_execute(prog, gpusim.Launch.make(grid, block), {"out": out}, mem, cfg=cfg)
    return mem.read(out, np.uint32, n), t


def test_shared_loads_compiled_or_not_give_the_same_values_and_cycles(monkeypatch):
    vals, t = _timed(BARRIER_UNIFORM, 6, 128, 128)
    np.testing.assert_array_equal(vals, np.arange(128)[::-1])  # (every block writes the same reversal)
    calls = []
    original = kernels.load_shared_lanes
    monkeypatch.setattr(ptx_ops, "load_shared_lanes", lambda *a: calls.append(1) or original(*a))
    vals2, t2 = _timed(BARRIER_UNIFORM, 6, 128, 128)
    assert calls  # (the compiled pass ran)
    monkeypatch.setattr(ptx_ops.PtxOps, "_shared_load", lambda *a: None)  # the numpy passes instead
    vals3, t3 = _timed(BARRIER_UNIFORM, 6, 128, 128)
    np.testing.assert_array_equal(vals2, vals3)
    assert t.timing.cycles == t2.timing.cycles == t3.timing.cycles
    banks = [[(c.shared_requests, c.shared_wavefronts) for c in x.timing.sms] for x in (t2, t3)]
    assert banks[0] == banks[1] and sum(r for r, _ in banks[0]) == 6 * 4 * 2  # (the addresses the banks saw)


def test_shared_load_out_of_its_window_is_a_fault_naming_the_lane_in_a_timed_run():
    src = BARRIER_UNIFORM.replace("sub.u32 %r, 127, %t", "add.u32 %r, 127, %t")
    with pytest.raises(KernelFault, match=r"out-of-bounds 4-byte shared access \(the block has 512 bytes") as err:
        _timed(src, 1, 128, 128)
    assert err.value.thread == (1, 0, 0)  # (thread 0 reads word 127, the last; thread 1 the first past it)


HALVES = """
.kernel halves
.param .u64 out
.shared .f16 buf[64]
.reg .u32 %t, %a, %r
.reg .f16 %h
.reg .f32 %f
.reg .u64 %rd<3>
    mov.u32 %t, %tid.x
    cvt.rn.f16.u32 %h, %t
    shl.b32 %a, %t, 1
    st.shared.f16 [%a+buf], %h
    bar.sync 0
    sub.u32 %r, 63, %t
    shl.b32 %a, %r, 1
    ld.shared.f16 %h, [%a]
    cvt.f32.f16 %f, %h
    cvt.rzi.u32.f32 %r, %f
    ld.param.u64 %rd0, [out]
    mul.wide.u32 %rd1, %t, 4
    add.u64 %rd2, %rd0, %rd1
    st.global.u32 [%rd2], %r
    exit
"""


def test_a_half_precision_shared_load_keeps_numpys_passes_in_a_timed_run(monkeypatch):
    calls = []
    original = kernels.load_shared_lanes
    monkeypatch.setattr(ptx_ops, "load_shared_lanes", lambda *a: calls.append(1) or original(*a))
    vals, _ = _timed(HALVES, 2, 64, 64)
    np.testing.assert_array_equal(vals, np.arange(64)[::-1])
    assert calls == []  # (f16: the compiled loop is for integer and f32/f64 elements only)
