"""The per-architecture SASS timing tables (gpusim/data/sass/sm_XX.yaml): for each opcode the config unit whose
port it issues to, its latency and optionally its own lanes per sub-partition; read and checked once per
architecture (a bad entry is a ConfigError naming the file, line and field). Format and sources:
docs/config.md, "SASS timing tables"."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpusim.errors import ConfigError
from gpusim.isa.sass.opcodes import SASS_OPCODES

UNITS = ("fp32", "int", "fp64", "sfu", "ldst", "branch", "sync", "tensor")


@dataclass(frozen=True, slots=True)
class OpTiming:
    unit: str
    latency_cycles: int
    lanes_per_subpartition: int | None = None


def table_path(arch: int) -> Path:
    from gpusim.data import data_dir

    return data_dir("sass") / f"sm_{arch}.yaml"


@functools.cache
def load_table(arch: int, path: str | None = None) -> dict[str, OpTiming]:
    """The timing table of sm_`arch` (or the YAML file at `path`), every SASS opcode gpusim executes listed."""
    p = Path(path) if path else table_path(arch)
    if not p.is_file():
        raise ConfigError(f"no SASS timing table for sm_{arch} (gpusim has sm_80 and sm_90)", file=str(p))
    text = p.read_text()
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=str(p),
                          line=mark.line + 1 if mark else None) from None
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError("expected a mapping with `arch:` and `opcodes:`", file=str(p), line=1)
    top = {k.value: (k, v) for k, v in root.value}
    ops = top.get("opcodes")
    if ops is None or not isinstance(ops[1], yaml.MappingNode):
        raise ConfigError("expected an `opcodes:` mapping", file=str(p), line=1, field="opcodes")
    out: dict[str, OpTiming] = {}
    for knode, vnode in ops[1].value:
        name, line = knode.value, knode.start_mark.line + 1
        if name not in SASS_OPCODES:
            raise ConfigError("not a SASS opcode gpusim executes (gpusim.isa.sass.opcodes)", file=str(p), line=line,
                              field=f"opcodes.{name}")
        entry = yaml.safe_load(yaml.serialize(vnode))
        if not isinstance(entry, dict) or set(entry) - {"unit", "latency_cycles", "lanes_per_subpartition"}:
            raise ConfigError("expected {unit: ..., latency_cycles: N[, lanes_per_subpartition: N]}", file=str(p),
                              line=line, field=f"opcodes.{name}")
        unit, lat, lanes = entry.get("unit"), entry.get("latency_cycles"), entry.get("lanes_per_subpartition")
        if unit not in UNITS:
            raise ConfigError(f"unit {unit!r} is not one of {', '.join(UNITS)}", file=str(p), line=line,
                              field=f"opcodes.{name}.unit")
        for fld, v in (("latency_cycles", lat), ("lanes_per_subpartition", lanes)):
            if v is None and fld == "lanes_per_subpartition":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 100000 or (fld != "latency_cycles"
                                                                                            and v < 1):
                raise ConfigError(f"expected a whole number of {'cycles' if 'cycles' in fld else 'lanes'}, got {v!r}",
                                  file=str(p), line=line, field=f"opcodes.{name}.{fld}")
        out[name] = OpTiming(unit, lat, lanes)
    missing = [n for n in SASS_OPCODES if n not in out]
    if missing:
        raise ConfigError(f"no entry for {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}", file=str(p),
                          field="opcodes")
    return out
