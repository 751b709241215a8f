"""The ptxas model's IADD3 fusion (gpusim/isa/ptxas/iadd3.py) and address-step folding
(gpusim/isa/ptxas/offsets.py): before/expected pairs, the cases left alone, values kept; and the H200
microbenchmark figure the fusion is for."""

import numpy as np
import pytest

from gpusim.isa import assemble
from gpusim.isa.ptxas.iadd3 import fuse_adds
from gpusim.isa.ptxas.offsets import fold_increments
from tests.isa.ptxas_helpers import assert_rewrites, assert_same_values, assert_unchanged

HEAD = """.kernel k
.param .u64 out
.param .u32 y
.reg .u32 %t, %y, %a, %b, %c, %d
.reg .u64 %p, %x
.reg .f32 %f
"""
TAIL = """
    ld.param.u64 %p, [out];
    mul.wide.u32 %x, %t, 4;
    add.u64 %p, %p, %x;
    st.global.u32 [%p], %d;
"""


def test_two_dependent_adds_become_one_add3():
    before = HEAD + """
    mov.u32 %t, %tid.x;
    ld.param.u32 %y, [y];
    add.u32 %a, %t, %y;
    add.u32 %d, %a, 7;
    add.u32 %t, %t, %y;
    add.u32 %t, %t, %y;
    add.u32 %t, %t, %y;
    add.u32 %t, %t, %y;
    mov.u32 %t, %tid.x;""" + TAIL
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    ld.param.u32 %y, [y];
    add3.u32 %d, %t, %y, 7;
    add3.u32 %t, %t, %y, %y;
    add3.u32 %t, %t, %y, %y;
    mov.u32 %t, %tid.x;""" + TAIL
    out = assert_rewrites(fuse_adds, before, expected)
    assert_same_values(assemble(before), out, [np.zeros(32, np.uint32), 0xFFFFFFF0])


@pytest.mark.parametrize("why,code", [
    ("the sum is read twice", "add.u32 %a, %t, %y;\n    add.u32 %d, %a, 7;\n    add.u32 %c, %a, 1;"),
    ("the sum is read after", "add.u32 %a, %t, %y;\n    add.u32 %d, %a, 7;\n    st.global.u32 [%p], %a;"),
    ("an input is written between", "add.u32 %a, %t, %y;\n    mov.u32 %y, 3;\n    add.u32 %d, %a, %y;"),
    ("a + a", "add.u32 %a, %t, %y;\n    add.u32 %d, %a, %a;"),
    ("a guarded add", "setp.eq.u32 %q, %t, 0;\n    @%q add.u32 %a, %t, %y;\n    add.u32 %d, %a, 7;"),
    ("types differ", "add.s32 %a, %t, %y;\n    add.u32 %d, %a, 7;"),
    ("saturating", "add.sat.s32 %a, %t, %y;\n    add.s32 %d, %a, 7;"),
    ("a float add", "add.f32 %f, %f, 1.0;\n    add.f32 %f, %f, 2.0;"),
    ("16-bit adds", "add.u16 %h, %h, 1;\n    add.u16 %h, %h, 2;"),
    ("in two blocks", "add.u32 %a, %t, %y;\nL:\n    add.u32 %d, %a, 7;"),
])
def test_adds_that_cannot_fuse_are_left_alone(why, code):
    text = HEAD.replace(".reg .f32 %f", ".reg .f32 %f\n.reg .pred %q\n.reg .u16 %h") + f"""
    mov.u32 %t, %tid.x;
    ld.param.u32 %y, [y];
    ld.param.u64 %p, [out];
    {code}
    st.global.u32 [%p], %d;
    """
    assert_unchanged(fuse_adds, text)


def test_address_steps_fold_into_the_offsets_that_follow_them():
    before = HEAD + """
    mov.u32 %t, %tid.x;
    ld.param.u64 %p, [out];
    ld.global.u32 %a, [%p];
    add.u64 %p, %p, 4;
    ld.global.u32 %b, [%p];
    add.u64 %p, %p, 4;
    ld.global.u32 %c, [%p+4];
    add.u64 %p, %p, 4;
    add.u32 %d, %a, %b;
    add.u32 %d, %d, %c;
    st.global.u32 [%p], %d;
    sub.u64 %p, %p, 12;
    cvt.u64.u32 %x, %t;
    add.u64 %x, %x, %p;
    st.global.u32 [%x+16], %d;
    add.u64 %p, %p, 8;
    """
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    ld.param.u64 %p, [out];
    ld.global.u32 %a, [%p];
    ld.global.u32 %b, [%p+4];
    ld.global.u32 %c, [%p+12];
    add.u32 %d, %a, %b;
    add.u32 %d, %d, %c;
    st.global.u32 [%p+12], %d;
    cvt.u64.u32 %x, %t;
    add.u64 %x, %x, %p;
    st.global.u32 [%x+16], %d;
    add.u64 %p, %p, 8;
    """
    out = assert_rewrites(fold_increments, before, expected)
    assert_same_values(assemble(before), out, [np.arange(12, dtype=np.uint32), 0], block=1)
