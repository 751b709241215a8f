"""Mutations of valid input text, for fuzzing parsers: whole lines deleted, duplicated or swapped;
characters flipped; the text truncated; tokens inserted; numbers replaced by awkward ones."""

from __future__ import annotations

import re

from hypothesis import strategies as st

# numbers a parser must survive: huge, negative, float, leading zeros, non-ASCII digits, words
AWKWARD_NUMBERS = (
    "0", "-1", "-0", "007", "00", "1.5", "-2.5e300", "1e999", "nan", "inf", "-inf", "0x", "0x1_0", "0b2",
    "4294967296", "18446744073709551616", "-9223372036854775809", str(1 << 200), "9" * 5000, "0x" + "f" * 300,
    "\u0663", "\u00b2", "\uff11", "1,000", "twelve", "'8'", "\"8\"", "[]", "{}", "null", "true", "~", "",
)
_NUMBER = re.compile(r"(?<![\w.%$])[-+]?(0[xXbB][0-9a-fA-F]+|[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?)(?![\w.])")


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if len(lines) < 2:
        lines.append("")
    return lines


@st.composite
def delete_line(draw, text: str) -> str:
    lines = _lines(text)
    del lines[draw(st.integers(0, len(lines) - 1))]
    return "\n".join(lines)


@st.composite
def duplicate_line(draw, text: str) -> str:
    lines = _lines(text)
    i = draw(st.integers(0, len(lines) - 1))
    lines.insert(draw(st.integers(0, len(lines))), lines[i])
    return "\n".join(lines)


@st.composite
def swap_lines(draw, text: str) -> str:
    lines = _lines(text)
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


@st.composite
def flip_character(draw, text: str) -> str:
    if not text:
        return draw(st.characters())
    i = draw(st.integers(0, len(text) - 1))
    return text[:i] + draw(st.characters(exclude_categories=("Cs",))) + text[i + 1:]


@st.composite
def truncate(draw, text: str) -> str:
    return text[:draw(st.integers(0, len(text)))]


@st.composite
def insert_token(draw, text: str, tokens: tuple[str, ...]) -> str:
    i = draw(st.integers(0, len(text)))
    token = draw(st.one_of(st.sampled_from(tokens), st.sampled_from(AWKWARD_NUMBERS), st.text(max_size=4)))
    return text[:i] + token + text[i:]


@st.composite
def replace_number(draw, text: str) -> str:
    found = list(_NUMBER.finditer(text))
    if not found:
        return text
    m = draw(st.sampled_from(found))
    return text[:m.start()] + draw(st.sampled_from(AWKWARD_NUMBERS)) + text[m.end():]


@st.composite
def mutated(draw, text: str, tokens: tuple[str, ...], max_mutations: int = 4) -> str:
    """`text` after one to `max_mutations` random mutations."""
    for _ in range(draw(st.integers(1, max_mutations))):
        mutation = draw(st.sampled_from([delete_line, duplicate_line, swap_lines, flip_character, truncate,
                                         replace_number, replace_number, "insert"]))
        text = draw(insert_token(text, tokens) if mutation == "insert" else mutation(text))
    return text


INVALID_UTF8 = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc0\xaf", b"\x00", b"\xef\xbb\xbf")


@st.composite
def as_bytes(draw, text: str) -> bytes:
    """`text` in UTF-8 with bytes spliced in that are often not UTF-8 (a stray NUL, a BOM, ...)."""
    data = text.encode()
    junk = draw(st.one_of(st.sampled_from(INVALID_UTF8), st.binary(min_size=1, max_size=4)))
    at = draw(st.integers(0, len(data)))
    return data[:at] + junk + data[at:]
