"""Property: whatever text or bytes it is given, the assembler returns a Program or raises
AssemblyError naming the file, a line of it and a column on that line; nothing else escapes."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gpusim.data import data_dir
from gpusim.errors import AssemblyError
from gpusim.isa import OPCODES, assemble, assemble_file
from gpusim.isa.program import SPECIAL_REGISTERS

from .mutate import as_bytes, mutated
from .profiles import budget
from .sasm_gen import kernels

SHIPPED = tuple(p.read_text() for p in sorted(data_dir("workloads").rglob("*.sasm")))
TOKENS = (*OPCODES, *SPECIAL_REGISTERS, ".kernel", ".entry", ".param", ".reg", ".shared", ".align", ".maxnreg",
          ".u32", ".f32", ".pred", ".u64", ".b8", ".global", ".wide", ".rn", "%r", "%r<9>", "%p", "%", "@", "@!",
          "!", "[", "]", "[%", "+", "-", ",", ";", ":", "L:", "//", "\n", "\t", "\r", "\x0c", "\u2028", "\x00",
          "0f", "0d", "0fFFFFFFFF", "0d7FF8000000000001", "tile", "<", ">", "%r<99999999999>")
VALID = st.one_of(st.sampled_from(SHIPPED), kernels())


def lines_of(text: str) -> list[str]:
    """The text's lines as an editor shows them (\\n, \\r\\n or \\r ends a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def check_assembles_or_reports(text: str, file: str = "fuzz.sasm") -> None:
    try:
        assemble(text, file)
    except AssemblyError as e:
        check_location(e, lines_of(text), file)


def check_location(e: AssemblyError, lines: list[str], file: str) -> None:
    assert e.file == file
    assert 1 <= e.line <= len(lines), (e.line, len(lines))
    assert 1 <= e.col <= len(lines[e.line - 1]) + 1, (e.col, lines[e.line - 1])
    assert str(e).startswith(f"{file}:{e.line}:{e.col}: ")


@budget(300)
@given(VALID.flatmap(lambda text: mutated(text, TOKENS)))
def test_mutated_kernels_assemble_or_raise_assembly_error(text):
    check_assembles_or_reports(text)


@budget(200)
@given(st.one_of(st.text(), st.lists(st.sampled_from(TOKENS), max_size=30).map(" ".join)))
def test_random_text_assembles_or_raises_assembly_error(text):
    check_assembles_or_reports(".kernel k\n" + text)
    check_assembles_or_reports(text)


@budget(150)
@given(st.one_of(st.binary(), VALID.flatmap(as_bytes)))
def test_random_bytes_in_a_file_assemble_or_raise_assembly_error(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.sasm"
        path.write_bytes(data)
        try:
            assemble_file(path)
        except AssemblyError as e:
            check_location(e, lines_of(data.decode("utf-8", errors="replace")), str(path))
