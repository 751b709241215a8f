"""The ptxas model's list scheduler (gpusim/isa/ptxas/schedule.py): loads and SFU operations first, what
must keep its order kept (memory across stores, atomics, barriers, fences and warp-synchronous operations;
anything across a guarded exit; a block's branch last), values unchanged."""

import numpy as np

from gpusim.config import load_config
from gpusim.isa import assemble
from gpusim.isa.ptxas.schedule import Latencies, schedule
from tests.isa.ptxas_helpers import assert_rewrites, assert_same_values, assert_unchanged

H200 = load_config("h200")
HEAD = """.kernel k
.param .u64 a
.param .u64 out
.reg .u32 %t, %u, %v, %w
.reg .u64 %pa, %po, %x
.reg .f32 %f0, %f1, %f2, %f3, %f4
.reg .pred %q
.shared .f32 buf[64]
"""


def sched(prog):
    return schedule(prog, H200)


def test_loads_and_sfu_operations_go_first_their_consumers_last():
    before = HEAD + """
    ld.param.u64 %pa, [a];
    mov.u32 %t, %tid.x;
    ld.global.f32 %f0, [%pa];
    add.f32 %f1, %f0, 1.0;
    ld.global.f32 %f2, [%pa+4];
    add.f32 %f3, %f2, %f1;
    ex2.approx.f32 %f4, %f3;
    mul.lo.u32 %u, %t, 3;
    ld.param.u64 %po, [out];
    mul.wide.u32 %x, %u, 4;
    add.u64 %po, %po, %x;
    st.global.f32 [%po], %f4;
    """
    # (the loads wait 4 cycles for their address, the INT pipe's latency: two independent ones fill them)
    expected = HEAD + """
    ld.param.u64 %pa, [a];
    mov.u32 %t, %tid.x;
    ld.param.u64 %po, [out];
    ld.global.f32 %f0, [%pa];
    ld.global.f32 %f2, [%pa+4];
    mul.lo.u32 %u, %t, 3;
    mul.wide.u32 %x, %u, 4;
    add.u64 %po, %po, %x;
    add.f32 %f1, %f0, 1.0;
    add.f32 %f3, %f2, %f1;
    ex2.approx.f32 %f4, %f3;
    st.global.f32 [%po], %f4;
    """
    out = assert_rewrites(sched, before, expected)
    assert_same_values(assemble(before), out, [np.arange(4, dtype=np.float32), np.zeros(96, np.float32)])


def test_memory_never_crosses_a_store_an_atomic_or_a_fence_but_arithmetic_may_and_nothing_crosses_a_barrier():
    before = HEAD + """
    ld.param.u64 %pa, [a];
    st.global.f32 [%pa], %f0;
    ld.global.f32 %f1, [%pa+4];
    atom.global.add.u32 %u, [%pa+8], 1;
    ld.global.f32 %f2, [%pa+12];
    membar.gl;
    ld.global.f32 %f3, [%pa+16];
    ex2.approx.f32 %f4, %f0;
    st.shared.f32 [buf], %f3;
    bar.sync 0;
    ld.shared.f32 %f0, [buf+4];
    ex2.approx.f32 %f1, %f2;
    """
    # the ex2 (17 cycles, no memory) goes up past the fence, the atomic and the store; the shared load
    # after the barrier stays there
    expected = HEAD + """
    ld.param.u64 %pa, [a];
    ex2.approx.f32 %f4, %f0;
    st.global.f32 [%pa], %f0;
    ld.global.f32 %f1, [%pa+4];
    atom.global.add.u32 %u, [%pa+8], 1;
    ld.global.f32 %f2, [%pa+12];
    membar.gl;
    ld.global.f32 %f3, [%pa+16];
    st.shared.f32 [buf], %f3;
    bar.sync 0;
    ld.shared.f32 %f0, [buf+4];
    ex2.approx.f32 %f1, %f2;
    """
    assert_rewrites(sched, before, expected)


def test_a_global_load_passes_a_shared_store_but_not_a_global_one():
    # a tiled matmul's loop body: the second tile's global load goes up past the first tile's st.shared
    # (global and shared memory never alias), so both loads are in flight at once, as in ptxas's SASS;
    # a shared load stays behind the shared store, a global one behind the global store
    before = HEAD + """
    ld.param.u64 %pa, [a];
    ld.global.f32 %f0, [%pa];
    st.shared.f32 [buf], %f0;
    ld.global.f32 %f1, [%pa+4];
    st.shared.f32 [buf+4], %f1;
    ld.shared.f32 %f2, [buf+8];
    st.global.f32 [%pa+8], %f2;
    ld.global.f32 %f3, [%pa+12];
    st.shared.f32 [buf+12], %f3;
    """
    expected = HEAD + """
    ld.param.u64 %pa, [a];
    ld.global.f32 %f0, [%pa];
    ld.global.f32 %f1, [%pa+4];
    st.shared.f32 [buf], %f0;
    st.shared.f32 [buf+4], %f1;
    ld.shared.f32 %f2, [buf+8];
    st.global.f32 [%pa+8], %f2;
    ld.global.f32 %f3, [%pa+12];
    st.shared.f32 [buf+12], %f3;
    """
    out = assert_rewrites(sched, before, expected)
    assert_same_values(assemble(before), out, [np.arange(4, dtype=np.float32), np.zeros(96, np.float32)])


def test_warp_synchronous_operations_keep_their_order_and_a_guarded_exit_is_a_wall():
    before = HEAD + """
    mov.u32 %t, %tid.x;
    shfl.sync.bfly.b32 %u, %t, 1, 31, -1;
    vote.sync.ballot.b32 %v, %q, -1;
    ld.param.u64 %pa, [a];
    setp.gt.u32 %q, %t, 40;
    @%q exit;
    ld.global.f32 %f0, [%pa];
    add.u32 %w, %u, %v;
    """
    # the parameter load (a constant-bank read, not memory) passes the shuffle; the vote stays behind the
    # shuffle; the global load stays below the exit, though its address is ready long before
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    ld.param.u64 %pa, [a];
    shfl.sync.bfly.b32 %u, %t, 1, 31, -1;
    vote.sync.ballot.b32 %v, %q, -1;
    setp.gt.u32 %q, %t, 40;
    @%q exit;
    ld.global.f32 %f0, [%pa];
    add.u32 %w, %u, %v;
    """
    assert_rewrites(sched, before, expected)
    assert_unchanged(sched, HEAD + """
    mov.u32 %t, %tid.x;
    shfl.sync.bfly.b32 %u, %t, 1, 31, -1;
    ld.shared.f32 %f0, [buf];
    vote.sync.ballot.b32 %v, %q, -1;
    ld.shared.f32 %f1, [buf+4];
    """)


def test_a_block_s_branch_stays_last_and_blocks_are_scheduled_apart():
    before = HEAD + """
    ld.param.u64 %pa, [a];
    mov.u32 %t, %tid.x;
    setp.eq.u32 %q, %t, 0;
    @%q bra L;
    add.u32 %u, %t, 1;
    ld.global.f32 %f0, [%pa];
L:
    add.u32 %v, %t, 2;
    ld.global.f32 %f1, [%pa+4];
    """
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    ld.param.u64 %pa, [a];
    setp.eq.u32 %q, %t, 0;
    @%q bra L;
    ld.global.f32 %f0, [%pa];
    add.u32 %u, %t, 1;
L:
    ld.global.f32 %f1, [%pa+4];
    add.u32 %v, %t, 2;
    """
    assert_rewrites(sched, before, expected)


def test_latencies_come_from_the_config():
    lat = Latencies(H200)
    prog = assemble(HEAD + """
    ld.global.f32 %f0, [%pa];
    ld.shared.f32 %f1, [buf];
    ex2.approx.f32 %f2, %f1;
    sin.approx.f32 %f3, %f1;
    add.u32 %t, %t, 1;
    ld.param.u64 %pa, [a];
    """)
    got = [lat(i) for i in prog.instructions[:6]]
    assert got == [H200.l2.hit_latency_cycles, H200.shared_memory.latency_cycles, H200.units["sfu"].latency_cycles,
                   H200.opcodes["sin"].latency_cycles, H200.units["int"].latency_cycles,
                   H200.units["int"].latency_cycles]


def test_loads_run_ahead_only_as_far_as_the_register_budget_allows():
    n = 48
    regs = ".reg .f32 %acc, " + ", ".join(f"%g{k}" for k in range(n)) + "\n"
    body = "\n".join(f"    ld.shared.f32 %g{k}, [buf+{4 * k}];\n    add.f32 %acc, %acc, %g{k};" for k in range(n))
    prog = assemble(HEAD.replace(".shared .f32 buf[64]", ".shared .f32 buf[64]\n" + regs) + """
    mov.f32 %acc, 0.0;
""" + body + """
    ld.param.u64 %po, [out];
    st.global.f32 [%po], %acc;
    """)
    budget = H200.sm.registers_per_sm // H200.sm.max_threads_per_sm
    assert budget == 32 and prog.regs_per_thread < 8
    out = sched(prog)
    assert out.regs_per_thread <= budget  # 32 values at most, though all 48 loads could go first
    order = [i.opcode for i in out.instructions]
    assert order.index("add") >= 16  # the loads still run well ahead of their adds
    assert_same_values(prog, out, [np.zeros(1, np.float32), np.zeros(1, np.float32)])
