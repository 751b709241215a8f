"""Assembler: decoding, typing, errors with file:line:col, disassembly round trip, CFG/IPDOM."""


import pytest

from gpusim.data import data_dir
from gpusim.errors import AssemblyError
from gpusim.isa import OPCODES, Unit, assemble, assemble_file, disassemble
from gpusim.isa.program import EXIT_PC

HEAD = """.kernel k
.param .u64 out
.reg .u32 %r<4>
.reg .f32 %f<2>
.reg .u64 %rd
.reg .pred %p
"""


def err(body: str) -> str:
    with pytest.raises(AssemblyError) as e:
        assemble(HEAD + body, "k.sasm")
    return str(e.value)


def test_unknown_opcode():
    assert err("    frob.u32 %r0, %r1\n") == "k.sasm:7:5: unknown opcode (at 'frob')"


def test_wrong_operand_count():
    assert err("    add.u32 %r0, %r1\n") == (
        "k.sasm:7:13: add.u32 expects 3 operand(s) (destination, source, source), got 2 (at '%r0, %r1')")


def test_type_mismatch():
    assert err("    add.u32 %r0, %f1, 1\n") == (
        "k.sasm:7:18: type mismatch: %f1 is .f32; add.u32 needs a .u32 register (at '%f1')")


def test_wrong_operand_kind():
    assert err("    setp.lt.u32 %r0, %r1, 2\n") == (
        "k.sasm:7:17: type mismatch: %r0 is .u32; expected a .pred register (at '%r0')")


def test_undefined_label():
    assert err("    @%p bra NOWHERE\n") == "k.sasm:7:13: undefined label (at 'NOWHERE')"


def test_undefined_register():
    assert err("    mov.u32 %r9, 1\n") == (
        "k.sasm:7:13: undefined register; expected a destination register (at '%r9')")


def test_global_address_needs_64_bits():
    assert err("    ld.global.u32 %r0, [%r1+4]\n") == (
        "k.sasm:7:24: global addresses are 64-bit: %r1 is .u32; expected .u64 (at '[%r1+4]')")


def test_missing_space_and_bad_qualifier():
    assert "ld needs one of .global .param .shared" in err("    ld.u32 %r0, [%rd]\n")
    assert "unknown qualifier .foo for add" in err("    add.foo.u32 %r0, %r1, %r2\n")
    assert "immediate does not fit .u32" in err("    mov.u32 %r0, 0x100000000\n")
    assert "type mismatch: float immediate for .u32" in err("    mov.u32 %r0, 1.5\n")


def test_unknown_directive_and_duplicate_label():
    assert err(".global .u32 g\n").startswith("k.sasm:7:1: unknown directive")
    assert err("A:\n A:\n exit\n").startswith("k.sasm:8:2: label 'A' defined twice")


def test_decoded_operands():
    p = assemble(HEAD + "    mad.lo.u32 %r0, %r1, 3, %tid.x\n    @!%p bra L\nL:\n    exit\n")
    ins = p.instructions[0]
    assert ins.opcode == "mad" and ins.quals == ("lo",) and ins.types == ("u32",) and ins.unit == Unit.INT
    assert [o.kind for o in ins.srcs] == ["reg", "imm", "special"]
    assert ins.srcs[1].value == 3 and ins.dsts[0].reg == p.register("%r0").index
    br = p.instructions[1]
    assert br.guard == p.register("%p").index and br.guard_negate and br.target == 2


def test_every_opcode_has_one_unit_class():
    assert {o.unit for o in OPCODES.values()} <= set(Unit) | {"by-type", "by-type-sfu"}
    p = assemble(HEAD + "    add.f32 %f0, %f1, 1.0\n    add.u32 %r0, %r1, 1\n    sqrt.approx.f32 %f0, %f1\n"
                 "    ld.global.f32 %f0, [%rd]\n    bar.sync 0\n    exit\n")
    assert [i.unit for i in p.instructions] == [Unit.FP32, Unit.INT, Unit.SFU, Unit.LDST, Unit.SYNC, Unit.BRANCH]
    # special functions and division of .f64: the FP64 unit (ptxas's DFMA sequences); of integers: the ALU
    p = assemble(".kernel k\n.reg .f64 %d<2>\n.reg .u32 %r<2>\n    sqrt.rn.f64 %d0, %d1\n    rcp.rz.f64 %d0, %d1\n"
                 "    div.rn.f64 %d0, %d0, %d1\n    rsqrt.approx.f64 %d0, %d1\n    div.u32 %r0, %r0, %r1\n")
    assert [i.unit for i in p.instructions[:5]] == [Unit.FP64] * 4 + [Unit.INT]


def test_reconvergence_point_is_the_immediate_post_dominator():
    src = HEAD + """    setp.lt.u32 %p, %r0, 4
    @%p bra ELSE
    mov.u32 %r1, 1
    bra END
ELSE:
    mov.u32 %r1, 2
END:
    @%p exit
    exit
"""
    p = assemble(src)
    assert p.instructions[1].reconv == 5  # END
    loop = assemble(HEAD + "L:\n    add.u32 %r0, %r0, 1\n    setp.lt.u32 %p, %r0, 9\n    @%p bra L\n    exit\n")
    assert loop.instructions[2].reconv == 3
    ends = assemble(HEAD + "    @%p bra A\n    exit\nA:\n    exit\n")
    assert ends.instructions[0].reconv == EXIT_PC


def test_register_count_from_liveness():
    src = """.kernel k
.param .u64 out
.reg .u32 %a, %b, %c
.reg .u64 %rd
    mov.u32 %a, 1
    mov.u32 %b, 2
    add.u32 %c, %a, %b
    ld.param.u64 %rd, [out]
    st.global.u32 [%rd], %c
    exit
"""
    p = assemble(src)
    # live peak: %c (1) + %rd (2) at the ld.param/st
    assert p.live_registers == 3 and p.regs_per_thread == 3
    assert assemble(src.replace(".reg .u64 %rd", ".maxnreg 40\n.reg .u64 %rd")).regs_per_thread == 40


def test_shared_declarations_give_shared_bytes():
    p = assemble(".kernel k\n.shared .f32 a[33]\n.shared .align 16 .u64 b[2]\n    exit\n")
    assert [(v.name, v.offset) for v in p.shared] == [("a", 0), ("b", 144)]
    assert p.shared_bytes == 160


def test_implicit_exit_appended():
    p = assemble(".kernel k\n.reg .u32 %r\n    mov.u32 %r, 1\n")
    assert [i.opcode for i in p.instructions] == ["mov", "exit"]


ROUND_TRIP = HEAD + """.shared .f32 tile[64]
    mov.u32 %r0, %tid.x
    cvt.rn.f32.u32 %f0, %r0
    shl.b32 %r1, %r0, 2
    st.shared.f32 [%r1+tile], %f0
    ld.shared.f32 %f1, [tile+4]
    fma.rn.f32 %f0, %f0, 0.5, -1.25
    setp.neu.f32 %p, %f0, %f1
    selp.u32 %r2, 1, 0, %p
    atom.global.cas.b32 %r3, [%rd-8], %r1, %r2
    shfl.bfly.b32 %f1, %f0, 1
    vote.ballot.b32 %r2, !%p
    @!%p bra END
    ex2.approx.f32 %f0, %f0
    mov.f32 %f1, 0f7F800000
END:
    bar.sync 0
    exit
"""


def test_disassemble_round_trip():
    p = assemble(ROUND_TRIP)
    text = disassemble(p)
    assert assemble(text) == p
    assert "st.shared.f32 [%r1+tile], %f0;" in text and "[%rd-8]" in text and "0f7F800000" in text


def test_shipped_kernels_round_trip():
    root = data_dir("workloads")
    kernels = sorted(root.rglob("*.sasm"))
    for path in kernels:
        p = assemble_file(path)
        assert assemble(disassemble(p)) == p, path
