"""A sweep's points: the cross product of configs, config overrides, warp schedulers and workload parameters,
with short override names (`sm_count`) resolved against the Config schema (`chip.sm_count`)."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from gpusim.config.schema import OPTIONAL_UNIT_CLASSES, TENSOR_FIELDS, UNIT_CLASSES, all_field_paths
from gpusim.errors import ConfigError, GpusimError, WorkloadError
from gpusim.workloads import Workload


@dataclass(frozen=True)
class Point:
    """One simulation of a sweep: its row `index`, the config as given (a built-in name or a YAML path),
    the dotted config `overrides`, the warp scheduler (None: the config's own) and every workload
    parameter's value (`params`, the defaults merged with what was set and swept)."""

    index: int
    config: str
    overrides: dict[str, Any]
    warp_scheduler: str | None
    params: dict[str, int | float]


def field_paths() -> list[str]:
    """Every config field a sweep can override, as a dotted path (`chip.sm_count`,
    `units.fp32.latency_cycles`)."""
    out = []
    for path in all_field_paths():
        if "<class>" in path and path.rpartition(".")[2] in TENSOR_FIELDS:  # the tensor unit's own fields
            out.append(path.replace("<class>", "tensor"))
        elif "<class>" in path:
            out += [path.replace("<class>", unit) for unit in UNIT_CLASSES + OPTIONAL_UNIT_CLASSES]
        else:
            out.append(path)
    return out


def resolve_field(name: str) -> str:
    """A full dotted config field, or a unique tail of one (`sm_count`, `fp32.latency_cycles`), as the full
    dotted field. An unknown or ambiguous name is a ConfigError listing the candidates."""
    paths = field_paths()
    if name in paths:
        return name
    found = [p for p in paths if p.endswith("." + name)]
    if len(found) == 1:
        return found[0]
    if found:
        raise ConfigError(f"ambiguous config field: it may be {', '.join(found)}; give the full dotted name",
                          field=name)
    leaves = sorted({p.rpartition(".")[2] for p in paths})
    close = difflib.get_close_matches(name, paths + leaves, n=5, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else " (docs/config.md lists the fields)"
    raise ConfigError(f"not a config field{hint}", field=name)


def parse_values(text: str, what: str) -> list[Any]:
    """`"64,128,256"` -> [64, 128, 256]: a comma list of YAML scalars (numbers, true/false, names)."""
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise GpusimError(f"{what} {text!r}: expected VALUE[,VALUE...]")
    return [_scalar(t) for t in items]


def _scalar(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, int | float | str | bool) else text


def make_points(wl: Workload, configs: Sequence[str], *, grid: Mapping[str, Sequence[Any]],
                overrides: Mapping[str, Sequence[Any]], params: Mapping[str, Any],
                warp_schedulers: Sequence[str | None]) -> list[Point]:
    """The cross product, configs outermost and the last swept parameter innermost. `overrides` keys must
    be resolved (full dotted fields). Unknown parameters and values that are not numbers are a
    WorkloadError for the whole sweep; launches that cannot run fail later, point by point."""
    both = sorted(set(grid) & set(params))
    if both:
        raise GpusimError(f"parameter {both[0]!r} is both swept and set to one value: give it once")
    for name in [*grid, *params]:
        if name not in wl.defaults:
            block = ", ".join(map(str, wl.launch_spec.block))
            raise WorkloadError(f"workload '{wl.name}' has no parameter '{name}'; its parameters: "
                                f"{', '.join(wl.defaults)} (its launch's block is {block})")
    for name, values in [*grid.items(), *overrides.items()]:
        if not values:
            raise GpusimError(f"{name}: no values to sweep")
    names = list(grid)
    fields = list(overrides)
    combos = itertools.product(configs, itertools.product(*overrides.values()), warp_schedulers,
                               itertools.product(*grid.values()))
    return [Point(i, cfg, dict(zip(fields, ov, strict=True)), ws,
                  wl.params({**params, **dict(zip(names, values, strict=True))}))
            for i, (cfg, ov, ws, values) in enumerate(combos)]


__all__ = ["Point", "field_paths", "make_points", "parse_values", "resolve_field"]
