"""Load a hardware configuration from YAML: line numbers, `extends:` overlays, dotted overrides,
type/range/consistency validation. Every problem is a `ConfigError` rendering
`file:line: field.path: what is wrong`, where file and line are those of the offending key (in the
file that last set it, so an error in a child of `extends:` names the child)."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import typing
from pathlib import Path
from typing import Any

import yaml

from gpusim.config.overrides import OVERRIDE_FILE, derive, resolve_overrides
from gpusim.config.schema import (
    OPCODES,
    OPTIONAL_UNIT_CLASSES,
    TENSOR_FIELDS,
    UNIT_CLASSES,
    Config,
    OpcodeSpec,
    UnitSpec,
    UnitTable,
)
from gpusim.data import data_dir
from gpusim.errors import ConfigError

# where[path] = (file, line) of the key that last set `path` ("" is the document itself)
Where = dict[str, tuple[str, int | None]]


def config_dirs() -> list[Path]:
    """Folders searched for built-in names: `$GPUSIM_CONFIG_PATH` (os.pathsep-separated) first, then
    the shipped configs (`gpusim/data/configs/`, package data)."""
    dirs = [Path(p) for p in os.environ.get("GPUSIM_CONFIG_PATH", "").split(os.pathsep) if p]
    dirs.append(data_dir("configs"))
    return dirs


def builtin_configs() -> list[str]:
    """Names `load_config` accepts without a path, sorted."""
    names: set[str] = set()
    for d in config_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def resolve(name_or_path: str | os.PathLike, relative_to: Path | None = None) -> Path | None:
    """A built-in name or a path (relative to `relative_to`'s folder, then the working directory)
    -> an existing file, or None."""
    text = str(name_or_path)
    candidates: list[Path] = []
    if text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
        p = Path(text).expanduser()
        if not p.is_absolute() and relative_to is not None:
            candidates.append(relative_to.parent / p)
        candidates.append(p)
    else:
        if relative_to is not None:
            candidates.append(relative_to.parent / f"{text}.yaml")
        candidates += [d / f"{text}.yaml" for d in config_dirs()]
        candidates.append(Path(text))
    for c in candidates:
        if c.is_file():
            return c
    return None


def load_config(name_or_path: str | os.PathLike,
                overrides: dict[str, Any] | None = None) -> Config:
    """Load, overlay, override and validate a configuration.

    `name_or_path` is a built-in name (`"a100"`, see `builtin_configs()`) or a path to a YAML file.
    `overrides` maps fields to values (`{"chip.sm_count": 54}`, or by a unique tail: `{"sm_count": 54}`;
    gpusim.config.overrides), applied last and validated like the file, with the fields derived from
    them moved along (`dram.bandwidth_gbps` sets `dram.data_rate_mtps`); an error in one names
    `<overrides>` and the field."""
    overrides = resolve_overrides(overrides)
    path = resolve(name_or_path)
    if path is None:
        raise ConfigError(f"no built-in config or file named {str(name_or_path)!r} "
                          f"(built-ins: {', '.join(builtin_configs()) or 'none'})")
    try:
        stamp = (str(path), os.stat(path).st_mtime_ns)
    except OSError:
        stamp = None
    data, where = _load_tree(path, chain=())
    for key, value in overrides.items():
        _apply_override(data, where, key, value)
    moved = derive(overrides, lambda p: _get(data, p))
    for key, (value, _) in moved.items():
        _apply_override(data, where, key, value)
    try:
        cfg = _build_config(data, where, name=_config_name(path), source=str(path))
        _check_consistency(cfg, where)
    except ConfigError as exc:
        if exc.field not in moved:
            raise
        raise ConfigError(f"moves {exc.field} with it: {exc.reason}", file=OVERRIDE_FILE,
                          field=moved[exc.field][1]) from None
    if not overrides and stamp is not None:
        _AS_FILED[stamp[0]] = (stamp[1], cfg)
    return cfg


# path -> (mtime_ns, the Config loaded from that version of the file without overrides; Configs are
# frozen): `config_overrides` compares with it instead of loading the file again. One entry per file:
# a newer version replaces the older one
_AS_FILED: dict[str, tuple[int, Config]] = {}


def _get(data: dict, path: str) -> Any:
    """The value at a dotted path of the tree, or None."""
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def config_overrides(cfg: Any) -> dict[str, Any]:
    """The dotted overrides that turn the config's own file (`cfg.source`) into `cfg`: every field whose
    value differs, derived ones included (so a result records what it ran on beyond the file's name;
    loading the file with them gives `cfg.hash()` again). Empty when the file cannot be read."""
    try:
        base = _file_config(cfg.source, os.stat(cfg.source).st_mtime_ns)
    except Exception:  # noqa: BLE001 - a file moved or edited since: nothing to compare with
        return {}
    mine = cfg.to_dict()
    out: dict[str, Any] = {}

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict) and path.count(".") < 3:
            for key in dict.fromkeys([*a, *b]):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else key)
        elif a != b:
            out[path] = b

    walk({k: v for k, v in base.items() if k not in ("name", "source")},
         {k: v for k, v in mine.items() if k not in ("name", "source")}, "")
    return out


@functools.lru_cache(maxsize=16)
def _file_config(path: str, mtime_ns: int) -> dict[str, Any]:
    """A config file as loaded without overrides (to_dict), once per version of the file."""
    stamp, cfg = _AS_FILED.get(path, (None, None))
    return (cfg if stamp == mtime_ns else load_config(path)).to_dict()


def _config_name(path: Path) -> str:
    return path.stem


# ----------------------------------------------------------------------------------------------
# YAML -> plain tree + where-map


def _load_tree(path: Path, chain: tuple[Path, ...]) -> tuple[dict, Where]:
    file = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", file=file) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text: byte {raw[exc.start]:#04x}", file=file,
                          line=raw[:exc.start].count(b"\n") + 1) from None
    try:
        node = _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise ConfigError(f"malformed YAML: {problem}", file=file, line=line) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        raise ConfigError(f"malformed YAML: {exc.reason} {exc.character!r}", file=file,
                          line=text[:exc.position].count("\n") + 1) from None
    if node is None:
        raise ConfigError("empty file: expected a mapping of sections", file=file, line=1)
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError("expected a mapping of sections at the top level", file=file,
                          line=node.start_mark.line + 1)
    where: Where = {"": (file, node.start_mark.line + 1)}
    data = _to_plain(node, "", file, where, _Expansion())

    if "extends" not in data:
        return data, where
    target = data.pop("extends")
    ext_file, ext_line = where.pop("extends")
    if not isinstance(target, str) or not target:
        raise ConfigError(f"expected a built-in name or a path, got {_show(target)}", file=ext_file,
                          line=ext_line, field="extends")
    base_path = resolve(target, relative_to=path)
    if base_path is None:
        raise ConfigError(f"no built-in config or file named {target!r} "
                          f"(built-ins: {', '.join(builtin_configs()) or 'none'})",
                          file=ext_file, line=ext_line, field="extends")
    chain = chain + (path.resolve(),)
    if base_path.resolve() in chain:
        raise ConfigError(f"extends cycle: {' -> '.join(p.name for p in chain + (base_path,))}",
                          file=ext_file, line=ext_line, field="extends")
    base, base_where = _load_tree(base_path, chain)
    merged = _deep_merge(base, data)
    base_where.update({k: v for k, v in where.items() if k})
    # keep the child's own document line for top-level problems
    base_where[""] = where[""]
    return merged, base_where


MAX_DEPTH = 64  # nesting of mappings and sequences in a file (a configuration needs 3)
MAX_VALUES = 100_000  # values in a file once aliases are expanded (a configuration has about 200)


# Plain scalars are resolved as people write numbers (YAML 1.2's core schema), not as YAML 1.1 does:
# `1e9` and `1.41e3` are numbers (1.1 needs a dot: strings), a date is text, and only true/false are
# booleans. What YAML 1.1 would read otherwise is refused where it stands (`_YAML11_ODDITIES`).
_INT = r"[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+|0b[01_]+"
_FLOAT = (r"[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9_]*)(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
          r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_YAML11_ODDITIES = (
    (re.compile(r"(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)"),
     "{v!r} is a YAML 1.1 boolean ({b}): write true or false, or quote it for text"),
    (re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"),
     "{v!r} is a YAML 1.1 base-60 number ({s}): write the number, or quote it for text"),
    (re.compile(r"[-+]?0[0-9_]+"),
     "{v!r} has a leading zero, which YAML 1.1 reads as octal: write it without the zero (or 0x...), "
     "or quote it for text"),
)


class _Loader(yaml.SafeLoader):
    """SafeLoader composing at most MAX_DEPTH levels, so that deep nesting is a YAML error with a
    line rather than a RecursionError; plain scalars resolve as `_INT`, `_FLOAT`, true/false and null."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers
                if tag.rsplit(":", 1)[-1] not in ("bool", "int", "float", "timestamp")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def __init__(self, stream):
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent, index):
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(f"^(?:{_INT})$"), list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(f"^(?:{_FLOAT})$"), list("-+.0123456789"))

if getattr(yaml, "__with_libyaml__", False):
    class _CLoader(yaml.CSafeLoader):
        """libyaml's parser (in PyYAML's wheel) with `_Loader`'s resolvers: the same nodes, lines and
        tags (a plain scalar's style is '' here, None there), composed about ten times faster."""

    _CLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
else:  # pragma: no cover - PyYAML built without libyaml
    _CLoader = None


def _compose(text: str) -> yaml.Node | None:
    """The document's node tree: by libyaml when it is there and the document is well-formed and
    nested at most MAX_DEPTH levels (counted on its events first: libyaml composes recursively, in C);
    otherwise by `_Loader`, whose errors are the ones reported (the same message whichever parser)."""
    if _CLoader is not None:
        try:
            depth = 0
            for event in yaml.parse(text, Loader=_CLoader):
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
                    if depth > MAX_DEPTH:
                        break
                elif isinstance(event, yaml.CollectionEndEvent):
                    depth -= 1
            else:
                return yaml.compose(text, Loader=_CLoader)
        except yaml.YAMLError:
            pass
    return yaml.compose(text, Loader=_Loader)


def _yaml11_oddity(node: yaml.ScalarNode) -> str | None:
    """What is wrong with a plain scalar that YAML 1.1 would read as something else than it reads here."""
    if node.style or node.tag != "tag:yaml.org,2002:str":  # (plain: None, or '' from libyaml)
        return None
    v = node.value
    for rx, msg in _YAML11_ODDITIES:
        if rx.fullmatch(v):
            b = v.lower() in ("yes", "on")
            s60 = None
            if ":" in v:
                sign = -1 if v.startswith("-") else 1
                total = 0.0
                for part in v.lstrip("+-").replace("_", "").split(":"):
                    total = total * 60 + float(part)
                s60 = sign * (int(total) if total.is_integer() else total)
            return msg.format(v=v, b=str(b).lower(), s=s60)
    return None


class _Expansion:
    """What `_to_plain` has expanded so far: the nodes on the current path (an alias to one of them
    is a cycle) and how many values in all (aliases may repeat a subtree exponentially often)."""

    def __init__(self):
        self.open: set[int] = set()
        self.values = 0


def _to_plain(node: yaml.Node, path: str, file: str, where: Where, exp: _Expansion) -> Any:
    line = node.start_mark.line + 1
    exp.values += 1
    if exp.values > MAX_VALUES:
        raise ConfigError(f"more than {MAX_VALUES} values once aliases are expanded (an alias bomb?)",
                          file=file, line=line, field=path or None)
    if id(node) in exp.open:
        raise ConfigError("an alias refers to a node that contains it", file=file, line=line, field=path or None)
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node, path, file)
    exp.open.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        out_list = [_to_plain(item, f"{path}[{i}]", file, {}, exp) for i, item in enumerate(node.value)]
        exp.open.discard(id(node))
        return out_list
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):
            raise ConfigError("keys must be names, got a " + ("mapping" if isinstance(key_node, yaml.MappingNode)
                                                              else "list"), file=file, line=line, field=path or None)
        key = _scalar(key_node, f"{path}.{key_node.value}" if path else key_node.value, file)
        if not isinstance(key, str):
            raise ConfigError(f"keys must be names, got {_show(key)}", file=file, line=line,
                              field=path or None)
        sub = f"{path}.{key}" if path else key
        if key in out:
            raise ConfigError("duplicate key", file=file, line=line, field=sub)
        where[sub] = (file, line)
        out[key] = _to_plain(value_node, sub, file, where, exp)
    exp.open.discard(id(node))
    return out


def _scalar(node: yaml.ScalarNode, path: str, file: str) -> Any:
    odd = _yaml11_oddity(node)
    if odd is not None:
        raise ConfigError(odd, file=file, line=node.start_mark.line + 1, field=path or None)
    try:
        return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    except Exception as exc:  # PyYAML's constructors raise what they meet (ValueError for !!int x or
        # 2001-02-30, IndexError for an empty !!int, ConstructorError for !foo): each means a bad value
        problem = getattr(exc, "problem", None) or str(exc) or type(exc).__name__
        value = node.value if len(node.value) <= 40 else node.value[:37] + "..."
        raise ConfigError(f"cannot read {value!r} as {node.tag}: {problem}", file=file,
                          line=node.start_mark.line + 1, field=path or None) from None


def _deep_merge(base: dict, child: dict) -> dict:
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _apply_override(data: dict, where: Where, key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        sub = node.get(part)
        if sub is None and parts[0] == "opcodes" and i <= 1:  # a table of names: an entry may be new
            sub = node[part] = {}
            where[".".join(parts[:i + 1])] = (OVERRIDE_FILE, None)
        if not isinstance(sub, dict):
            raise ConfigError(f"no such section {'.'.join(parts[:i + 1])!r}", file=OVERRIDE_FILE,
                              field=key)
        node = sub
    if not parts[-1]:
        raise ConfigError("empty field name", file=OVERRIDE_FILE, field=key)
    node[parts[-1]] = value
    where[key] = (OVERRIDE_FILE, None)
    # an override replacing a whole section: its children now come from the override too
    for k in [k for k in where if k.startswith(key + ".")]:
        where[k] = (OVERRIDE_FILE, None)


# ----------------------------------------------------------------------------------------------
# tree -> dataclasses


def _err(where: Where, path: str, message: str, at: str | None = None) -> ConfigError:
    """A ConfigError for `path`, located at `at` (default `path`), falling back to the nearest
    enclosing key that has a location."""
    loc = at if at is not None else path
    while loc not in where and loc:
        loc = loc.rpartition(".")[0]
    file, line = where.get(loc, (None, None))
    return ConfigError(message, file=file, line=line, field=path or None)


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


def _build_config(data: dict, where: Where, *, name: str, source: str) -> Config:
    kwargs: dict[str, Any] = {"name": name, "source": source}
    kwargs.update(_fields_of(Config, data, "", where))
    return Config(**kwargs)


def _fields_of(cls: type, data: Any, path: str, where: Where) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _err(where, path, f"expected a mapping of fields, got {_show(data)}")
    fields = [f for f in dataclasses.fields(cls) if f.metadata.get("yaml", True)]
    known = {f.name for f in fields}
    for key in data:
        if key not in known:
            sub = f"{path}.{key}" if path else key
            hint = ""
            close = _closest(key, known)
            if close:
                hint = f" (did you mean {close!r}?)"
            raise _err(where, sub, f"unknown key{hint}")
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in fields:
        sub = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            if f.default is not dataclasses.MISSING:  # an optional field
                out[f.name] = f.default
                continue
            raise _err(where, sub, "missing key", at=path)
        out[f.name] = _value(hints[f.name], f, data[f.name], sub, where)
    return out


def _closest(key: str, known: set[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    return found[0] if found else None


def _value(tp: Any, f: dataclasses.Field, value: Any, path: str, where: Where) -> Any:
    meta = f.metadata
    if dataclasses.is_dataclass(tp):
        return tp(**_fields_of(tp, value, path, where))
    optional = [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)]
    if optional and type(None) in typing.get_args(tp):  # an optional section (cpu)
        return None if value is None else _value(optional[0], f, value, path, where)
    origin = typing.get_origin(tp)
    if origin is not None and origin.__name__ == "Mapping":  # units, opcodes
        return _opcodes(value, path, where) if f.name == "opcodes" else _units(value, path, where)
    if origin is tuple:
        if isinstance(value, tuple):  # from an override
            value = list(value)
        if not isinstance(value, list):
            raise _err(where, path, f"expected a list of integers, got {_show(value)}")
        n = meta.get("length")
        if n is not None and len(value) != n:
            raise _err(where, path, f"expected {n} integers, got {len(value)}")
        if not value:
            raise _err(where, path, "expected at least one value")
        for i, item in enumerate(value):
            _check_scalar(int, meta, item, f"{path}[{i}]", where, at=path)
        return tuple(value)
    return _check_scalar(tp, meta, value, path, where)


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _check_scalar(tp: type, meta: Any, value: Any, path: str, where: Where, at: str | None = None) -> Any:
    if tp is int and isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        value = int(value)  # 4e9 bytes, 1.41e3 MHz: a whole number written as people write it
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
    }[tp]
    if not ok:
        extra = ' (quote it: "8.0")' if path.endswith("compute_capability") else ""
        raise _err(where, path, f"expected {_TYPE_NAMES[tp]}, got {_show(value)}{extra}", at=at)
    if tp is float:
        if isinstance(value, int) and abs(value) > 2**1023:  # float() would raise OverflowError
            raise _err(where, path, f"expected a number, got an integer of {len(str(abs(value)))} digits", at=at)
        value = float(value)
        if value != value:
            raise _err(where, path, "expected a number, got NaN", at=at)
    rng = meta.get("range")
    if rng is not None and tp in (int, float):
        lo, hi = rng
        unit = f" {meta['unit']}" if meta.get("unit") else ""
        if lo is not None and value < lo:
            raise _err(where, path, f"{value!r}{unit} is below the minimum {lo!r}", at=at)
        if hi is not None and value > hi:
            raise _err(where, path, f"{value!r}{unit} is above the maximum {hi!r}", at=at)
    choices = meta.get("choices")
    if choices and value not in choices:
        raise _err(where, path, f"{value!r} is not one of {', '.join(map(repr, choices))}", at=at)
    if path.endswith("compute_capability"):
        major, dot, minor = value.partition(".")
        if not (dot and major.isdigit() and minor.isdigit()):
            raise _err(where, path, f"expected 'major.minor' like \"8.0\", got {value!r}", at=at)
    return value


def _units(value: Any, path: str, where: Where) -> UnitTable:
    if not isinstance(value, dict):
        raise _err(where, path, f"expected a mapping of unit classes, got {_show(value)}")
    allowed = UNIT_CLASSES + OPTIONAL_UNIT_CLASSES
    for key in value:
        if key not in allowed:
            raise _err(where, f"{path}.{key}",
                       f"unknown unit class (known: {', '.join(allowed)})")
    table = {}
    for key in allowed:
        if key not in value:
            if key in OPTIONAL_UNIT_CLASSES:
                continue
            raise _err(where, f"{path}.{key}", "missing key", at=path)
        table[key] = UnitSpec(**_fields_of(UnitSpec, value[key], f"{path}.{key}", where))
        for f in TENSOR_FIELDS:  # the tensor core's throughputs per input precision
            if (getattr(table[key], f) is None) == (key == "tensor"):
                raise _err(where, f"{path}.{key}.{f}", "missing key" if key == "tensor" else
                           "only the tensor unit has per-precision FMA throughputs", at=f"{path}.{key}")
        if table[key].divergence_cycles is not None and key != "branch":
            raise _err(where, f"{path}.{key}.divergence_cycles", "only the branch unit has divergence_cycles",
                       at=f"{path}.{key}")
    return UnitTable(table)


def _opcodes(value: Any, path: str, where: Where) -> UnitTable:
    """The optional `opcodes:` table: opcode name -> OpcodeSpec, each field optional (its unit's figure)."""
    if value is None:
        return UnitTable({})
    if not isinstance(value, dict):
        raise _err(where, path, f"expected a mapping of opcode names, got {_show(value)}")
    table = {}
    for key, entry in value.items():
        if key not in OPCODES:
            close = _closest(key, set(OPCODES))
            hint = f" (did you mean {close!r}?)" if close else " (gpusim asm's opcodes: docs/isa.md)"
            raise _err(where, f"{path}.{key}", f"unknown opcode{hint}")
        table[key] = OpcodeSpec(**_fields_of(OpcodeSpec, entry, f"{path}.{key}", where))
    return UnitTable(table)


# ----------------------------------------------------------------------------------------------
# cross-field consistency


def _check_consistency(cfg: Config, where: Where) -> None:
    overridden = [k for k, (file, _) in where.items() if file == OVERRIDE_FILE and k]

    def fail(path: str, message: str) -> None:
        """The error names `path`, unless an override it does not name made it fail: then the override
        (whose name the message mentions), not the file's line."""
        if where.get(path, (None,))[0] != OVERRIDE_FILE:
            for key in overridden:
                if re.search(rf"\b{re.escape(key.rpartition('.')[2])}\b", message):
                    raise ConfigError(f"makes {path} fail its check: {message}", file=OVERRIDE_FILE, field=key)
        raise _err(where, path, message)

    _check_sm(cfg, fail)
    _check_caches(cfg, fail)
    _check_system(cfg, fail)
    _check_power(cfg, fail)
    _check_cpu_power(cfg, fail)


def _check_sm(cfg: Config, fail) -> None:
    """The chip and SM fields agree with each other (the occupancy rules need them to)."""
    chip, sm, l1 = cfg.chip, cfg.sm, cfg.l1
    if chip.sm_count > chip.gpcs * chip.sms_per_gpc:
        fail("chip.sm_count", f"{chip.sm_count} SMs do not fit in gpcs * sms_per_gpc = "
                              f"{chip.gpcs} * {chip.sms_per_gpc} = {chip.gpcs * chip.sms_per_gpc}")
    if sm.max_threads_per_sm != sm.max_warps_per_sm * sm.warp_size:
        fail("sm.max_threads_per_sm", f"must equal max_warps_per_sm * warp_size = "
                                      f"{sm.max_warps_per_sm} * {sm.warp_size} = "
                                      f"{sm.max_warps_per_sm * sm.warp_size}, got {sm.max_threads_per_sm}")
    if sm.max_threads_per_block > sm.max_threads_per_sm:
        fail("sm.max_threads_per_block", f"{sm.max_threads_per_block} is more than max_threads_per_sm "
                                         f"{sm.max_threads_per_sm}: such a block could never run")
    if max(sm.max_block_dims) > sm.max_threads_per_block:
        fail("sm.max_block_dims", f"a dimension of {max(sm.max_block_dims)} exceeds "
                                  f"max_threads_per_block {sm.max_threads_per_block}")
    if sm.max_warps_per_sm % sm.subpartitions:
        fail("sm.max_warps_per_sm", f"{sm.max_warps_per_sm} warps do not divide evenly over "
                                    f"{sm.subpartitions} subpartitions")
    if sm.max_registers_per_block > sm.registers_per_sm:
        fail("sm.max_registers_per_block", f"{sm.max_registers_per_block} is more than registers_per_sm "
                                           f"{sm.registers_per_sm}")
    if sm.registers_per_sm % sm.subpartitions:
        fail("sm.registers_per_sm", f"{sm.registers_per_sm} registers do not split evenly over "
                                    f"{sm.subpartitions} subpartitions")
    carve = sm.shared_memory_carveouts_bytes
    if list(carve) != sorted(set(carve)):
        fail("sm.shared_memory_carveouts_bytes", "carve-outs must be strictly ascending")
    if sm.shared_memory_per_sm_bytes != max(carve):
        fail("sm.shared_memory_per_sm_bytes", f"must equal the largest carve-out {max(carve)}, got "
                                              f"{sm.shared_memory_per_sm_bytes}")
    if sm.l1_shared_combined_bytes:
        if max(carve) > sm.l1_shared_combined_bytes:
            fail("sm.shared_memory_carveouts_bytes",
                 f"carve-out {max(carve)} exceeds l1_shared_combined_bytes {sm.l1_shared_combined_bytes}")
        if l1.size_bytes + min(carve) > sm.l1_shared_combined_bytes:
            fail("l1.size_bytes", f"{l1.size_bytes} + the smallest carve-out {min(carve)} exceeds "
                                  f"sm.l1_shared_combined_bytes {sm.l1_shared_combined_bytes}")
    if sm.max_shared_memory_per_block_bytes > sm.max_shared_memory_per_block_optin_bytes:
        fail("sm.max_shared_memory_per_block_bytes", "exceeds max_shared_memory_per_block_optin_bytes")
    if (sm.max_shared_memory_per_block_optin_bytes + sm.reserved_shared_memory_per_block_bytes
            > sm.shared_memory_per_sm_bytes):
        fail("sm.max_shared_memory_per_block_optin_bytes",
             f"{sm.max_shared_memory_per_block_optin_bytes} + reserved "
             f"{sm.reserved_shared_memory_per_block_bytes} exceeds shared_memory_per_sm_bytes "
             f"{sm.shared_memory_per_sm_bytes}")


def _check_caches(cfg: Config, fail) -> None:
    """Units, caches and partitions: whole sets, whole sectors, lanes no wider than a warp."""
    chip, sm, l1, l2 = cfg.chip, cfg.sm, cfg.l1, cfg.l2
    for name, unit in [*cfg.units.items(), *cfg.opcodes.items()]:
        sec = "opcodes" if name in cfg.opcodes else "units"
        if unit.lanes_per_subpartition is not None and unit.lanes_per_subpartition > sm.warp_size:
            fail(f"{sec}.{name}.lanes_per_subpartition", f"{unit.lanes_per_subpartition} lanes is wider "
                                                          f"than a warp ({sm.warp_size})")
    for sec, cache in (("l1", l1), ("l2", l2)):
        if cache.line_size_bytes % cache.sector_size_bytes:
            fail(f"{sec}.sector_size_bytes", f"line {cache.line_size_bytes} is not a whole number of "
                                             f"{cache.sector_size_bytes}-byte sectors")
    if l1.size_bytes % (l1.line_size_bytes * l1.ways):
        fail("l1.size_bytes", f"{l1.size_bytes} is not a whole number of sets of "
                              f"{l1.ways} ways x {l1.line_size_bytes} bytes")
    per_slice = l2.line_size_bytes * l2.ways * l2.slices
    if l2.size_bytes % per_slice:
        fail("l2.size_bytes", f"{l2.size_bytes} is not a whole number of sets over {l2.slices} slices of "
                              f"{l2.ways} ways x {l2.line_size_bytes} bytes")
    if l2.slices % l2.partitions:
        fail("l2.partitions", f"{l2.slices} slices do not split evenly into {l2.partitions} partitions")
    gp = cfg.interconnect.gpc_partitions
    if gp and len(gp) != chip.gpcs:
        fail("interconnect.gpc_partitions", f"expected one partition per GPC ({chip.gpcs}), got {len(gp)}")
    if gp and max(gp) >= l2.partitions:
        fail("interconnect.gpc_partitions", f"partition {max(gp)} does not exist (l2.partitions is {l2.partitions})")


def _check_system(cfg: Config, fail) -> None:
    """DRAM timings and widths, links, the system and the optional CPU section."""
    chip, sm, dram = cfg.chip, cfg.sm, cfg.dram
    if dram.t_refi_ns and dram.t_rfc_ns >= dram.t_refi_ns:
        fail("dram.t_rfc_ns", f"{dram.t_rfc_ns} ns of refresh every t_refi_ns = {dram.t_refi_ns} ns leaves no time "
                              f"for requests")
    array = (dram.t_rcd_ns + dram.t_cl_ns) * chip.clock_mhz / 1000
    if array > dram.latency_cycles:
        fail("dram.latency_cycles", f"{dram.latency_cycles} cycles is less than t_rcd_ns + t_cl_ns = {array:.0f} "
                                    f"cycles at {chip.clock_mhz:g} MHz (the latency includes the row access)")
    expect = dram.bus_width_bits / 8 * dram.data_rate_mtps / 1000
    if abs(dram.bandwidth_gbps - expect) > 0.01 * expect:
        fail("dram.bandwidth_gbps", f"{dram.bandwidth_gbps} GB/s disagrees with bus_width_bits / 8 * "
                                    f"data_rate_mtps / 1000 = {expect:.1f} GB/s")
    if dram.bus_width_bits % dram.controllers:
        fail("dram.bus_width_bits", f"{dram.bus_width_bits} bits do not split over {dram.controllers} "
                                    f"controllers")
    nv = cfg.nvlink
    if (nv.links == 0) != (nv.version == 0):
        fail("nvlink.version", "version must be 0 exactly when links is 0")
    if nv.links == 0 and nv.bandwidth_per_link_gbps != 0:
        fail("nvlink.bandwidth_per_link_gbps", "must be 0 when there are no links")
    if nv.links and nv.bandwidth_per_link_gbps <= 0:
        fail("nvlink.bandwidth_per_link_gbps", "must be positive when there are links")
    system = cfg.system
    if system.gpu_interconnect in ("nvswitch", "nvlink_ring") and nv.links == 0:
        fail("system.gpu_interconnect", f"{system.gpu_interconnect} needs NVLink, but nvlink.links is 0")
    if system.gpu_interconnect == "nvlink_ring" and nv.links % 2:
        fail("system.gpu_interconnect", f"nvlink_ring splits the links between two neighbours; "
                                        f"nvlink.links {nv.links} is odd")
    cpu = cfg.cpu
    if cpu is not None:
        if cpu.simd_lanes != sm.warp_size:
            fail("cpu.simd_lanes", f"{cpu.simd_lanes} must equal sm.warp_size {sm.warp_size}: a SIMD group "
                                   f"runs one warp of the functional executor")
        if cpu.cores != chip.sm_count:
            fail("cpu.cores", f"{cpu.cores} must equal chip.sm_count {chip.sm_count}")
        if not cpu.line_bytes <= cpu.l1_bytes <= cpu.l2_bytes <= cpu.llc_bytes:
            fail("cpu.l2_bytes", f"expected line_bytes <= l1_bytes <= l2_bytes <= llc_bytes, got {cpu.line_bytes}, "
                                 f"{cpu.l1_bytes}, {cpu.l2_bytes}, {cpu.llc_bytes}")
        if not cpu.l1_latency_cycles <= cpu.l2_latency_cycles <= cpu.llc_latency_cycles:
            fail("cpu.l2_latency_cycles", "expected l1_latency_cycles <= l2_latency_cycles <= llc_latency_cycles")
    if cfg.host.resident and system.gpus != 1:
        fail("system.gpus", "a host-resident design (host.resident: true) has no GPUs to connect: must be 1")


def _check_power(cfg: Config, fail) -> None:
    """The optional power section: a voltage for each clock point, clocks ascending, voltages not descending."""
    pw = cfg.power
    if pw is None:
        return
    clocks, volts = pw.dvfs_clocks_mhz, pw.dvfs_voltages_mv
    if len(clocks) != len(volts):
        fail("power.dvfs_voltages_mv", f"expected one voltage per dvfs_clocks_mhz point ({len(clocks)}), "
                                       f"got {len(volts)}")
    if list(clocks) != sorted(set(clocks)):
        fail("power.dvfs_clocks_mhz", "clock points must be strictly ascending")
    if list(volts) != sorted(volts):
        fail("power.dvfs_voltages_mv", "voltages must not descend as the clock rises")


def _check_cpu_power(cfg: Config, fail) -> None:
    """The optional cpu_power section belongs to a CPU (a cpu: section), whose idle package fits its TDP."""
    pw = cfg.cpu_power
    if pw is None:
        return
    if cfg.cpu is None:
        fail("cpu_power", "a CPU's power needs a cpu: section (a GPU's goes in power:)")
    if pw.uncore_static_w + pw.core_static_w * cfg.chip.sm_count > pw.tdp_w:
        fail("cpu_power.tdp_w", f"{pw.tdp_w:g} W is below the package's static power with every core busy "
                                f"(uncore_static_w + core_static_w x {cfg.chip.sm_count} cores)")
