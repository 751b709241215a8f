"""The ptxas model's if-conversion (gpusim/isa/ptxas/ifconvert.py): a short forward branch around
straight-line code as that code predicated (reduce_sum_shfl's `@!P0 LDG` and `@!P1 STS` in its sm_90
SASS), the branches it must leave alone, values kept, and what it changes in the timed run: a warp no
longer splits where its lanes disagree."""

import numpy as np
import pytest

import gpusim
from gpusim.config import load_config
from gpusim.isa import assemble
from gpusim.isa.ptxas.ifconvert import MAX_CONVERTED, if_convert
from tests.isa.ptxas_helpers import assert_rewrites, assert_same_values, assert_unchanged

HEAD = """.kernel k
.param .u64 x
.param .u64 out
.param .u32 n
.reg .u32 %t, %n, %a
.reg .u64 %p, %o, %w
.reg .f32 %v
.reg .pred %q, %r
    mov.u32 %t, %tid.x;
    ld.param.u32 %n, [n];
    ld.param.u64 %p, [x];
    ld.param.u64 %o, [out];
    mov.f32 %v, 0.0;
    setp.ge.u32 %q, %t, %n;
"""
LOAD = """
    mul.wide.u32 %w, %t, 4;
    add.u64 %w, %p, %w;
    ld.global.f32 %v, [%w];
"""
END = """
    mul.wide.u32 %w, %t, 4;
    add.u64 %o, %o, %w;
    st.global.f32 [%o], %v;
"""


def _args(n=20):
    return [np.arange(32, dtype=np.float32) + 1, np.full(32, -1, np.float32), n]


@pytest.mark.parametrize("guard,negated", [("@%q", "@!%q"), ("@!%q", "@%q")])
def test_a_branch_around_a_load_becomes_the_load_predicated(guard, negated):
    before = HEAD + f"    {guard} bra SKIP;" + LOAD + "SKIP:" + END
    expected = HEAD + "".join(f"    {negated} {ln.strip()}\n" for ln in LOAD.strip().splitlines()) + END
    out = assert_rewrites(if_convert, before, expected)
    assert_same_values(assemble(before), out, _args())
    assert not any(i.opcode == "bra" for i in out.instructions)


def test_the_label_stays_while_another_branch_names_it():
    first = HEAD + "    setp.eq.u32 %r, %n, 3;\n    @%r bra SKIP;\n    bar.sync 0;\n"
    before = first + "    @%q bra SKIP;" + LOAD + "SKIP:" + END
    expected = first + "".join(f"    @!%q {ln.strip()}\n" for ln in LOAD.strip().splitlines()) + "SKIP:" + END
    out = assert_rewrites(if_convert, before, expected)
    assert_same_values(assemble(before), out, _args())


@pytest.mark.parametrize("why,code", [
    ("a label inside (another way in)", "    mul.wide.u32 %w, %t, 4;\nIN:\n    add.u64 %w, %p, %w;\n"
                                        "    ld.global.f32 %v, [%w];\n"),
    ("a guarded instruction inside", "    @%r ld.global.f32 %v, [%p];\n"),
    ("the predicate written inside", "    setp.eq.u32 %q, %t, 0;\n    ld.global.f32 %v, [%p];\n"),
    ("a barrier inside", "    bar.sync 0;\n"),
    ("a shuffle inside", "    shfl.sync.down.b32 %v, %v, 1, 31, -1;\n"),
    ("a branch inside", "    bra SKIP;\n"),
    ("too long", "    add.f32 %v, %v, 1.0;\n" * (MAX_CONVERTED + 1)),
    ("nothing skipped", ""),
])
def test_branches_that_cannot_be_predicated_are_left_alone(why, code):
    assert_unchanged(if_convert, HEAD + "    setp.eq.u32 %r, %t, 1;\n    @%q bra SKIP;\n" + code + "SKIP:" + END)


def test_a_backward_branch_is_left_alone():
    assert_unchanged(if_convert, HEAD + "TOP:\n    add.f32 %v, %v, 1.0;\n    add.u32 %t, %t, 32;\n"
                                        "    setp.lt.u32 %q, %t, %n;\n    @%q bra TOP;" + END)


def test_a_predicated_store_costs_the_warp_no_split():
    """One lane of each warp stores (`if (lane == 0)`): as a branch, every warp's active threads change twice
    (units.branch.divergence_cycles each); predicated, they never do. The timed run saves that."""
    src = """.kernel k
.param .u64 out
.reg .u32 %t, %l
.reg .u64 %o, %w
.reg .pred %q
    mov.u32 %t, %tid.x;
    and.b32 %l, %t, 31;
    setp.ne.u32 %q, %l, 0;
    @%q bra SKIP;
    ld.param.u64 %o, [out];
    mul.wide.u32 %w, %t, 4;
    add.u64 %o, %o, %w;
    st.global.u32 [%o], %t;
SKIP:
    exit;
"""
    cycles = {}
    for d in (31, 100):  # the H200's fitted divergence cost, and a larger one
        cfg = load_config("h200", overrides={"units.branch.divergence_cycles": d})
        out = np.zeros(64, np.uint32)
        branched = gpusim.launch(assemble(src), 1, 64, [out], config=cfg, ptxas_model=False).cycles
        predicated = gpusim.launch(assemble(src), 1, 64, [out], config=cfg).cycles
        assert list(np.nonzero(out)[0]) == [32]
        cycles[d] = branched, predicated
    # predicated, the warps never split: the divergence cost does not matter; branched, each warp splits once
    # on the kernel's critical path, which grows by the cost's change
    assert cycles[31][1] == cycles[100][1]
    assert cycles[100][0] - cycles[31][0] == 100 - 31
    assert cycles[31][1] < cycles[31][0]
