"""Config overrides, resolved in one place for every caller (`load_config(overrides=...)`, so every
subcommand's `--config-set`, and every sweep point): a field by its full dotted name or by a unique tail
of it (`sm_count` is `chip.sm_count`, `fp32.latency_cycles` is `units.fp32.latency_cycles`), an unknown
name refused with the names it may have meant, and fields derived from others moved with them.

Derived fields (`DERIVED`): a field that the loader requires to equal a formula of others. Overriding
one side moves the other, so a sweep over it is possible at all:

- `dram.bandwidth_gbps` = `dram.bus_width_bits` / 8 * `dram.data_rate_mtps` / 1000: an override of the
  bandwidth sets the data rate (the bus keeps its width); one of the bus width or the data rate sets
  the bandwidth;
- `sm.max_threads_per_sm` = `sm.max_warps_per_sm` * `sm.warp_size`: an override of the threads sets the
  warps; one of the warps or the warp size sets the threads.

Overriding both sides of a relation overrides both as given (the loader's consistency check then says
whether they agree, naming the override)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpusim.config.schema import OPTIONAL_UNIT_CLASSES, UNIT_CLASSES, UNIT_FIELD_OWNER, all_field_paths
from gpusim.errors import ConfigError

OVERRIDE_FILE = "<overrides>"  # the `file` of a ConfigError about an override (the CLI names the flag instead)


@dataclass(frozen=True, slots=True)
class Derived:
    """`field` = `formula(*inputs)`; when `field` alone is overridden, `solve` (one of the inputs) is set
    by `inverse(value_of_field, *other_inputs)`."""

    field: str
    inputs: tuple[str, ...]
    formula: Callable[..., float]
    solve: str
    inverse: Callable[..., float]


DERIVED: tuple[Derived, ...] = (
    Derived("dram.bandwidth_gbps", ("dram.bus_width_bits", "dram.data_rate_mtps"),
            lambda bus, rate: bus / 8 * rate / 1000, "dram.data_rate_mtps",
            lambda bandwidth, bus: bandwidth * 1000 * 8 / bus),
    Derived("sm.max_threads_per_sm", ("sm.max_warps_per_sm", "sm.warp_size"),
            lambda warps, size: warps * size, "sm.max_warps_per_sm",
            lambda threads, size: threads / size),
)


def field_paths() -> list[str]:
    """Every config field an override can name, as a dotted path (`chip.sm_count`,
    `units.fp32.latency_cycles`); opcode entries (`opcodes.<opcode>.<field>`) are named in full."""
    out = []
    for path in all_field_paths():
        if "<class>" in path and path.rpartition(".")[2] in UNIT_FIELD_OWNER:  # one unit class's own field
            out.append(path.replace("<class>", UNIT_FIELD_OWNER[path.rpartition(".")[2]]))
        elif "<class>" in path:
            out += [path.replace("<class>", unit) for unit in UNIT_CLASSES + OPTIONAL_UNIT_CLASSES]
        elif "<opcode>" not in path:
            out.append(path)
    return out


def resolve_field(name: str) -> str:
    """A full dotted config field, or a unique tail of one (`sm_count`, `fp32.latency_cycles`), as the full
    dotted field. An unknown or ambiguous name is a ConfigError (file `<overrides>`) listing the candidates.
    A section given whole (`dram`) and an opcode entry (`opcodes.fma.latency_cycles`) pass as given."""
    name = name.strip()
    paths = field_paths()
    sections = {p.partition(".")[0] for p in paths}
    if name in paths or name in sections or name == "opcodes" or name.startswith("opcodes."):
        return name
    found = [p for p in paths if p.endswith("." + name)]
    if len(found) == 1:
        return found[0]
    if found:
        raise ConfigError(f"ambiguous config field: it may be {', '.join(found)}; give the full dotted name",
                          file=OVERRIDE_FILE, field=name)
    hint = f"; did you mean {', '.join(close)}?" if (close := suggestions(name, paths)) else \
        " (docs/config.md lists the fields)"
    raise ConfigError(f"not a config field{hint}", file=OVERRIDE_FILE, field=name)


def suggestions(name: str, paths: list[str], n: int = 4) -> list[str]:
    """The full dotted fields closest to `name`: by their whole path where `name` is dotted, else by
    their last part (`sm_cnt` -> chip.sm_count)."""
    if "." in name:
        return difflib.get_close_matches(name, paths, n=n, cutoff=0.6)
    by_leaf: dict[str, list[str]] = {}
    for p in paths:
        by_leaf.setdefault(p.rpartition(".")[2], []).append(p)
    close = difflib.get_close_matches(name, list(by_leaf), n=n, cutoff=0.6)
    return [p for leaf in close for p in by_leaf[leaf]][:n]


def resolve_overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """`overrides` with every name resolved (`resolve_field`); a field named twice (`sm_count` and
    `chip.sm_count`) is a ConfigError."""
    out: dict[str, Any] = {}
    given: dict[str, str] = {}
    for name, value in (overrides or {}).items():
        dotted = resolve_field(str(name))
        if dotted in out:
            raise ConfigError(f"overridden twice (as {given[dotted]!r} and {name!r})", file=OVERRIDE_FILE,
                              field=dotted)
        out[dotted], given[dotted] = value, str(name)
    return out


def derive(overrides: Mapping[str, Any], get: Callable[[str], Any]) -> dict[str, tuple[Any, str]]:
    """The derived fields that the (resolved) `overrides` move: {field: (value, the override it follows)}.
    `get(path)` reads a field's value after the overrides are applied (None where it has none)."""
    out: dict[str, tuple[Any, str]] = {}
    for d in DERIVED:
        moved = [i for i in d.inputs if i in overrides]
        if d.field in overrides and not moved:
            others = [get(i) for i in d.inputs if i != d.solve]
            value, by = overrides[d.field], d.field
            if _numbers(value, *others) and all(others):
                out[d.solve] = (_like(get(d.solve), d.inverse(value, *others)), by)
        elif moved and d.field not in overrides:
            values = [get(i) for i in d.inputs]
            if _numbers(*values):
                out[d.field] = (_like(get(d.field), d.formula(*values)), moved[0])
    return out


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _like(old: Any, value: float) -> Any:
    """`value` as the type the field held (an integer field stays an integer where the value is whole)."""
    if isinstance(old, int) and not isinstance(old, bool) and float(value).is_integer():
        return int(value)
    return round(value, 6) if isinstance(value, float) else value


__all__ = ["DERIVED", "OVERRIDE_FILE", "Derived", "derive", "field_paths", "resolve_field", "resolve_overrides"]
