"""The ptxas model's predicated selects (gpusim/isa/ptxas/select.py): `OP t; selp d, t, a, p` as `@p OP a`
(reduce_sum_shfl's `v += t if the partner lane exists`, one `@!P2 FADD` in SASS), and the cases it must
leave alone; values kept."""

import numpy as np
import pytest

from gpusim.isa import assemble
from gpusim.isa.ptxas.select import predicate_selects
from tests.isa.ptxas_helpers import assert_rewrites, assert_same_values, assert_unchanged

HEAD = """.kernel k
.param .u64 out
.reg .u32 %t, %u
.reg .u64 %p, %x
.reg .f32 %v, %w, %s, %d, %e
.reg .pred %q, %r
"""
START = """
    mov.u32 %t, %tid.x;
    cvt.rn.f32.u32 %v, %t;
    shfl.sync.down.b32 %w, %v, 1, 31, -1;
    setp.lt.u32 %q, %t, 20;
"""
END = """
    ld.param.u64 %p, [out];
    mul.wide.u32 %x, %t, 4;
    add.u64 %p, %p, %x;
    st.global.f32 [%p], %e;
"""


def test_a_selected_sum_becomes_a_predicated_add_over_the_value_it_replaces():
    before = HEAD + START + """
    add.f32 %s, %v, %w;
    selp.f32 %d, %s, %v, %q;
    shfl.sync.down.b32 %w, %d, 2, 31, -1;
    mul.f32 %s, %d, %w;
    selp.f32 %e, %d, %s, %q;""" + END
    expected = HEAD + START + """
    @%q add.f32 %v, %v, %w;
    shfl.sync.down.b32 %w, %v, 2, 31, -1;
    @!%q mul.f32 %v, %v, %w;""" + END.replace("%e;", "%v;")
    out = assert_rewrites(predicate_selects, before, expected)
    assert_same_values(assemble(before), out, [np.zeros(32, np.float32)])


@pytest.mark.parametrize("why,code", [
    ("the replaced value is read later", "add.f32 %s, %v, %w;\n    selp.f32 %e, %s, %v, %q;\n    add.f32 %e, %e, %v;"),
    ("the operation's result is read twice", "add.f32 %s, %v, %w;\n    selp.f32 %e, %s, %v, %q;\n"
                                             "    add.f32 %e, %e, %s;"),
    ("an input written between", "add.f32 %s, %v, %w;\n    mov.f32 %w, 1.0;\n    selp.f32 %e, %s, %v, %q;"),
    ("an immediate to fall back on", "add.f32 %s, %v, %w;\n    selp.f32 %e, %s, 1.0, %q;"),
    ("the destination written twice", "add.f32 %s, %v, %w;\n    selp.f32 %e, %s, %v, %q;\n"
                                      "    @%r mov.f32 %e, 2.0;"),
    ("the replaced register rewritten before the read", "add.f32 %s, %v, %w;\n    selp.f32 %e, %s, %w, %q;\n"
                                                        "    mov.f32 %w, 3.0;\n    add.f32 %e, %e, %w;"),
    ("a guarded operation", "@%r add.f32 %s, %v, %w;\n    selp.f32 %e, %s, %v, %q;"),
])
def test_selects_that_cannot_fold_are_left_alone(why, code):
    assert_unchanged(predicate_selects, HEAD + START + "    setp.gt.u32 %r, %t, 3;\n    " + code + END)
