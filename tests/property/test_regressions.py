"""The bugs the property tests found (docs/robustness.md), each pinned by the input that showed it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpusim.config import load_config
from gpusim.data import data_dir
from gpusim.errors import AssemblyError, ConfigError
from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.isa import assemble, assemble_file, disassemble

HEAD = """.kernel k
.param .u32 n
.param .u64 out
.reg .u32 %r, %q
.reg .s32 %s
.reg .f32 %f, %g
.reg .f16 %h
.reg .u64 %rd
.reg .pred %p
.shared .u32 tile[4]
"""
LINE = HEAD.count("\n") + 1  # the line of the first statement after HEAD


def assembly_error(body: str) -> AssemblyError:
    with pytest.raises(AssemblyError) as info:
        assemble(HEAD + body + "\n", "k.sasm")
    assert info.value.line == LINE
    return info.value


# ---- assembler: crashes with an exception other than AssemblyError ----------------------------------

@pytest.mark.parametrize("body, reason", [
    ("mov.u32 %r, 007", "leading zero in a decimal immediate"),  # was ValueError from int('007', 0)
    ("bar.sync 010", "expected a barrier number 0..15"),
    ("ld.global.u32 %r, [%rd+08]", "offset without leading zeros"),
    ("mov.u32 %r, " + "1" * 5000, "immediate does not fit .u32"),  # was ValueError: int() limit of 4300 digits
    (".maxnreg \u00b2", "expected a register count after .maxnreg (1..255)"),  # was ValueError: '²'.isdigit()
    (".shared .u32 big[" + "9" * 5000 + "]", "expected a shared array size"),  # was ValueError
    (".shared .align " + "9" * 5000 + " .u32 big", "expected an alignment"),  # was ValueError
    (".reg .u32 %x<99999999999>", "expected a register count"),  # was a hang filling memory
])
def test_numbers_the_assembler_once_crashed_on(body, reason):
    assert reason in assembly_error(body).reason


def test_huge_hex_immediate_for_a_float_is_infinity():  # was OverflowError: int too large to convert to float
    for sign, want in (("", np.inf), ("-", -np.inf)):
        p = assemble(HEAD + f"mov.f32 %f, {sign}0x{'f' * 300}\n")
        assert p.instructions[0].srcs[0].value == want


def test_kernel_file_that_is_not_utf8_names_the_line(tmp_path):  # was UnicodeDecodeError
    path = tmp_path / "k.sasm"
    path.write_bytes(b".kernel k\n.reg .u32 %r\n  mov.u32 %r, \xff1\n")
    with pytest.raises(AssemblyError) as info:
        assemble_file(path)
    assert (info.value.line, info.value.col) == (3, 15) and "not UTF-8" in info.value.reason


# ---- assembler: errors found at run time instead of assembly time -------------------------------------

@pytest.mark.parametrize("body, reason", [
    ("setp.num.u32 %p, %r, %q", "needs a float type"),  # executor raised KeyError: 'num'
    ("setp.equ.s32 %p, %s, 1", "needs a float type"),
    ("ld.param.u32 %r, [n+16]", "outside the 16-byte parameter block"),  # executor raised ValueError
    ("ld.param.u64 %rd, [out+4]", "reads 8 bytes at offset 12"),
    ("ld.param.u32 %r, [n-4]", "at offset -4"),
    ("ld.global.u32 %r, [%rd+0x10000000000000000]", "out of the 64-bit range"),  # executor raised OverflowError
])
def test_instructions_that_failed_only_when_run(body, reason):
    assert reason in assembly_error(body).reason


# ---- assembler: disassembly round trip and line numbers --------------------------------------------

@pytest.mark.parametrize("immediate, want", [
    ("mov.f16 %h, 0f3DCCCCCD", float(np.float16(np.float32(0.1)))),  # was the unrounded float32 0.1
    ("mov.f32 %f, 0d3FB999999999999A", float(np.float32(0.1))),  # was the unrounded float64 0.1
    ("mov.f32 %f, 0x1000001", 16777216.0),  # was 16777217.0, not a float32
])
def test_float_immediates_are_rounded_to_the_type_in_every_spelling(immediate, want):
    p = assemble(HEAD + immediate + "\n")
    assert p.instructions[0].srcs[0].value == want
    assert assemble(disassemble(p)) == p


def test_param_after_shared_of_the_same_name_is_an_error():
    # was accepted, and the disassembly (params first) did not assemble
    assert "declared twice" in assembly_error(".param .u32 tile").reason


@pytest.mark.parametrize("separator", ["\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"])
def test_only_newlines_end_a_line(separator):
    # str.splitlines() also broke lines at these: a comment's tail became code, and lines were miscounted
    p = assemble(HEAD + f"    mov.u32 %r, 1 // a comment {separator} 0 tail\n    mov.u32 %q, 2\n")
    assert [i.line for i in p.instructions[:2]] == [LINE, LINE + 1]
    with pytest.raises(AssemblyError) as info:
        assemble(HEAD + f"// {separator}\n    frob.u32 %r\n")
    assert info.value.line == LINE + 1


def test_label_at_the_end_names_its_own_line():  # was the file's last line
    with pytest.raises(AssemblyError) as info:
        assemble(HEAD + "    exit\nEND:\n\n\n")
    assert info.value.line == LINE + 1 and info.value.token == "END"


# ---- functional semantics ------------------------------------------------------------------------

def run_one(body: str, inputs: dict[str, tuple[str, list]], result: tuple[str, str]) -> np.ndarray:
    """Per lane: load each register from its array, run `body`, return register `result` (name, type)."""
    decl = "".join(f".reg .{t} {r}\n" for r, (t, _) in inputs.items()) + f".reg .{result[1]} {result[0]}\n"
    params = "".join(f".param .u64 p{i}\n" for i in range(len(inputs)))
    loads = "".join(f"    ld.param.u64 %base, [p{i}]\n    add.u64 %base, %base, %off\n"
                    f"    ld.global.{t} {r}, [%base]\n" for i, (r, (t, _)) in enumerate(inputs.items()))
    src = (f".kernel t\n{params}.param .u64 out\n{decl}.reg .u32 %lane\n.reg .u64 %base, %off\n"
           "    mov.u32 %lane, %tid.x\n    mul.wide.u32 %off, %lane, 4\n"
           f"{loads}{body}\n    ld.param.u64 %base, [out]\n    add.u64 %base, %base, %off\n"
           f"    st.global.{result[1]} [%base], {result[0]}\n")
    mem = GlobalMemory()
    arrays = [np.asarray(v, dtype={"f32": np.float32, "s32": np.int32, "u32": np.uint32}[t])
              for t, v in inputs.values()]
    n = arrays[0].size
    out = np.zeros(n, dtype=np.float32 if result[1] == "f32" else np.uint32)
    addrs = {f"p{i}": mem.alloc_array(a) for i, a in enumerate(arrays)} | {"out": mem.alloc_array(out)}
    execute(assemble(src, "t.sasm"), Launch.make(1, n), addrs, mem)
    return mem.read(addrs["out"], out.dtype, n)


def test_popc_of_a_negative_s32_counts_its_bits():  # numpy's bitwise_count counted the bits of |a|
    got = run_one("    popc.s32 %d, %a", {"%a": ("s32", [-60, -1, 7, -(2**31)])}, ("%d", "u32"))
    assert got.tolist() == [27, 32, 3, 1]


def test_cvt_with_integer_rounding_between_floats_rounds_to_an_integer():  # the .rni was ignored
    a = [2.5, -2.5, 0.7, -0.2]
    for mode, want in (("rni", [2, -2, 1, -0.0]), ("rzi", [2, -2, 0, -0.0]), ("rmi", [2, -3, 0, -1]),
                       ("rpi", [3, -2, 1, -0.0])):
        got = run_one(f"    cvt.{mode}.f32.f32 %d, %a", {"%a": ("f32", a)}, ("%d", "f32"))
        assert got.tolist() == want, mode


def test_float_saturation_turns_nan_into_zero():  # .sat kept NaN (PTX: NaN -> +0.0)
    a = [np.nan, 0.25, 3.0, -3.0]
    want = [0.0, 0.25, 1.0, 0.0]
    assert run_one("    cvt.sat.f32.f32 %d, %a", {"%a": ("f32", a)}, ("%d", "f32")).tolist() == want
    assert run_one("    add.sat.f32 %d, %a, 0.0", {"%a": ("f32", a)}, ("%d", "f32")).tolist() == want


def test_float_min_max_order_negative_zero_below_positive_zero():
    # numpy's fmin/fmax return either zero (which one depends on the CPU's SIMD path)
    a, b = [0.0, -0.0, -0.0, np.nan], [-0.0, 0.0, -0.0, -0.0]
    signs = {}
    for op in ("min", "max"):
        got = run_one(f"    {op}.f32 %d, %a, %b", {"%a": ("f32", a), "%b": ("f32", b)}, ("%d", "f32"))
        signs[op] = np.signbit(got).tolist()
    assert signs == {"min": [True, True, True, True], "max": [False, False, True, True]}


def test_an_array_of_negative_zeros_reaches_global_memory():
    """Fresh memory skips copying an all-zero array; -0.0 compares equal to 0 but its bytes are not zero
    (the min/max test above read +0.0 back for b = [-0.0, 0.0, -0.0, -0.0])."""
    from gpusim.functional.memory import GlobalMemory

    mem = GlobalMemory()
    a = np.array([-0.0, 0.0, -0.0], dtype=np.float32)
    got = mem.read(mem.alloc_array(a), np.float32, 3)
    assert np.signbit(got).tolist() == [True, False, True]
    assert mem.read(mem.alloc_array(np.zeros(3, np.float32)), np.float32, 3).tolist() == [0.0, 0.0, 0.0]


# ---- config loader -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, line, field, reason", [
    (b"chip:\n  architecture: \xff\n", 2, None, "not UTF-8"),  # was UnicodeDecodeError
    (b"chip:\n  gpcs: 7\x1f\n", 2, None, "malformed YAML"),  # a ReaderError: the line was missing
    # was ValueError (a plain date is text now; the tag still asks for a timestamp)
    (b"chip:\n  architecture: !!timestamp 2001-02-30\n", 2, "chip.architecture", "day is out of range"),
    (b"chip:\n  gpcs: !!int seven\n", 2, "chip.gpcs", "cannot read 'seven'"),  # was ValueError
    (b"chip:\n  gpcs: !!int\n", 2, "chip.gpcs", "cannot read ''"),  # was IndexError inside PyYAML
    (b"chip:\n  !!int gpcs: 7\n", 2, "chip.gpcs", "cannot read 'gpcs'"),  # a key: was ValueError
    (b"chip:\n  gpcs: !!python/object:os.system x\n", 2, "chip.gpcs", "could not determine a constructor"),
    (b"chip:\n  gpcs: " + b"9" * 5000 + b"\n", 2, "chip.gpcs", "cannot read"),  # was ValueError (4300 digits)
    (b"chip:\n  ? &k [*k]\n  : 1\n", 2, "chip", "keys must be names, got a list"),  # was RecursionError in repr
], ids=["invalid-utf8", "control-character", "bad-date", "int-tag", "empty-int", "int-key", "python-tag",
        "5000-digits", "recursive-key"])
def test_yaml_the_loader_once_crashed_on(tmp_path, text, line, field, reason):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert (err.file, err.line, err.field) == (str(path), line, field)
    assert reason in err.reason


def test_huge_integer_for_a_number_field_names_the_field(tmp_path):  # was OverflowError from float()
    a100 = (data_dir("configs") / "a100.yaml").read_text()
    path = tmp_path / "huge.yaml"
    path.write_text(re.sub(r"clock_mhz: \d+", "clock_mhz: 0x" + "f" * 300, a100))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.field == "chip.clock_mhz" and "expected a number" in info.value.reason
    with pytest.raises(ConfigError) as info:
        load_config("a100", overrides={"chip.clock_mhz": 1 << 2000})
    assert info.value.field == "chip.clock_mhz"
