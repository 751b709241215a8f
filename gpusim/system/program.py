"""A program: host code's sequence of asynchronous operations on streams, as CUDA code issues them.

Operations (each on a `stream` of a `gpu`, default "s0" on GPU 0):

- `copy_h2d`, `copy_d2h` (`bytes`, `pinned`, default `host.buffers`): a copy engine DMAs between host and
  device memory over PCIe;
- `copy_p2p` (`bytes`, `peer`): GPU `gpu` sends to GPU `peer` over the node's interconnect;
- `kernel` (`workload` + `params`, or `cycles`): the SMs run a kernel (one at a time per GPU);
- `event_record`, `event_wait` (`event`): a stream marks a point; another waits until it is reached;
- `all_reduce`, `all_gather`, `reduce_scatter`, `broadcast` (`bytes`, `gpus` default all, `root`): a ring
  collective on the stream `stream` of every GPU in `gpus`.

A program is a list in issue order. Operations on one stream run in order; on different streams they
overlap where the engines allow. YAML:

```yaml
description: two streams, each copy in -> kernel -> copy out
ops:
  - {op: copy_h2d, stream: a, bytes: 64 MiB}
  - {op: kernel, stream: a, workload: saxpy, params: {n: 1048576}}
  - {op: copy_d2h, stream: a, bytes: 32 MiB}
```

Sizes are integers of bytes or strings with a unit: `64 MiB`, `1.5 GB`, `4096 B`. The shipped programs
(`gpusim/data/configs/programs/`, `builtin_programs()`) load by name: `load_program("two_streams")`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from gpusim.config.schema import Config
from gpusim.data import data_dir
from gpusim.errors import ConfigError
from gpusim.system.collectives import KINDS as COLLECTIVES


class ProgramError(ConfigError):
    """A program is malformed or does not fit the machine: `file:line: ops[i].field: what is wrong`."""


@dataclass(frozen=True, kw_only=True)
class Op:
    """What every operation has: its stream, its GPU and a name for reports."""

    kind: ClassVar[str] = ""
    stream: str = "s0"
    gpu: int = 0
    name: str = ""

    @property
    def label(self) -> str:
        """What reports call it: its name (a kernel without one: its workload)."""
        return self.name


@dataclass(frozen=True, kw_only=True)
class CopyH2D(Op):
    kind: ClassVar[str] = "copy_h2d"
    bytes: int
    pinned: bool | None = None


@dataclass(frozen=True, kw_only=True)
class CopyD2H(Op):
    kind: ClassVar[str] = "copy_d2h"
    bytes: int
    pinned: bool | None = None


@dataclass(frozen=True, kw_only=True)
class CopyP2P(Op):
    kind: ClassVar[str] = "copy_p2p"
    bytes: int
    peer: int


@dataclass(frozen=True, kw_only=True)
class Kernel(Op):
    """A kernel launch: a workload at `params` (timed by the caller's kernel cost function), or a fixed
    number of `cycles`."""

    kind: ClassVar[str] = "kernel"
    workload: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    cycles: int | None = None

    @property
    def label(self) -> str:
        return self.name or self.workload or ""


@dataclass(frozen=True, kw_only=True)
class EventRecord(Op):
    kind: ClassVar[str] = "event_record"
    event: str


@dataclass(frozen=True, kw_only=True)
class EventWait(Op):
    kind: ClassVar[str] = "event_wait"
    event: str


@dataclass(frozen=True, kw_only=True)
class Collective(Op):
    """A ring collective over `gpus` (None: every GPU of the node); `bytes` is each GPU's buffer."""

    collective: str
    bytes: int
    gpus: tuple[int, ...] | None = None
    root: int = 0

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.collective


OP_TYPES: dict[str, type[Op]] = {t.kind: t for t in (CopyH2D, CopyD2H, CopyP2P, Kernel, EventRecord, EventWait)}
OP_NAMES = (*OP_TYPES, *COLLECTIVES)


@dataclass(frozen=True)
class Program:
    """Operations in issue order. `where[i]` is the (file, line) operation i came from, for errors."""

    ops: tuple[Op, ...]
    name: str = "program"
    description: str = ""
    where: Mapping[int, tuple[str, int]] = field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "ops", tuple(self.ops))

    def error(self, index: int, field_name: str | None, message: str) -> ProgramError:
        file, line = self.where.get(index, (self.name, None))
        return ProgramError(message, file=file, line=line, field=f"ops[{index}]" + (f".{field_name}" if field_name
                                                                                   else ""))

    def gpus_of(self, op: Op, node_gpus: int) -> tuple[int, ...]:
        """The GPUs an operation runs on: a collective's members, else its own GPU."""
        if isinstance(op, Collective):
            return tuple(range(node_gpus)) if op.gpus is None else op.gpus
        return (op.gpu,)

    def check(self, cfg: Config) -> None:
        """Fit the machine: GPU indices within `system.gpus`, waits on events recorded earlier, kernels
        with something to time them by, no host copies on a host-resident design."""
        n = cfg.system.gpus
        recorded: set[str] = set()
        for i, op in enumerate(self.ops):
            gpus = self.gpus_of(op, n)
            for g in gpus:
                if not 0 <= g < n:
                    raise self.error(i, "gpus" if isinstance(op, Collective) else "gpu",
                                     f"GPU {g} does not exist: {cfg.name} has {n} (system.gpus)")
            if isinstance(op, Collective) and len(set(gpus)) != len(gpus):
                raise self.error(i, "gpus", "a GPU is named twice")
            if isinstance(op, Collective) and op.root not in gpus:
                raise self.error(i, "root", f"root GPU {op.root} is not one of the collective's GPUs")
            if isinstance(op, CopyP2P) and (not 0 <= op.peer < n or op.peer == op.gpu):
                raise self.error(i, "peer", f"peer {op.peer} must be another GPU of the {n}")
            if isinstance(op, CopyH2D | CopyD2H) and cfg.host.resident:
                raise self.error(i, None, f"{cfg.name} computes in host memory (host.resident): it has no "
                                          "host-device copies")
            if isinstance(op, EventRecord):
                recorded.add(op.event)
            if isinstance(op, EventWait) and op.event not in recorded:
                raise self.error(i, "event", f"event {op.event!r} is not recorded before this wait")


# ---- YAML -----------------------------------------------------------------------------------------

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "kib": 2**10, "mib": 2**20,
          "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*$", re.I)


def parse_bytes(value: Any) -> int:
    """`4096`, `"64 MiB"`, `"1.5 GB"` -> bytes (a ValueError saying what is accepted otherwise)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    m = _SIZE.match(value) if isinstance(value, str) else None
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"expected a size in bytes (4096, '64 MiB', '1.5 GB'), got {value!r}")
    return int(round(float(m.group(1)) * _UNITS[m.group(2).lower()]))


_FIELDS: dict[str, dict[str, str]] = {
    # op -> field -> kind of value
    "copy_h2d": {"bytes": "size", "pinned": "bool"},
    "copy_d2h": {"bytes": "size", "pinned": "bool"},
    "copy_p2p": {"bytes": "size", "peer": "int"},
    "kernel": {"workload": "str", "params": "map", "cycles": "int"},
    "event_record": {"event": "str"},
    "event_wait": {"event": "str"},
    **{c: {"bytes": "size", "gpus": "ints", "root": "int"} for c in COLLECTIVES},
}
_COMMON = {"op": "str", "stream": "str", "gpu": "int", "name": "str"}
_REQUIRED = {"copy_h2d": ("bytes",), "copy_d2h": ("bytes",), "copy_p2p": ("bytes", "peer"),
             "event_record": ("event",), "event_wait": ("event",), **{c: ("bytes",) for c in COLLECTIVES}}


def builtin_programs() -> list[str]:
    """Names of the shipped programs, sorted."""
    return sorted(p.stem for p in data_dir("configs/programs").glob("*.yaml"))


def find_program(name_or_path: str | os.PathLike) -> Path:
    """A path as it is; a bare name that is no file (`two_streams`): the shipped program of that name."""
    text = os.fspath(name_or_path)
    path = Path(text)
    if path.exists() or text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
        return path
    shipped = data_dir("configs/programs") / f"{text}.yaml"
    if not shipped.is_file():
        raise ProgramError(f"no such file, and no shipped program of that name (shipped: "
                           f"{', '.join(builtin_programs())})", file=text)
    return shipped


def load_program(path: str | os.PathLike) -> Program:
    """Read a program from YAML (`description:` and `ops:`, module docstring) given its path or a shipped
    program's name; every problem is a ProgramError naming the file, line and operation field."""
    path = find_program(path)
    file = str(path)
    try:
        node = yaml.compose(path.read_text(), Loader=yaml.SafeLoader)
    except OSError as exc:
        raise ProgramError(f"cannot read: {exc.strerror or exc}", file=file) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ProgramError(f"malformed YAML: {exc.problem or exc.context}", file=file,
                           line=mark.line + 1 if mark else None) from None
    if not isinstance(node, yaml.MappingNode):
        raise ProgramError("expected a mapping with description and ops", file=file, line=1)
    top = {k.value: (k.start_mark.line + 1, v) for k, v in node.value}
    for key, (line, _) in top.items():
        if key not in ("description", "ops"):
            raise ProgramError("unknown key (known: description, ops)", file=file, line=line, field=key)
    if "ops" not in top:
        raise ProgramError("missing key", file=file, line=1, field="ops")
    description = _construct(top["description"][1]) if "description" in top else ""
    ops_line, ops_node = top["ops"]
    if not isinstance(ops_node, yaml.SequenceNode) or not ops_node.value:
        raise ProgramError("expected a list of operations", file=file, line=ops_line, field="ops")
    ops, where = [], {}
    for i, item in enumerate(ops_node.value):
        where[i] = (file, item.start_mark.line + 1)
        ops.append(_op(item, i, file))
    return Program(tuple(ops), name=path.stem, description=str(description or ""), where=where)


def _construct(node: yaml.Node) -> Any:
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


def _op(node: yaml.Node, index: int, file: str) -> Op:
    def fail(field_name: str | None, message: str, line: int) -> ProgramError:
        return ProgramError(message, file=file, line=line, field=f"ops[{index}]" + (f".{field_name}" if field_name
                                                                                    else ""))

    start = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        raise fail(None, "expected a mapping like {op: copy_h2d, bytes: 64 MiB}", start)
    items = {k.value: (k.start_mark.line + 1, _construct(v)) for k, v in node.value}
    if "op" not in items:
        raise fail("op", f"missing key (one of {', '.join(OP_NAMES)})", start)
    line, kind = items["op"]
    if kind not in _FIELDS:
        raise fail("op", f"{kind!r} is not one of {', '.join(OP_NAMES)}", line)
    allowed = {**_COMMON, **_FIELDS[kind]}
    values: dict[str, Any] = {}
    for key, (line, value) in items.items():
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" ({kind} takes {', '.join(allowed)})"
            raise fail(key, f"unknown key{hint}", line)
        if key != "op":
            values[key] = _value(allowed[key], value, lambda m, k=key, ln=line: fail(k, m, ln))
    for key in _REQUIRED.get(kind, ()):
        if key not in values:
            raise fail(key, "missing key", start)
    if kind == "kernel" and ("workload" in values) == ("cycles" in values):
        raise fail(None, "a kernel needs either workload (with params) or cycles", start)
    if kind in COLLECTIVES:
        return Collective(collective=kind, **values)
    return OP_TYPES[kind](**values)


def _value(kind: str, value: Any, fail) -> Any:
    if kind == "size":
        try:
            return parse_bytes(value)
        except ValueError as exc:
            raise fail(str(exc)) from None
    checks = {
        "str": isinstance(value, str) and bool(value),
        "bool": isinstance(value, bool),
        "int": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        "map": isinstance(value, dict) and all(isinstance(k, str) for k in value),
        "ints": isinstance(value, list) and bool(value) and all(isinstance(v, int) and not isinstance(v, bool)
                                                              and v >= 0 for v in value),
    }
    if not checks[kind]:
        wanted = {"str": "a name", "bool": "true or false", "int": "a non-negative integer",
                  "map": "a mapping of parameter names to values", "ints": "a list of GPU indices"}[kind]
        raise fail(f"expected {wanted}, got {value!r}")
    return tuple(value) if kind == "ints" else value
