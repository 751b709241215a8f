"""The ptxas model's loop unrolling (gpusim/isa/ptxas/unroll.py): the expected shape of an unrolled
counted loop, every trip count and comparison giving the values of the loop as written (wrap-around
bounds included), and the loops it must leave alone."""

import numpy as np
import pytest

from gpusim.config import load_config
from gpusim.isa import assemble
from gpusim.isa.ptxas import ptxas
from gpusim.isa.ptxas.unroll import MAX_BODY, UNROLL, unroll_loops
from tests.isa.ptxas_helpers import assert_rewrites, assert_unchanged, outputs

H200 = load_config("h200")

DOT = """.kernel dot
.param .u64 a
.param .u64 out
.param .u32 n
.reg .u32 %k, %n
.reg .u64 %pa, %po
.reg .f32 %acc, %x
.reg .pred %p
    ld.param.u64 %pa, [a];
    ld.param.u32 %n, [n];
    mov.f32 %acc, 0.0;
    mov.u32 %k, 0;
LOOP:
    ld.global.f32 %x, [%pa];
    add.f32 %acc, %acc, %x;
    add.u64 %pa, %pa, 4;
    add.u32 %k, %k, 1;
    setp.lt.u32 %p, %k, %n;
    @%p bra LOOP;
    ld.param.u64 %po, [out];
    st.global.f32 [%po], %acc;
    exit;
"""


def test_a_counted_loop_becomes_four_copies_and_one_iteration_under_one_head():
    copy = """    ld.global.f32 %x{r}, [%pa];
    add.f32 %acc, %acc, %x{r};
    add.u64 %pa, %pa, 4;
    add.u32 %k, %k, 1;
"""
    regs = ".reg .pred %p, %q_p1\n.reg .u32 %lim_p1\n.reg .f32 %x_p1, %x_p2, %x_p3\n"
    expected = DOT.replace(".reg .pred %p\n", regs).replace("LOOP:\n", """LOOP:
    sub.sat.u32 %lim_p1, %n, 3;
$ptxas_head_1:
    setp.lt.u32 %q_p1, %k, %lim_p1;
    @!%q_p1 bra $ptxas_one_1;
""" + "".join(copy.format(r=r) for r in ("", "_p1", "_p2", "_p3")) + """    setp.lt.u32 %p, %k, %n;
    @%p bra $ptxas_head_1;
    bra $ptxas_exit_1;
$ptxas_one_1:
""").replace("    @%p bra LOOP;\n", "    @%p bra $ptxas_head_1;\n$ptxas_exit_1:\n")
    assert_rewrites(unroll_loops, DOT, expected)


def test_the_whole_model_on_the_loop_hoists_the_loads_and_folds_the_address_steps():
    prog = ptxas(assemble(DOT), H200)
    labels = dict(prog.labels)
    main = prog.instructions[labels["$ptxas_head_1"]:labels["$ptxas_one_1"]]  # the check, 4 copies, the test
    loads = [i for i in main if i.opcode == "ld"]
    assert [ld.srcs[0].value for ld in loads] == [0, 4, 8, 12]  # [%pa], [%pa+4], [%pa+8], [%pa+12]
    adds = [i for i in main if i.mnemonic == "add.f32"]
    assert len(adds) == UNROLL and max(ld.pc for ld in loads) < min(a.pc for a in adds)  # loads first
    # one step of each induction a trip: %pa += 16, %k += 4
    assert sorted(int(i.srcs[1].value) for i in main if i.mnemonic in ("add.u32", "add.u64")) == [4, 16]
    a = np.arange(1, 33, dtype=np.float32)
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 16, 17):
        before = outputs(assemble(DOT), [a, np.zeros(1, np.float32), n], block=1)
        after = outputs(prog, [a, np.zeros(1, np.float32), n], block=1)
        assert after[1][0] == before[1][0] == a[:n].sum()


LOOP = """.kernel trips
.param .u64 out
.param .u32 start
.param .u32 bound
.reg .u32 %i, %n, %s, %cnt, %v, %t
.reg .u64 %p, %x
.reg .pred %pr
    ld.param.u32 %i, [start];
    ld.param.u32 %n, [bound];
    mov.u32 %t, %tid.x;
    and.b32 %t, %t, MASK;
    add.u32 %i, %i, %t;
    mov.u32 %s, 0;
    mov.u32 %cnt, 0;
LOOP:
    mul.lo.u32 %v, %i, 3;
    add.u32 %s, %s, %v;
    add.u32 %cnt, %cnt, 1;
    INC;
    setp.CMP %pr, %i, %n;
    @%pr bra LOOP;
    ld.param.u64 %p, [out];
    mov.u32 %t, %tid.x;
    mul.wide.u32 %x, %t, 12;
    add.u64 %p, %p, %x;
    st.global.u32 [%p], %s;
    st.global.u32 [%p+4], %cnt;
    st.global.u32 [%p+8], %i;
    exit;
"""

# (comparison, increment, start, bound, lanes' start spread mask): 1 to ~40 iterations per lane, lanes of a
# warp leaving at different trips, bounds near the ends of the 32-bit ranges
CASES = [
    ("lt.u32", "add.u32 %i, %i, 1", 0, 10, 31),
    ("lt.u32", "add.u32 %i, %i, 1", 0xFFFFFFF0, 0xFFFFFFFF, 7),
    ("lt.u32", "add.u32 %i, %i, 1", 0xFFFFFFFA, 5, 31),
    ("lo.u32", "add.u32 %i, %i, 5", 0, 100, 31),
    ("le.u32", "add.u32 %i, %i, 2", 0, 9, 31),
    ("ls.u32", "add.u32 %i, %i, 2", 3, 40, 31),
    ("lt.s32", "add.u32 %i, %i, 3", 0xFFFFFFF6, 7, 31),
    ("lt.s32", "add.u32 %i, %i, 1", 0x7FFFFFF0, 0x7FFFFFFF, 7),
    ("le.s32", "sub.u32 %i, %i, -1", 0xFFFFFFF0, 0xFFFFFFF9, 15),
    ("gt.s32", "add.u32 %i, %i, -1", 10, 0, 31),
    ("gt.u32", "sub.u32 %i, %i, 1", 30, 0, 31),
    ("ge.u32", "add.u32 %i, %i, -2", 20, 3, 31),
    ("hs.u32", "add.u32 %i, %i, -3", 50, 3, 31),
    ("ge.s32", "add.u32 %i, %i, -1", 5, 0xFFFFFFF8, 31),
    ("ne.u32", "add.u32 %i, %i, 1", 0, 12, 7),
    ("ne.s32", "add.u32 %i, %i, -1", 12, 3, 7),
]


@pytest.mark.parametrize("cmp,inc,start,bound,mask", CASES)
def test_unrolled_loops_run_every_trip_count_of_the_original(cmp, inc, start, bound, mask):
    text = LOOP.replace("CMP", cmp).replace("INC", inc).replace("MASK", str(mask))
    before = assemble(text)
    after = ptxas(before, H200)
    unrolled = any(name.startswith("$ptxas_head") for name, _ in after.labels)
    assert unrolled
    args = [np.zeros(64 * 3, np.uint32), start, bound]
    want, got = outputs(before, args, block=64)[0], outputs(after, args, block=64)[0]
    np.testing.assert_array_equal(got.reshape(-1, 3), want.reshape(-1, 3))
    assert 1 <= want.reshape(-1, 3)[:, 1].min() and want.reshape(-1, 3)[:, 1].max() <= 70


def _loop(body: str, test: str = "setp.lt.u32 %p, %k, %n;\n    @%p bra LOOP;", pre: str = "") -> str:
    return f""".kernel k
.param .u64 out
.param .u32 n
.reg .u32 %k, %n, %v, %w
.reg .u64 %o, %k64
.reg .f32 %f
.reg .pred %p, %q
    ld.param.u32 %n, [n];
    ld.param.u64 %o, [out];
    mov.u32 %k, 0;
    mov.u64 %k64, 0;
    {pre}
LOOP:
    {body}
    {test}
    st.global.u32 [%o], %k;
    exit;
"""


STEP = "add.u32 %k, %k, 1;"
LEFT_ALONE = {
    "step not a constant": "add.u32 %k, %k, %n;",
    "a barrier in the body": "bar.sync 0;\n    " + STEP,
    "a shuffle in the body": "shfl.sync.bfly.b32 %v, %k, 1, 31, -1;\n    " + STEP,
    "a vote in the body": "vote.sync.any.pred %q, %p, -1;\n    " + STEP,
    "a fence in the body": "membar.gl;\n    " + STEP,
    "the bound written in the body": "add.u32 %n, %n, 1;\n    " + STEP,
    "the induction written twice": STEP + "\n    " + STEP,
    "the induction guarded": "@%q add.u32 %k, %k, 1;",
    "the predicate read in the body": "selp.u32 %v, 1, 2, %p;\n    " + STEP,
    "a branch inside the body": "setp.eq.u32 %q, %k, 3;\n    @%q bra SKIP;\n    add.u32 %v, %v, 1;\nSKIP:\n    " + STEP,
    "an exit inside the body": "setp.eq.u32 %q, %k, 3;\n    @%q exit;\n    " + STEP,
    "a step of zero": "add.u32 %k, %k, 0;",
    "the wrong direction": "add.u32 %k, %k, -1;",
    "too long a body": STEP + "\n    " + "\n    ".join(["add.u32 %v, %v, 1;"] * MAX_BODY),
}


@pytest.mark.parametrize("why", LEFT_ALONE)
def test_loops_that_are_not_counted_or_hold_warp_synchronous_operations_are_left_alone(why):
    assert_unchanged(unroll_loops, _loop(LEFT_ALONE[why]))


@pytest.mark.parametrize("why,body,test", [
    ("tested before the increment", "setp.lt.u32 %p, %k, %n;\n    " + STEP, "@%p bra LOOP;"),
    ("a 64-bit induction", "add.u64 %k64, %k64, 1;\n    cvt.u32.u64 %k, %k64;",
     "setp.lt.u64 %p, %k64, 100;\n    @%p bra LOOP;"),
    ("a loop while equal", STEP, "setp.eq.u32 %p, %k, %n;\n    @%p bra LOOP;"),
    ("a step of 2 to an inequality", "add.u32 %k, %k, 2;", "setp.ne.u32 %p, %k, %n;\n    @%p bra LOOP;"),
    ("a top-tested loop", "setp.ge.u32 %p, %k, %n;\n    @%p bra OUT;\n    " + STEP, "bra LOOP;\nOUT:"),
    ("an empty loop", "", "@%p bra LOOP;"),
    ("a test of a float", "add.f32 %f, %f, 1.0;", "setp.lt.f32 %p, %f, 10.0;\n    @%p bra LOOP;"),
])
def test_unusual_loops_are_left_alone(why, body, test):
    assert_unchanged(unroll_loops, _loop(body, test))


def test_a_branch_into_the_middle_of_a_loop_leaves_it_alone():
    text = _loop("add.u32 %v, %v, 1;\nMID:\n    " + STEP, pre="setp.eq.u32 %q, %n, 7;\n    @%q bra MID;")
    assert_unchanged(unroll_loops, text)
