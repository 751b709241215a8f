"""The SASS front end: control codes from the encodings, operands, labels and line information from a listing,
the cubin's facts (parameters, registers, shared memory, architecture), the listing checked against the cubin's
code bytes, and the located one-line errors for what gpusim does not read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusim.data import data_dir
from gpusim.errors import AssemblyError, ConfigError
from gpusim.isa.sass import Control, load_sass, read_cubin, read_sass
from gpusim.isa.sass.listing import parse_operand
from gpusim.isa.sass.opcodes import SASS_OPCODES
from gpusim.isa.sass.table import load_table
from tests.functional.sass_helpers import listing

SAXPY = data_dir("workloads") / "saxpy_cu" / "saxpy.cu"
SOFTMAX = data_dir("workloads") / "softmax_cu" / "softmax.cu"


def test_control_codes_decode_from_the_second_encoding_word():
    """saxpy on sm_90 as ptxas wrote it: S2R sets barrier 0 and stalls 7; the IMAD that reads its result waits
    on barrier 0; the FFMA after the loads waits on barrier 2, stalls 5 and yields."""
    s2r = Control.from_high_word(0x000E2E0000002100)
    assert (s2r.stall, s2r.wbar, s2r.rbar, s2r.waits, s2r.yield_) == (7, 0, -1, (), False)
    imad = Control.from_high_word(0x001FE2000F8E0200)
    assert (imad.stall, imad.wbar, imad.waits, imad.yield_) == (1, -1, (0,), False)
    ffma = Control.from_high_word(0x004FCA0008000007)
    assert (ffma.stall, ffma.waits, ffma.yield_) == (5, (2,), True)
    assert str(ffma) == "[B--2---:R-:W-:Y:S05]"
    stg = Control.from_high_word(0x000FE2000C101904)
    assert (stg.stall, stg.wbar, stg.rbar, stg.wait) == (1, -1, -1, 0)


def test_saxpy_sm90_is_the_nineteen_instructions_ptxas_made():
    p = load_sass(SAXPY, 90)
    ops = [i.opcode for i in p.instructions]
    body = ops[:ops.index("EXIT", ops.index("STG")) + 1]
    assert len(body) == 19
    assert body[:6] == ["LDC", "S2R", "S2UR", "LDC", "IMAD", "ULDC"] and "FFMA" in body
    assert [i.mnemonic for i in p.instructions if i.opcode in ("LDG", "STG")] == ["LDG.E", "LDG.E", "STG.E"]
    guarded = next(i for i in p.instructions if i.opcode == "EXIT" and i.guard >= 0)
    assert p.registers[guarded.guard].name == "P0" and not guarded.guard_negate
    ldg = p.instructions[ops.index("LDG")]
    assert ldg.control.wbar == 2 and ldg.loc == ("saxpy.cu", 6)


def test_the_cubin_gives_parameters_registers_and_shared_memory():
    k = next(iter(read_cubin(SAXPY.with_name("saxpy.sm_90.cubin")).values()))
    assert (k.arch, k.param_base, k.registers) == (90, 0x210, k.registers)
    assert [(p.offset, p.size) for p in k.params] == [(0, 8), (8, 8), (16, 4), (20, 4)]
    assert [t for t, _ in k.ptx_params] == ["u64", "u64", "f32", "u32"]
    p = load_sass(SAXPY, 80)
    assert p.param_base == 0x160 and p.regs_per_thread == read_cubin(SAXPY.with_name("saxpy.sm_80.cubin"))[
        p.symbol].registers
    sm = load_sass(SOFTMAX, 90)
    # two __shared__ float[256]: 2 KB, after sm_90's reserved 1 KB at the start of the window
    assert (sm.shared_window, sm.shared_reserved, sm.shared_bytes) == (3072, 1024, 2048)
    assert load_sass(SOFTMAX, 80).shared_window == 2048


def test_the_listing_must_be_the_cubins_code():
    text = SAXPY.with_name("saxpy.sm_90.sass").read_text()
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if "FFMA" in ln) + 1  # the FFMA's control word: one stall bit more
    word = int(lines[k].split("/*")[1].split("*/")[0], 16)
    lines[k] = lines[k].replace(f"{word:#018x}", f"{word ^ (1 << 41):#018x}")
    bad = "\n".join(lines) + "\n"
    assert bad != text
    read_sass(text, "x.sass", cubin=SAXPY.with_name("saxpy.sm_90.cubin"))
    with pytest.raises(AssemblyError, match="different builds"):
        read_sass(bad, "x.sass", cubin=SAXPY.with_name("saxpy.sm_90.cubin"))


def test_branch_targets_and_reconvergence_from_labels():
    p = load_sass(SOFTMAX, 90)
    loops = [i for i in p.instructions if i.opcode == "BRA" and i.guard >= 0 and i.target < i.pc]
    assert loops
    for ins in loops:  # a loop's back edge reconverges after the loop: at the BSYNC ptxas placed there
        assert ins.reconv > ins.pc
    bsync = [i.pc for i in p.instructions if i.opcode == "BSYNC"]
    assert any(i.reconv in bsync for i in p.instructions if i.opcode == "BRA" and i.guard >= 0)


@pytest.mark.parametrize(("tok", "want"), [
    ("R26.reuse", dict(kind="R", index=26)), ("-|R3|", dict(kind="R", index=3, neg=True, abs=True)),
    ("!P0", dict(kind="P", index=0, inv=True)), ("PT", dict(kind="P", index=7)), ("URZ", dict(kind="UR", index=63)),
    ("c[0x0][0x28]", dict(kind="c", bank=0, value=0x28)), ("c[0x0][RZ]", dict(kind="c", index=255, value=0)),
    ("desc[UR4][R2.64+0x10]", dict(kind="mem", index=2, wide=2, value=0x10)),
    ("[R2.X4+URZ]", dict(kind="mem", index=2, scale=4, ureg=63)), ("[R17+-0x4]", dict(kind="mem", index=17, value=-4)),
    ("-0x800000", dict(kind="imm", value=-0x800000)), ("1.4426950216293334961", dict(kind="fimm")),
    ("+INF", dict(kind="fimm", value=float("inf"))), ("SR_TID.X", dict(kind="sr", name="SR_TID.X")),
    ("`(.L_x_1)", dict(kind="label", name=".L_x_1")), ("R4.H1_H1", dict(kind="R", index=4, sel="H1_H1")),
])
def test_operand_forms(tok, want):
    op = parse_operand(tok, 0, "f", 1)
    for k, v in want.items():
        assert getattr(op, k) == v, (tok, k)


@pytest.mark.parametrize(("body", "msg", "token"), [
    (["FOO R1, R2", "EXIT"], "unsupported SASS instruction 'FOO'", "FOO R1, R2"),
    (["IMAD.BOGUS R1, R2, R3, R4", "EXIT"], "unsupported modifier .BOGUS of IMAD", None),
    (["BRA `(.L_nowhere)", "EXIT"], "branch target '.L_nowhere'", ".L_nowhere"),
    (["IADD3 R1, R2, R3, %R4", "EXIT"], "unreadable operand", "%R4"),
])
def test_located_one_line_errors(body, msg, token):
    with pytest.raises(AssemblyError) as e:
        read_sass(listing(body), "k.sass")
    assert msg in str(e.value) and "\n" not in str(e.value)
    assert e.value.file == "k.sass" and e.value.line == 3
    if token:
        assert e.value.token == token


def test_timing_tables_list_every_opcode_and_reject_bad_entries(tmp_path):
    for arch in (80, 90):
        assert set(load_table(arch)) == set(SASS_OPCODES)
    bad = tmp_path / "t.yaml"
    good = (data_dir("sass") / "sm_90.yaml").read_text()
    bad.write_text(good.replace("MUFU:       {unit: sfu,", "MUFU:       {unit: gpu,"))
    with pytest.raises(ConfigError) as e:
        load_table(90, str(bad))
    assert "opcodes.MUFU.unit" in str(e.value) and e.value.line is not None
    bad.write_text(good.replace("  POPC:", "  POPCX:"))
    with pytest.raises(ConfigError, match="not a SASS opcode"):
        load_table(90, str(bad))


def test_with_param_names_renames_in_order():
    p = load_sass(SAXPY, 90).with_param_names(["x", "y", "a", "n"])
    assert [q.name for q in p.params] == ["x", "y", "a", "n"] and p.param("a").type == "f32"
    assert replace(p, name="s").name == "s"
