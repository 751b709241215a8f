"""Executor options for sampled simulation: `loop_cap` (every loop of every warp stops after C
iterations), `block_limit` (the first N blocks only) and `block_ids` (chosen blocks only). Instruction
counts derived by hand from the kernels below."""

import numpy as np
import pytest

from gpusim.errors import LaunchError
from gpusim.functional import GlobalMemory, Launch
from gpusim.functional.executor import Executor
from gpusim.isa import assemble

# Each thread counts its loop's iterations into out[ctaid * ntid + tid].
# Per warp: 2 (prologue) + 3 per iteration + 9 (epilogue) warp instructions.
LOOP = """
.kernel loop
.param .u64 out
.param .u32 n
.reg .u32 %i, %n, %t, %b, %w
.reg .u64 %a, %o
.reg .pred %p
    mov.u32 %i, 0                 // 0
    ld.param.u32 %n, [n]          // 1
LOOP:
    add.u32 %i, %i, 1             // 2
    setp.lt.u32 %p, %i, %n        // 3
    @%p bra LOOP                  // 4: backward
    ld.param.u64 %a, [out]        // 5
    mov.u32 %t, %tid.x            // 6
    mov.u32 %b, %ctaid.x          // 7
    mov.u32 %w, %ntid.x           // 8
    mad.lo.u32 %t, %b, %w, %t     // 9
    mul.wide.u32 %o, %t, 4        // 10
    add.u64 %a, %a, %o            // 11
    st.global.u32 [%a], %i        // 12
    exit                          // 13
"""

# A while loop (test at the top, unconditional backward branch) nested in a do-while loop, with a
# barrier in the outer loop: out[t] = inner iterations summed over the outer ones.
# Per warp: 3 + outer iterations * (2 + 5 per inner iteration + 2 (the inner loop's exit test) + 4) + 6.
NESTED = """
.kernel nested
.param .u64 out
.param .u32 m
.param .u32 n
.reg .u32 %i, %j, %s, %m, %n, %t
.reg .u64 %a, %o
.reg .pred %p, %q
    mov.u32 %i, 0                 // 0
    mov.u32 %s, 0                 // 1
    ld.param.u32 %m, [m]          // 2
OUTER:
    mov.u32 %j, 0                 // 3
    ld.param.u32 %n, [n]          // 4
INNER:
    setp.ge.u32 %q, %j, %n        // 5
    @%q bra INNER_DONE            // 6
    add.u32 %j, %j, 1             // 7
    add.u32 %s, %s, 1             // 8
    bra INNER                     // 9: backward, unguarded
INNER_DONE:
    bar.sync 0                    // 10
    add.u32 %i, %i, 1             // 11
    setp.lt.u32 %p, %i, %m        // 12
    @%p bra OUTER                 // 13: backward
    ld.param.u64 %a, [out]        // 14
    mov.u32 %t, %tid.x            // 15
    mul.wide.u32 %o, %t, 4        // 16
    add.u64 %a, %a, %o            // 17
    st.global.u32 [%a], %s        // 18
    exit                          // 19
"""

# Lane t runs (t % 4) + 1 iterations: a loop whose lanes leave at different iterations.
DIVERGENT = """
.kernel divergent
.param .u64 out
.reg .u32 %i, %n, %t
.reg .u64 %a, %o
.reg .pred %p
    mov.u32 %t, %tid.x            // 0
    and.b32 %n, %t, 3             // 1
    add.u32 %n, %n, 1             // 2
    mov.u32 %i, 0                 // 3
LOOP:
    add.u32 %i, %i, 1             // 4
    setp.lt.u32 %p, %i, %n        // 5
    @%p bra LOOP                  // 6
    ld.param.u64 %a, [out]        // 7
    mul.wide.u32 %o, %t, 4        // 8
    add.u64 %a, %a, %o            // 9
    st.global.u32 [%a], %i        // 10
    exit                          // 11
"""


def run(src, grid, block, size, scalars=None, **opts):
    prog = assemble(src, "t.sasm")
    mem = GlobalMemory()
    out = mem.alloc_array(np.zeros(size, np.uint32), "out")
    ex = Executor(prog, Launch.make(grid, block), {"out": out, **(scalars or {})}, mem, **opts)
    stats = ex.run()
    return mem.read(out, np.uint32, size), stats, ex


@pytest.mark.parametrize("cap, iterations", [(None, 10), (0, 1), (1, 2), (3, 4), (9, 10), (50, 10)])
def test_a_cap_of_c_runs_c_plus_one_iterations(cap, iterations):
    out, st, ex = run(LOOP, 2, 64, 128, {"n": 10}, loop_cap=cap)
    assert (out == iterations).all()
    assert st.warp_instructions == 4 * (2 + 3 * iterations + 9)  # 2 blocks of 2 warps
    if cap is not None:
        assert ex.loop_trips == {2: min(cap, 9)}  # header pc 2; 9 backward branches taken uncapped


def test_count_only_cap_counts_iterations_without_cutting():
    out, st, ex = run(LOOP, 1, 32, 32, {"n": 7}, loop_cap=1 << 62)
    assert (out == 7).all() and ex.loop_trips == {2: 6}
    assert st.warp_instructions == 2 + 3 * 7 + 9


@pytest.mark.parametrize("cap, outer, inner", [(None, 3, 5), (0, 1, 1), (1, 2, 2), (2, 3, 3), (4, 3, 5)])
def test_nested_loops_restart_the_inner_count_each_outer_iteration(cap, outer, inner):
    out, st, _ = run(NESTED, 1, 64, 64, {"m": 3, "n": 5}, loop_cap=cap)
    assert (out == outer * inner).all()
    # per outer iteration: 2, then 5 per inner iteration, then the inner loop's exit test (2) when it
    # ends by itself, or nothing when the cap ends it (`bra INNER` falls through to the barrier), then 4
    inner_ends_by_itself = cap is None or cap >= 5
    per_outer = 2 + 5 * inner + (2 if inner_ends_by_itself else 0) + 4
    assert st.warp_instructions == 2 * (3 + outer * per_outer + 6)  # 2 warps
    assert st.barriers == 2 * outer


def test_a_capped_divergent_loop_reconverges_with_every_lane():
    out, st, _ = run(DIVERGENT, 1, 32, 32, loop_cap=1)
    t = np.arange(32)
    np.testing.assert_array_equal(out, np.minimum(t % 4 + 1, 2))
    # 4 + iterations 1 and 2 (all lanes reach the branch twice; lanes with one trip leave at the
    # first) + 5 after the loop, all with every lane active again
    assert st.warp_instructions == 4 + 3 * 2 + 5
    assert st.thread_instructions == 32 * 4 + 3 * (32 + 24) + 32 * 5


def test_a_dict_caps_only_the_loops_it_names():
    # the outer loop (header pc 3) runs whole, the inner one (header pc 5) is cut at 1 backward branch
    out, st, ex = run(NESTED, 1, 64, 64, {"m": 3, "n": 5}, loop_cap={5: 1})
    assert (out == 3 * 2).all()
    assert st.warp_instructions == 2 * (3 + 3 * (2 + 5 * 2 + 4) + 6)
    assert ex.loop_trips == {3: 2, 5: 1}
    _, st_outer, _ = run(NESTED, 1, 64, 64, {"m": 3, "n": 5}, loop_cap={3: 0})
    assert st_outer.warp_instructions == 2 * (3 + 1 * (2 + 5 * 5 + 2 + 4) + 6)


# Block b loops b + 1 times: 4 + 3 per iteration warp instructions per warp.
BY_BLOCK = """
.kernel by_block
.param .u64 out
.reg .u32 %i, %n
.reg .pred %p
    mov.u32 %n, %ctaid.x          // 0
    add.u32 %n, %n, 1             // 1
    mov.u32 %i, 0                 // 2
LOOP:
    add.u32 %i, %i, 1             // 3
    setp.lt.u32 %p, %i, %n        // 4
    @%p bra LOOP                  // 5
    exit                          // 6
"""


def test_loop_cap_mode_counts_each_blocks_warp_instructions():
    _, st, ex = run(BY_BLOCK, 8, 64, 1, block_ids=[5, 0, 7], loop_cap=1 << 62)
    assert ex.block_warp_instructions.tolist() == [2 * (4 + 3 * 6), 2 * (4 + 3 * 1), 2 * (4 + 3 * 8)]
    assert ex.block_warp_instructions.sum() == st.warp_instructions
    _, _, capped = run(BY_BLOCK, 8, 64, 1, block_limit=3, loop_cap=1)
    assert capped.block_warp_instructions.tolist() == [2 * 7, 2 * 10, 2 * 10]  # at most 2 iterations


def test_block_limit_runs_the_first_blocks_and_counts_only_them():
    out, st, _ = run(LOOP, 4, 32, 128, {"n": 3}, block_limit=2)
    assert (out[:64] == 3).all() and (out[64:] == 0).all()
    assert st.blocks == 2 and st.warps == 2 and st.threads == 64
    assert st.warp_instructions == 2 * (2 + 3 * 3 + 9)
    _, st_all, _ = run(LOOP, 4, 32, 128, {"n": 3}, block_limit=99)
    assert st_all.blocks == 4


def test_block_ids_run_those_blocks_with_their_own_ctaid():
    out, st, _ = run(LOOP, 4, 32, 128, {"n": 2}, block_ids=[3, 1], batch_lanes=32)
    ran = out.reshape(4, 32).any(1)
    assert ran.tolist() == [False, True, False, True]
    assert st.blocks == 2 and st.warp_instructions == 2 * (2 + 3 * 2 + 9)


def test_options_off_leave_the_counts_unchanged():
    _, a, _ = run(NESTED, 2, 64, 64, {"m": 2, "n": 3})
    _, b, _ = run(NESTED, 2, 64, 64, {"m": 2, "n": 3}, loop_cap=1 << 62, block_limit=2)
    assert a.warp_instructions == b.warp_instructions and a.thread_instructions == b.thread_instructions


@pytest.mark.parametrize("opts, field", [({"block_limit": 0}, "blocks"), ({"block_ids": [4]}, "blocks"),
                                         ({"block_ids": []}, "blocks"), ({"loop_cap": -1}, "loop_cap"),
                                         ({"loop_cap": {7: 1}}, "loop_cap"), ({"loop_cap": {2: -2}}, "loop_cap"),
                                         ({"block_limit": 1, "block_ids": [0]}, "blocks")])
def test_bad_options_are_launch_errors(opts, field):
    with pytest.raises(LaunchError) as e:
        run(LOOP, 4, 32, 128, {"n": 2}, **opts)
    assert e.value.field == field
