"""docs/config.md documents every field of the schema."""

import dataclasses
import re
from pathlib import Path

from gpusim.config.schema import SECTIONS, UnitSpec, all_field_paths

DOC = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def test_every_field_is_documented():
    text = DOC.read_text()
    missing = [p for p in all_field_paths() if f"`{p}`" not in text]
    assert not missing, f"fields missing from docs/config.md: {missing}"


def test_documented_fields_exist():
    text = DOC.read_text()
    known = set(all_field_paths())
    rows = re.findall(r"^\| `([a-z_<>.]+)` \|", text, flags=re.M)
    assert rows, "no field tables found"
    assert not [r for r in rows if "." in r and r not in known and not r.startswith(("cfg", "l1.sector"))]


def test_every_field_has_doc_and_unit_metadata():
    for cls in [*SECTIONS.values(), UnitSpec]:
        for f in dataclasses.fields(cls):
            assert f.metadata.get("doc"), f"{cls.__name__}.{f.name} has no doc"
            if f.type in ("int", "float"):
                assert f.metadata.get("unit"), f"{cls.__name__}.{f.name} has no unit"
                assert f.metadata.get("range"), f"{cls.__name__}.{f.name} has no range"
