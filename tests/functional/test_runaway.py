"""The runaway-loop guard at default limits decides by evidence (gpusim.functional.runaway, docs/robustness.md):
a kernel whose warps run far past the old fixed count (2^17 instructions) runs to its end and verifies; a
loop with no way out, or a block back in a state it was in, is stopped within seconds with one line
naming the kernel, pc and line, in functional and in timing mode."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

import gpusim
from gpusim.errors import KernelFault
from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.functional.runaway import trapped_pcs
from gpusim.isa import assemble
from gpusim.stats.simulate import timed_execute

from .kernels import run
from .test_diagnoses import SPIN  # (mov; L: add 0; bra L)

OLD_LIMIT = 1 << 17  # the fixed per-warp count the guard used to fault at

# Each thread t correlates a 256 x 256 input with itself shifted by t elements: out[t] = sum over the
# 65,536 elements e of x[e] * x[e + t] (x padded by a warp's worth of elements): a loop of 8 instructions,
# 524,288 per warp, 4x the old count.
CORRELATE = """
.kernel correlate
.param .u64 x
.param .u64 out
.param .u32 n
.reg .u32 %t, %e, %a, %b, %acc, %n
.reg .u64 %p, %q, %off, %base, %o
.reg .pred %more
    mov.u32 %t, %tid.x
    ld.param.u64 %base, [x]
    mul.wide.u32 %off, %t, 4
    mov.u64 %p, %base
    add.u64 %q, %base, %off
    mov.u32 %acc, 0
    mov.u32 %e, 0
    ld.param.u32 %n, [n]
L:
    ld.global.u32 %a, [%p]
    ld.global.u32 %b, [%q]
    mad.lo.u32 %acc, %a, %b, %acc
    add.u64 %p, %p, 4
    add.u64 %q, %q, 4
    add.u32 %e, %e, 1
    setp.lt.u32 %more, %e, %n
    @%more bra L
    ld.param.u64 %o, [out]
    add.u64 %o, %o, %off
    st.global.u32 [%o], %acc
    exit
"""


def test_a_correlation_over_256_x_256_elements_runs_at_default_limits_and_verifies():
    n = 256 * 256
    x = np.random.default_rng(0).integers(0, 16, n + 32).astype(np.uint32)
    outs, stats = run(CORRELATE, 1, 32, {"x": x, "out": np.zeros(32, np.uint32)}, {"n": n},
                      cfg=gpusim.load_config("a100"))
    want = np.array([np.dot(x[:n].astype(np.int64), x[t: t + n].astype(np.int64)) for t in range(32)])
    np.testing.assert_array_equal(outs["out"], want.astype(np.uint32))
    assert stats.warp_instructions == 8 * n + 12 > 4 * OLD_LIMIT


# an exit that is never taken, and a state that comes back every 4 instructions
SAME_STATE = """
.kernel same
.reg .u32 %r
.reg .pred %p
    mov.u32 %r, 0
L:
    add.u32 %r, %r, 0
    setp.eq.u32 %p, %r, 5
    @%p bra OUT
    bra L
OUT:
    exit
"""
# the same registers every turn (the count lives in memory, read back each turn) until memory says stop:
# it ends, so it is no runaway
MEMORY_COUNTS = """
.kernel count
.param .u64 c
.param .u32 n
.reg .u32 %v, %n
.reg .u64 %a
.reg .pred %p
    ld.param.u64 %a, [c]
    ld.param.u32 %n, [n]
L:
    ld.global.u32 %v, [%a]
    add.u32 %v, %v, 1
    st.global.u32 [%a], %v
    setp.lt.u32 %p, %v, %n
    mov.u32 %v, 0
    @%p bra L
    exit
"""


def test_trapped_pcs_are_those_with_no_path_out():
    assert trapped_pcs(assemble(SPIN, "s.sasm")).tolist() == [True, True, True]  # (pc 0 falls into the loop)
    leaves = SPIN.replace("L:", "@%p exit\nL:").replace(".reg .u32 %r", ".reg .u32 %r\n.reg .pred %p")
    assert trapped_pcs(assemble(leaves, "s.sasm")).tolist() == [False, False, True, True]
    assert not trapped_pcs(assemble(SAME_STATE, "s.sasm")).any()  # (its exit is reachable)
    assert not trapped_pcs(assemble(CORRELATE, "c.sasm")).any()


@pytest.mark.parametrize("timed", [False, True])
@pytest.mark.parametrize("src, what, loop", [
    (SPIN, r"runaway loop: a warp is in a loop it can never leave \(no path from pc (\d) leads to an exit\)",
     {1: (6, "add.u32 %r, %r, 0"), 2: (7, "bra L")}),
    (SAME_STATE, r"runaway loop: the block came back to the state it was in 4 instructions earlier",
     {1: (7, "add.u32 %r, %r, 0"), 2: (8, "setp.eq.u32 %p, %r, 5"), 3: (9, "@%p bra OUT"), 4: (10, "bra L")})],
    ids=["no-way-out", "same-state"])
def test_a_loop_that_never_ends_is_stopped_on_evidence_naming_its_pc(src, what, loop, timed):
    """The fault names the pc and line where the warp was stopped: one of its loop's."""
    t0 = time.perf_counter()
    with pytest.raises(KernelFault) as err:
        (timed_execute if timed else execute)(assemble(src, "spin.sasm"), Launch.make(100, 256), {},
                                             GlobalMemory(), cfg=gpusim.load_config("a100"))
    assert time.perf_counter() - t0 < 30
    msg = str(err.value)
    assert re.match(what, msg) and "\n" not in msg
    where = re.search(r"\[kernel (\w+) \(spin.sasm\), pc (\d+), line (\d+), block \(0,0,0\), thread \(0,0,0\)\]: "
                      r"`(.*)`$", msg)
    assert where and where[1] == src.split()[1], msg
    assert loop[int(where[2])] == (int(where[3]), where[4])
    if src is SPIN:
        assert re.match(what, msg)[1] == where[2]
    assert "--max-steps N sets a fixed limit instead" in msg


def test_registers_that_repeat_while_memory_moves_on_are_no_runaway():
    n = 20_000  # 6 instructions a turn: 120,000 steps, probed on the way
    outs, stats = run(MEMORY_COUNTS, 1, 1, {"c": np.zeros(1, np.uint32)}, {"n": n}, cfg=gpusim.load_config("a100"))
    assert outs["c"][0] == n
    assert stats.warp_instructions == 6 * n + 3


def test_a_given_limit_is_a_fixed_count_as_before():
    with pytest.raises(KernelFault, match=r"^step limit exceeded: a warp issued more than 5,000 instructions"):
        execute(assemble(SAME_STATE, "s.sasm"), Launch.make(1, 32), {}, GlobalMemory(), max_steps_per_warp=5000)
