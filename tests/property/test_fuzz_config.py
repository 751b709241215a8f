"""Property: whatever a YAML file or an override holds, `load_config` returns a Config or raises
ConfigError naming the file and a line of it, and the field wherever the problem is a field's;
YAML bombs, recursive aliases and deep nesting fail fast instead of hanging or eating memory."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gpusim.config import load_config
from gpusim.data import data_dir
from gpusim.errors import ConfigError

from .mutate import AWKWARD_NUMBERS, as_bytes, mutated
from .profiles import budget

CONFIGS = data_dir("configs")
BUILTIN = tuple(sorted(p.stem for p in CONFIGS.glob("*.yaml")))
TEXTS = tuple((CONFIGS / f"{name}.yaml").read_text() for name in BUILTIN)
TOKENS = (": ", ":", "- ", "-", "[", "]", "{", "}", ",", "&a ", "*a", "&a [*a]", "!!python/object:os.system ",
          "!!int ", "!!float ", "!!binary ", "!!timestamp ", "!!set ", "!!map ", "!foo ", "<<: ", "? ", "|", ">",
          "---\n", "...\n", "%YAML 1.1\n", "\t", "\n", "  ", "#", "'", '"', "\\", "extends: a100\n",
          "extends: nowhere\n", "extends: ", "unknown_field: 1\n", "chip:", "sm:", "units:", "~", "null", "yes",
          "2001-12-14", ".inf", ".nan", "0o17", "1_000", "0x1F", "\x00", "\x85", "\u2028", "\ufeff")
# errors that may name no field: the document as a whole is wrong, or a top-level key is no name
NO_FIELD_REASONS = ("malformed YAML", "not UTF-8", "empty file", "expected a mapping of sections", "cannot read ''",
                    "keys must be names")


def values() -> st.SearchStrategy:
    """Values of every YAML type, awkward ones first."""
    scalars = st.one_of(st.sampled_from([None, True, False, 0, -1, 1.5, float("inf"), float("nan"), 10**30, -(10**30),
                                         "", "x", "8.0", "1e999"]),
                        st.integers(), st.floats(), st.text(max_size=8))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                        max_leaves=6)


def field_paths(tree: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        out.append(path)
        if isinstance(value, dict):
            out += field_paths(value, path)
    return out


A100_TREE = yaml.safe_load((CONFIGS / "a100.yaml").read_text())
A100_PATHS = tuple(field_paths(A100_TREE))


def yaml_lines(text: str) -> int:
    """How many lines YAML counts in `text` (it also breaks lines at \\r, NEL, LS and PS)."""
    return 1 + sum(text.replace("\r\n", "\n").count(c) for c in "\n\r\x85\u2028\u2029")


def check_loads_or_reports(path: Path, **kw) -> None:
    """Load `path`: a Config, or a ConfigError naming a line of `path` or of a file it extends (an error
    in a key the base file set names the base), and the field unless the whole document is wrong."""
    try:
        load_config(path, **kw)
    except ConfigError as e:
        named = Path(e.file)
        assert named == path or named.resolve().parent in (path.parent.resolve(), CONFIGS.resolve()), e
        text = named.read_bytes().decode("utf-8", errors="replace")
        assert e.line is not None and 1 <= e.line <= yaml_lines(text), (e.line, yaml_lines(text), e)
        if not e.reason.startswith(NO_FIELD_REASONS):
            assert e.field, e
        assert str(e).startswith(f"{e.file}:{e.line}: ")


def check_file(data: str | bytes, name: str = "fuzz.yaml", base: str | None = None) -> None:
    """Write `data` into a fresh folder (beside a copy of `base` when given) and load it."""
    with tempfile.TemporaryDirectory() as tmp:
        if base is not None:
            (Path(tmp) / f"{base}.yaml").write_text((CONFIGS / f"{base}.yaml").read_text())
        path = Path(tmp) / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        check_loads_or_reports(path)


@budget(150)
@given(st.sampled_from(TEXTS).flatmap(lambda text: mutated(text, TOKENS)))
def test_mutated_config_files_load_or_raise_config_error(text):
    check_file(text)


@budget(100)
@given(st.data())
def test_structurally_mutated_configs_name_the_field(data):
    """Set a field to a value of another type, delete a field, or add an unknown one."""
    tree = yaml.safe_load((CONFIGS / "a100.yaml").read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(A100_PATHS))
        *parents, key = path.split(".")
        node = tree
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        action = data.draw(st.sampled_from(["set", "set", "delete", "unknown"]))
        if action == "set":
            node[key] = data.draw(values())
        elif action == "delete":
            node.pop(key, None)
        else:
            node[data.draw(st.text(min_size=1, max_size=8))] = data.draw(values())
    check_file(yaml.safe_dump(tree, allow_unicode=True))


@budget(100)
@given(st.sampled_from(TEXTS).flatmap(lambda text: mutated(text, TOKENS, max_mutations=2)))
def test_mutated_child_of_extends_loads_or_raises_config_error(text):
    """A child overlay (`extends: base`) whose own lines are mutated: errors name the child."""
    overlay = "\n".join(line for line in text.split("\n") if not line.startswith("description"))
    check_file(f"extends: base\ndescription: child\n{overlay}", "child.yaml", base="a100")


@budget(100)
@given(st.one_of(st.binary(), st.sampled_from(TEXTS).flatmap(as_bytes), st.text()))
def test_random_bytes_and_text_load_or_raise_config_error(data):
    check_file(data)


@budget(100)
@given(st.dictionaries(st.one_of(st.sampled_from(A100_PATHS), st.text(max_size=12)),
                       st.one_of(values(), st.sampled_from(AWKWARD_NUMBERS)), min_size=1, max_size=3))
def test_random_overrides_load_or_raise_config_error_naming_the_field(overrides):
    try:
        load_config("a100", overrides=overrides)
    except ConfigError as e:
        assert e.field is not None, e  # an override's key, or the field a consistency rule names
        assert e.file == "<overrides>" or e.line is not None, e


# ---- expansion and nesting: each must fail fast with a ConfigError naming a line ------------------

LAUGHS = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10))


@pytest.mark.parametrize("text", [
    pytest.param(LAUGHS, id="billion-laughs"),
    pytest.param("chip: " + LAUGHS.replace("\n", " ").replace("a0: ", "{a0: ", 1).replace("]", "],")[:-1] + "}\n",
                 id="billion-laughs-flow"),
    pytest.param("chip: &x [*x]\n", id="recursive-sequence"),
    pytest.param("chip: &x {a: *x}\n", id="recursive-mapping"),
    pytest.param("chip: " + "[" * 50_000 + "]" * 50_000 + "\n", id="deep-sequence"),
    pytest.param("chip: " + "{a: " * 50_000 + "1" + "}" * 50_000 + "\n", id="deep-flow-mapping"),
    pytest.param("".join("  " * i + f"k{i}:\n" for i in range(3000)), id="deep-block-mapping"),
])
def test_expansion_and_nesting_fail_fast(text, tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert time.perf_counter() - start < 5
    assert info.value.line is not None and info.value.file == str(path)
