"""The ptxas model's move and constant folding (gpusim/isa/ptxas/fold.py): before/expected pairs, and the
values of each pair's kernel unchanged on the functional executor."""

import numpy as np

from gpusim.isa import assemble
from gpusim.isa.ptxas.fold import convert_immediate, fold
from tests.isa.ptxas_helpers import assert_rewrites, assert_same_values, assert_unchanged

HEAD = """.kernel k
.param .u64 out
.reg .u32 %t, %n, %a, %b, %c, %d, %w, %s, %o
.reg .b32 %r1, %r2
.reg .u64 %p, %q, %x
.reg .f32 %f0, %f1, %f2
.reg .pred %pr
.shared .f32 buf[64]
"""




def store(r: str, t: str = "u32") -> str:
    """out[tid] = r (the tail every kernel here ends with)."""
    return f"""
    ld.param.u64 %p, [out];
    mul.wide.u32 %x, %t, 4;
    add.u64 %q, %p, %x;
    st.global.{t} [%q], {r};
    """


def fold32(prog):
    return fold(prog, 32)


def test_immediates_and_launch_constants_become_operands_and_their_moves_go():
    before = HEAD + """
    mov.u32 %t, %tid.x;
    mov.u32 %n, %ntid.x;
    mov.u32 %a, 7;
    mad.lo.u32 %b, %n, %a, %t;
    ld.param.u64 %p, [out];
    cvta.to.global.u64 %q, %p;
    mul.wide.u32 %x, %t, 4;
    add.u64 %q, %q, %x;
    st.global.u32 [%q], %b;
    """
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    mad.lo.u32 %b, %ntid.x, 7, %t;
    """ + store("%b")
    out = assert_rewrites(fold32, before, expected)
    assert_same_values(assemble(before), out, [np.zeros(64, np.uint32)], block=64)


def test_warp_size_folds_with_the_config_and_a_multiply_by_it_becomes_a_shift_not_a_division():
    before = HEAD + """
    mov.u32 %w, WARP_SZ;
    mov.u32 %t, %tid.x;
    div.u32 %a, %t, %w;
    rem.u32 %b, %t, %w;
    mul.lo.u32 %c, %a, %w;
    add.u32 %d, %b, %c;
    """ + store("%d")
    # (ptxas divides by WARP_SZ with its generic division sequence, though it knows WARP_SZ is 32)
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    div.u32 %a, %t, 32;
    rem.u32 %b, %t, 32;
    shl.u32 %c, %a, 5;
    add.u32 %d, %b, %c;
    """ + store("%d")
    out = assert_rewrites(fold32, before, expected)
    assert_same_values(assemble(before), out, [np.zeros(96, np.uint32)], block=96)
    # a 64-lane warp: WARP_SZ is 64, the shift 6
    assert_rewrites(lambda p: fold(p, 64), before, expected.replace(", 5;", ", 6;").replace(", 32;", ", 64;"))
    # without a config WARP_SZ is never given a number: it stays the special register
    no_cfg = fold(assemble(before), None)
    assert any(o.kind == "special" and o.name == "WARP_SZ" for i in no_cfg.instructions for o in i.srcs)
    assert not any(i.opcode in ("shr", "shl") for i in no_cfg.instructions)


def test_bit_cast_moves_and_shuffle_operands_fold():
    before = HEAD + """
    mov.u32 %t, %tid.x;
    cvt.rn.f32.u32 %f0, %t;
    mov.b32 %r1, %f0;
    mov.u32 %c, 31;
    mov.u32 %d, 16;
    shfl.sync.down.b32 %r2, %r1, %d, %c, -1;
    mov.b32 %f1, %r2;
    add.f32 %f2, %f0, %f1;
    """ + store("%f2", "f32")
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    cvt.rn.f32.u32 %f0, %t;
    shfl.sync.down.b32 %r2, %f0, 16, 31, -1;
    add.f32 %f2, %f0, %r2;
    """ + store("%f2", "f32")
    out = assert_rewrites(fold32, before, expected)
    assert_same_values(assemble(before), out, [np.zeros(32, np.float32)])


def test_shared_symbol_and_constant_adds_fold_into_the_address():
    before = HEAD + """
    mov.u32 %t, %tid.x;
    mov.u32 %s, buf;
    shl.b32 %o, %t, 2;
    add.u32 %a, %s, %o;
    cvt.rn.f32.u32 %f0, %t;
    st.shared.f32 [%a], %f0;
    bar.sync 0;
    add.u32 %b, %a, 8;
    ld.shared.f32 %f1, [%b+4];
    """ + store("%f1", "f32")
    expected = HEAD + """
    mov.u32 %t, %tid.x;
    shl.b32 %o, %t, 2;
    cvt.rn.f32.u32 %f0, %t;
    st.shared.f32 [%o+buf], %f0;
    bar.sync 0;
    ld.shared.f32 %f1, [%o+buf+12];
    """ + store("%f1", "f32")
    out = assert_rewrites(fold32, before, expected)
    assert_same_values(assemble(before), out, [np.zeros(61, np.float32)], block=61)


def test_a_copy_is_not_propagated_where_it_may_not_hold():
    # the source is written after the copy; a second value on one path; a loop that changes the source
    assert_unchanged(fold32, HEAD + """
    mov.u32 %t, %tid.x;
    mov.u32 %a, %t;
    add.u32 %t, %t, 1;
    add.u32 %c, %a, %t;
    mov.u32 %b, 1;
    setp.eq.u32 %pr, %c, 3;
    @%pr bra L;
    mov.u32 %b, 2;
L:
    add.u32 %d, %b, %c;
    mov.u32 %n, %d;
LOOP:
    add.u32 %d, %d, 1;
    add.u32 %w, %n, %d;
    setp.lt.u32 %pr, %d, 40;
    @%pr bra LOOP;
    ld.param.u64 %p, [out];
    st.global.u32 [%p], %w;
    """)


def test_immediates_keep_their_bits_across_types():
    assert convert_immediate(1.0, "f32", "b32") == 0x3F800000
    assert convert_immediate(0x3F800000, "b32", "f32") == 1.0
    assert convert_immediate(-1, "s32", "u32") == 0xFFFFFFFF
    assert convert_immediate(0xFFFFFFFF, "u32", "s32") == -1
    assert convert_immediate(1.0, "f32", "f64") is None  # widths differ: not a copy of bits
