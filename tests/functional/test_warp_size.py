"""The config's sm.warp_size is the warp the executor runs: warps per block, lanes per warp, %laneid,
%warpid, WARP_SZ, shuffles, votes and the streams' shapes follow it, and results still verify."""

from __future__ import annotations

import numpy as np
import pytest

import gpusim
from gpusim.errors import KernelFault
from gpusim.functional import GlobalMemory, Launch
from gpusim.functional.executor import Executor
from gpusim.isa import assemble

WARP_SIZES = (8, 16, 32, 64)


def config(ws: int, base: str = "a100"):
    """`base` with `ws`-lane warps (and what must change with it: warp slots, unit widths)."""
    cfg = gpusim.load_config(base)
    warps = cfg.sm.max_threads_per_sm // ws // cfg.sm.subpartitions * cfg.sm.subpartitions
    ov = {"sm.warp_size": ws, "sm.max_warps_per_sm": warps, "sm.max_threads_per_sm": warps * ws}
    if warps * ws < cfg.sm.max_threads_per_block:
        ov.update({"sm.max_threads_per_block": warps * ws, "sm.max_block_dims": [warps * ws] * 2 + [64]})
    ov.update({f"units.{u}.lanes_per_subpartition": ws for u, spec in cfg.units.items()
               if spec.lanes_per_subpartition > ws})
    return gpusim.load_config(base, overrides=ov)


@pytest.mark.parametrize("ws", WARP_SIZES)
@pytest.mark.parametrize(("workload", "params"), [("saxpy", {"n": 3000}), ("divergence", {"n": 1024, "k": 3}),
                                                  ("matmul_tiled", {"n": 40}), ("reduce_sum", {"n": 3000})])
def test_workloads_verify_and_launch_warps_of_the_configs_width(ws, workload, params):
    run = gpusim.run_workload(workload, config(ws), **params)
    run.check()
    stats = run.result.stats
    assert stats.warp_size == ws
    assert stats.warps == run.launch.num_blocks * -(-run.launch.threads_per_block // ws)
    assert 0 < stats.simt_efficiency <= 1


def test_without_a_config_warps_are_32_wide():
    run = gpusim.run_workload("saxpy", None, n=1000)
    assert run.result.stats.warp_size == 32 and run.result.stats.warps == 4 * 8


@pytest.mark.parametrize("ws", WARP_SIZES)
def test_the_timing_model_runs_other_widths_and_the_values_verify(ws):
    r = gpusim.simulate("saxpy", config(ws), n=4096)
    assert r.verified and r.cycles > 0
    assert r.run.result.stats.warps == 4096 // ws
    # the timing model issues the executor's warps, each warp_size lanes wide
    assert r.kernel["warp_instructions"] == r.run.result.stats.warp_instructions
    assert r.run.result.stats.thread_instructions == r.run.result.stats.warp_instructions * ws


def test_the_cpu_designs_warps_are_8_lanes():
    cfg = gpusim.load_config("cpu_8core")
    run = gpusim.run_workload("saxpy", cfg, n=1000, block=16)
    run.check()
    assert run.result.stats.warp_size == 8 and run.result.stats.warps == 63 * 2


# lanes, warps, shuffles and votes, written for any warp size with WARP_SZ
PORTABLE = """
.kernel lanes
.param .u64 out
.reg .u32 %r<8>
.reg .u64 %rd<3>
.reg .f32 %f<3>
.reg .pred %p<2>
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [out];
    mul.wide.u32 %rd1, %r0, 32;
    add.u64 %rd2, %rd0, %rd1;
    st.global.u32 [%rd2], %laneid;
    st.global.u32 [%rd2+4], %warpid;
    st.global.u32 [%rd2+8], WARP_SZ;
    // sum over the warp: shfl.down at 32, 16, ..., 1, each only where the source lane exists
    cvt.rn.f32.u32 %f0, %r0;
    mov.u32 %r1, 32;
SUM:
    add.u32 %r2, %laneid, %r1;
    setp.lt.u32 %p0, %r2, WARP_SZ;
    shfl.down.b32 %f1, %f0, %r1;
    @%p0 add.f32 %f0, %f0, %f1;
    shr.u32 %r1, %r1, 1;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra SUM;
    st.global.f32 [%rd2+12], %f0;
    shfl.idx.b32 %f2, %f0, 0;              // lane 0's sum to every lane
    st.global.f32 [%rd2+16], %f2;
    and.b32 %r3, %r0, 1;
    setp.eq.u32 %p0, %r3, 1;
    vote.ballot.b64 %rd1, %p0;
    st.global.u64 [%rd2+24], %rd1;
    exit;
"""


@pytest.mark.parametrize("ws", (1, 8, 16, 24, 32, 64))
def test_lanes_warps_shuffles_and_votes_follow_the_warp_size(ws):
    threads = 128 // ws * ws  # whole warps: a missing lane is inactive, and gives the reader its own value
    prog = assemble(PORTABLE, "lanes.sasm")
    mem = GlobalMemory()
    out = np.zeros(threads * 8, dtype=np.uint32)
    addr = mem.alloc_array(out, "out")
    Executor(prog, Launch.make(1, threads), {"out": addr}, mem, cfg=config(ws) if ws != 1 else _ws1()).run()
    got = mem.read(addr, np.uint32, out.size).reshape(threads, 8)
    tid = np.arange(threads)
    assert (got[:, 0] == tid % ws).all() and (got[:, 1] == tid // ws).all() and (got[:, 2] == ws).all()
    sums = got[:, 3].view(np.float32)
    first = tid[tid % ws == 0]
    warp_sum = np.array([tid[(tid // ws) == w].sum() for w in range(-(-threads // ws))], dtype=np.float32)
    assert (sums[first] == warp_sum).all()
    assert (got[:, 4].view(np.float32) == warp_sum[tid // ws]).all()
    ballot = got[:, 6:8].copy().view(np.uint64).ravel()
    expect = [sum(1 << int(u % ws) for u in tid[tid // ws == t // ws] if u % 2 == 1) for t in tid]
    assert ballot.tolist() == expect


def _ws1():
    cfg = gpusim.load_config("a100")
    ov = {"sm.warp_size": 1, "sm.max_warps_per_sm": 256, "sm.max_threads_per_sm": 256,
          "sm.max_threads_per_block": 256, "sm.max_block_dims": [256, 256, 64]}
    ov.update({f"units.{u}.lanes_per_subpartition": 1 for u in cfg.units})
    return gpusim.load_config("a100", overrides=ov)


def test_a_32_lane_ballot_of_a_64_lane_warp_holds_lanes_0_to_31():
    src = PORTABLE.replace("vote.ballot.b64 %rd1", "vote.ballot.b32 %r4").replace(
        "st.global.u64 [%rd2+24], %rd1", "st.global.u32 [%rd2+24], %r4")
    prog = assemble(src, "lanes.sasm")
    mem = GlobalMemory()
    addr = mem.alloc_array(np.zeros(64 * 8, dtype=np.uint32), "out")
    Executor(prog, Launch.make(1, 64), {"out": addr}, mem, cfg=config(64)).run()
    assert (mem.read(addr, np.uint32, 64 * 8).reshape(64, 8)[:, 6] == 0xAAAAAAAA).all()


SHIPPED = sorted(gpusim.list_workloads())
TENSOR_CORE = ("gemm_mma", "gemm_mma_tf32", "gemm_mma_int8", "gemm_mma_cu")


@pytest.mark.parametrize("ws", WARP_SIZES)
@pytest.mark.parametrize("workload", SHIPPED)
def test_every_shipped_workload_verifies_at_every_width_and_the_modes_agree(ws, workload):
    """Functional mode at each test size, and the timing model at the first, verify at 8-64 lanes, and the
    timing run's execution is the functional one (statistics, output bits). reduce_sum_shfl and softmax
    once shuffled at offsets 16..1 and numbered warps `tid >> 5`: 32-lane kernels, wrong at 8 and 16."""
    cfg = config(ws)
    sizes = gpusim.load_workload(workload).test_sizes
    if workload in TENSOR_CORE and ws != 32:  # mma and ldmatrix spread their fragments over PTX's 32 lanes
        with pytest.raises(KernelFault, match=f"needs 32-lane warps \\(sm.warp_size is {ws}\\)"):
            gpusim.run_workload(workload, cfg, **sizes[0])
        return
    for params in sizes:
        run = gpusim.run_workload(workload, cfg, **params)
        assert run.ok, run.message()
        assert run.result.stats.warp_size == ws
    timed = gpusim.simulate(workload, cfg, **sizes[0])
    assert timed.verified and timed.cycles > 0
    # the timed run executes the kernel as the ptxas model compiles it for cfg: the same kernel, functionally
    first = gpusim.load_workload(workload).for_config(cfg).run(sizes[0], cfg)
    assert timed.run.result.stats == first.result.stats
    assert {k: v.tobytes() for k, v in timed.run.outputs.items()} == {k: v.tobytes() for k, v in first.outputs.items()}


@pytest.mark.parametrize("ws", (1, 24, 40))
@pytest.mark.parametrize(("workload", "params"), [("reduce_sum_shfl", {"n": 5000, "block": 100}),
                                                  ("reduce_sum_shfl", {"n": 3000, "block": 1024}),
                                                  ("softmax", {"rows": 3, "cols": 300, "block": 100})])
def test_the_shuffle_reductions_take_any_width_and_block(ws, workload, params):
    """Widths that are not powers of two, warps of one lane, a block's last warp partial, more warps in a
    block than lanes in a warp (the second stage's strided gather)."""
    cfg = config(ws) if ws != 1 else _ws1()
    if params.get("block", 256) > cfg.sm.max_threads_per_block:
        params = {**params, "block": cfg.sm.max_threads_per_block}
    run = gpusim.run_workload(workload, cfg, **params)
    assert run.ok, run.message()


@pytest.mark.parametrize("ws", (16, 64))
def test_streams_hold_rows_and_masks_of_the_warps_width(ws):
    wl = gpusim.load_workload("saxpy")
    pl = wl.prepare({"n": 1000}, cfg=config(ws))
    blocks = list(gpusim.block_streams(pl.program, pl.launch, pl.args, pl.memory, cfg=config(ws)))
    assert len(blocks[0].warps) == 256 // ws
    w = blocks[-1].warps[232 // ws]  # 1000 = 3 * 256 + 232: the warp where i reaches n
    assert w.masks.dtype == np.uint64 and blocks[0].accesses.rows.shape[1] == ws
    assert int(w.masks[0]) == (1 << ws) - 1  # every lane of the warp exists
    assert int(w.masks[-1]) == (1 << (232 % ws)) - 1  # past `@%p exit`: the lanes with i < n
