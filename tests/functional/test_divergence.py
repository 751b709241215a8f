"""SIMT divergence: values and the exact active-mask sequence, derived by hand."""

import numpy as np
import pytest

from gpusim.errors import DeadlockError, KernelFault

from .kernels import run, streams

F = 0xFFFFFFFF

NESTED = """
.kernel nested
.param .u64 out
.reg .u32 %t, %v, %m
.reg .u64 %rd<3>
.reg .pred %p, %q
    mov.u32 %t, %tid.x            // 0
    and.b32 %m, %t, 1             // 1
    setp.eq.u32 %p, %m, 0         // 2
    @!%p bra ODD                  // 3: odd lanes jump, even lanes fall through
    setp.lt.u32 %q, %t, 16        // 4
    @!%q bra EVEN_HI              // 5: nested split of the even lanes
    mov.u32 %v, 1                 // 6: even, tid < 16
    bra EVEN_END                  // 7
EVEN_HI:
    mov.u32 %v, 2                 // 8: even, tid >= 16
EVEN_END:
    bra END                       // 9
ODD:
    mov.u32 %v, 3                 // 10
END:
    ld.param.u64 %rd0, [out]      // 11: everyone reconverges here
    mul.wide.u32 %rd1, %t, 4      // 12
    add.u64 %rd2, %rd0, %rd1      // 13
    st.global.u32 [%rd2], %v      // 14
    exit                          // 15
"""


def test_nested_if_else_values():
    out, stats = run(NESTED, 1, 32, {"out": np.zeros(32, np.uint32)})
    t = np.arange(32)
    expect = np.where(t % 2 == 1, 3, np.where(t < 16, 1, 2))
    np.testing.assert_array_equal(out["out"], expect)
    assert stats.divergent_branches == 2


def test_nested_if_else_mask_sequence():
    (blk,) = streams(NESTED, 1, 32, {"out": np.zeros(32, np.uint32)})
    w = blk.warps[0]
    even, odd = 0x55555555, 0xAAAAAAAA
    expect = [(0, F), (1, F), (2, F), (3, F),
              (4, even), (5, even),
              (6, 0x00005555), (7, 0x00005555),
              (8, 0x55550000),
              (9, even),
              (10, odd),
              (11, F), (12, F), (13, F), (14, F), (15, F)]
    assert list(zip(w.pcs.tolist(), w.masks.tolist(), strict=True)) == expect
    # the store's per-lane addresses are recorded for the timing model
    addrs = w.addresses[14]
    assert (np.diff(addrs) == 4).all()


def _decision_tree(depth: int) -> str:
    """A kernel whose lanes split on bit 0 of %tid.x, then each half on bit 1, ... `depth` levels deep:
    each leaf stores its path (the lane's low `depth` bits), so the SIMT stack nests `depth` deep."""
    lines = []

    def node(level: int, value: int) -> None:
        if level == depth:
            lines.append(f"    mov.u32 %v, {value};")
            return
        lines.append(f"    and.b32 %m, %t, {1 << level};")
        lines.append("    setp.ne.u32 %p, %m, 0;")
        lines.append(f"    @%p bra SET_{level}_{value};")
        node(level + 1, value)
        lines.append(f"    bra END_{level}_{value};")
        lines.append(f"SET_{level}_{value}:")
        node(level + 1, value | 1 << level)
        lines.append(f"END_{level}_{value}:")

    node(0, 0)
    return "\n".join([".kernel tree", ".param .u64 out", ".reg .u32 %t, %v, %m, %g", ".reg .u64 %rd<3>",
                      ".reg .pred %p", "    mov.u32 %t, %tid.x;", *lines, "    ld.param.u64 %rd0, [out];",
                      "    mad.lo.u32 %g, %ctaid.x, %ntid.x, %t;", "    mul.wide.u32 %rd1, %g, 4;",
                      "    add.u64 %rd2, %rd0, %rd1;", "    st.global.u32 [%rd2], %v;", "    exit;"])


def test_deeply_nested_divergence_in_many_warps():
    # five levels: deeper than the stack's initial room, so its arrays grow; 4 warps diverge together
    out, stats = run(_decision_tree(5), 2, 64, {"out": np.zeros(128, np.uint32)})
    np.testing.assert_array_equal(out["out"], np.arange(128) % 32)
    assert stats.divergent_branches == 4 * (1 + 2 + 4 + 8 + 16)  # every node splits its lanes
    assert stats.simt_efficiency < 0.5


LOOP = """
.kernel loop
.param .u64 out
.reg .u32 %t, %n, %s, %i
.reg .u64 %rd<3>
.reg .pred %p
    mov.u32 %t, %tid.x           // 0
    and.b32 %n, %t, 3            // 1: lane runs n+1 iterations
    mov.u32 %s, 0                // 2
    mov.u32 %i, 0                // 3
LOOP:
    add.u32 %s, %s, %i           // 4
    add.u32 %i, %i, 1            // 5
    setp.le.u32 %p, %i, %n       // 6
    @%p bra LOOP                 // 7
    ld.param.u64 %rd0, [out]     // 8
    mul.wide.u32 %rd1, %t, 4     // 9
    add.u64 %rd2, %rd0, %rd1     // 10
    st.global.u32 [%rd2], %s     // 11
    exit                         // 12
"""


def test_lane_dependent_loop_values_and_masks():
    out, stats = run(LOOP, 1, 64, {"out": np.zeros(64, np.uint32)})
    n = np.arange(64) % 4
    np.testing.assert_array_equal(out["out"], n * (n + 1) // 2)
    (blk,) = streams(LOOP, 1, 32, {"out": np.zeros(32, np.uint32)})
    w = blk.warps[0]
    body = [4, 5, 6, 7]
    expect = [(pc, F) for pc in range(4)]
    for mask in (F, 0xEEEEEEEE, 0xCCCCCCCC, 0x88888888):  # lanes with n >= iteration
        expect += [(pc, mask) for pc in body]
    expect += [(pc, F) for pc in range(8, 13)]
    assert list(zip(w.pcs.tolist(), w.masks.tolist(), strict=True)) == expect
    # the loop narrows one stack entry instead of growing the stack every iteration
    assert stats.divergent_branches == 2 * 3  # two warps, three narrowing splits each


def test_simt_efficiency_of_the_loop():
    _, stats = run(LOOP, 1, 32, {"out": np.zeros(32, np.uint32)})
    # 9 full instructions + 4 body instructions at 32, 24, 16, 8 lanes
    assert stats.warp_instructions == 9 + 16
    assert stats.thread_instructions == 9 * 32 + 4 * (32 + 24 + 16 + 8)
    assert stats.simt_efficiency == pytest.approx((9 * 32 + 4 * 80) / (25 * 32))


EARLY_EXIT = """
.kernel early
.param .u64 out
.param .u32 n
.reg .u32 %t, %n
.reg .u64 %rd<3>
.reg .pred %p
    mov.u32 %t, %tid.x
    ld.param.u32 %n, [n]
    setp.ge.u32 %p, %t, %n
    @%p exit
    ld.param.u64 %rd0, [out]
    mul.wide.u32 %rd1, %t, 4
    add.u64 %rd2, %rd0, %rd1
    st.global.u32 [%rd2], %t
    exit
"""


def test_early_exit_of_some_lanes():
    out, stats = run(EARLY_EXIT, 1, 64, {"out": np.full(64, 7, np.uint32)}, {"n": 37})
    expect = np.where(np.arange(64) < 37, np.arange(64), 7)
    np.testing.assert_array_equal(out["out"], expect)
    # warp 0: 9 instructions at 32 lanes; warp 1: 4 at 32 lanes, then 5 at 5 lanes
    assert stats.thread_instructions == 9 * 32 + 4 * 32 + 5 * 5


BARRIER_UNIFORM = """
.kernel rev
.param .u64 out
.shared .u32 buf[128]
.reg .u32 %t, %a, %v, %r
.reg .u64 %rd<3>
    mov.u32 %t, %tid.x
    shl.b32 %a, %t, 2
    st.shared.u32 [%a+buf], %t
    bar.sync 0
    sub.u32 %r, 127, %t
    shl.b32 %a, %r, 2
    ld.shared.u32 %v, [%a]
    ld.param.u64 %rd0, [out]
    mul.wide.u32 %rd1, %t, 4
    add.u64 %rd2, %rd0, %rd1
    st.global.u32 [%rd2], %v
    exit
"""


def test_barrier_makes_other_warps_writes_visible():
    out, stats = run(BARRIER_UNIFORM, 3, 128, {"out": np.zeros(128, np.uint32)})
    np.testing.assert_array_equal(out["out"], np.arange(127, -1, -1))
    assert stats.barriers == 3 * 4


PARTIAL_BARRIER = """
.kernel partial
.reg .pred %p
    setp.lt.u32 %p, %tid.x, 32
    @!%p exit
    bar.sync 0
    exit
"""


def test_partial_block_barrier_is_a_deadlock():
    with pytest.raises(DeadlockError) as err:
        run(PARTIAL_BARRIER, 2, 64, {})
    msg = str(err.value)
    assert "deadlock: barrier reached by 32 of 64 threads of the block; 32 exited without reaching it" in msg
    assert "kernel partial (test.sasm), pc 2, line 6, block (0,0,0)" in msg


DIVERGENT_BARRIER = """
.kernel divbar
.reg .u32 %m
.reg .pred %p
    and.b32 %m, %tid.x, 1
    setp.eq.u32 %p, %m, 1
    @%p bra SKIP
    bar.sync 0
SKIP:
    exit
"""


def test_barrier_in_divergent_code_is_a_deadlock():
    with pytest.raises(DeadlockError, match=r"bar.sync reached by 16 of 32 threads of a warp"):
        run(DIVERGENT_BARRIER, 1, 32, {})


def test_runaway_loop_hits_the_step_limit():
    src = ".kernel spin\nL:\n    bra L\n"
    with pytest.raises(KernelFault, match=r"step limit exceeded: a warp issued more than 1,000 instructions"):
        run(src, 1, 32, {}, max_steps_per_warp=1000)


OOB = """
.kernel oob
.param .u64 out
.reg .u32 %t
.reg .u64 %rd<3>
    mov.u32 %t, %tid.x
    ld.param.u64 %rd0, [out]
    mul.wide.u32 %rd1, %t, 4
    add.u64 %rd2, %rd0, %rd1
    st.global.u32 [%rd2], %t
    exit
"""


def test_out_of_bounds_store_names_kernel_pc_line_block_thread_address():
    with pytest.raises(KernelFault) as err:
        run(OOB, 1, 64, {"out": np.zeros(40, np.uint32)})
    e = err.value
    assert e.thread == (40, 0, 0) and e.block == (0, 0, 0) and e.pc == 4 and e.line == 10
    msg = str(e)
    assert msg.startswith("out-of-bounds 4-byte global access (outside every allocation) "
                          "[kernel oob (test.sasm), pc 4, line 10, block (0,0,0), thread (40,0,0), address 0x")
    assert msg.endswith("`st.global.u32 [%rd2], %t`")


def test_misaligned_load_is_a_fault():
    src = OOB.replace("mul.wide.u32 %rd1, %t, 4", "mul.wide.u32 %rd1, %t, 2")
    with pytest.raises(KernelFault, match="misaligned 4-byte global access"):
        run(src, 1, 32, {"out": np.zeros(64, np.uint32)})


def test_shared_out_of_bounds():
    src = BARRIER_UNIFORM.replace("sub.u32 %r, 127, %t", "add.u32 %r, 127, %t")
    with pytest.raises(KernelFault, match=r"out-of-bounds 4-byte shared access \(the block has 512 bytes"):
        run(src, 1, 128, {"out": np.zeros(128, np.uint32)})


def test_multi_block_2d_indices():
    src = """
.kernel ids
.param .u64 out
.reg .u32 %x, %y, %w, %i
.reg .u64 %rd<3>
    mov.u32 %x, %tid.x
    mad.lo.u32 %x, %ctaid.x, %ntid.x, %x
    mov.u32 %y, %tid.y
    mad.lo.u32 %y, %ctaid.y, %ntid.y, %y
    mul.lo.u32 %w, %nctaid.x, %ntid.x
    mad.lo.u32 %i, %y, %w, %x
    ld.param.u64 %rd0, [out]
    mul.wide.u32 %rd1, %i, 4
    add.u64 %rd2, %rd0, %rd1
    st.global.u32 [%rd2], %i
    exit
"""
    out, _ = run(src, (3, 2), (8, 4), {"out": np.zeros(24 * 8, np.uint32)})
    np.testing.assert_array_equal(out["out"], np.arange(24 * 8))
