"""A sweep's points: the cross product of configs, config overrides, warp schedulers and workload parameters,
with short override names (`sm_count`) resolved against the Config schema (`chip.sm_count`)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from gpusim.config.overrides import field_paths, resolve_field  # (one resolver: gpusim.config.overrides)
from gpusim.errors import GpusimError, WorkloadError
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
                warp_schedulers: Sequence[str | None], zipped: Sequence[Sequence[str]] = ()) -> list[Point]:
    """The cross product, configs outermost and the last swept parameter innermost. `overrides` keys must
    be resolved (full dotted fields). `zipped`: groups of axes (parameter names of `grid`, resolved fields
    of `overrides`) that vary together, their i-th values in one point, instead of multiplying: each
    group's axes have as many values, and the group takes its first axis's place in the order. Unknown
    parameters and values that are not numbers are a WorkloadError for the whole sweep; launches that
    cannot run fail later, point by point."""
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
    # the axes in product order: ("config", values), the overrides, ("scheduler", ...), the parameters
    axes: list[tuple[tuple[str, ...], list[tuple[Any, ...]]]] = [(("\0config",), [(c,) for c in configs])]
    axes += [((f,), [(v,) for v in vs]) for f, vs in overrides.items()]
    axes.append((("\0scheduler",), [(w,) for w in warp_schedulers]))
    axes += [((n,), [(v,) for v in vs]) for n, vs in grid.items()]
    for group in zipped:
        axes = _zip_axes(axes, list(group), {**grid, **overrides})
    points = []
    for i, combo in enumerate(itertools.product(*(values for _, values in axes))):
        at = {name: v for (names, _), values in zip(axes, combo, strict=True) for name, v in zip(names, values,
                                                                                                  strict=True)}
        points.append(Point(i, at["\0config"], {f: at[f] for f in overrides}, at["\0scheduler"],
                            wl.params({**params, **{n: at[n] for n in grid}})))
    return points


def _zip_axes(axes: list, group: list[str], swept: Mapping[str, Sequence[Any]]) -> list:
    """`axes` with those named in `group` joined into one, at the first one's place."""
    unknown = [n for n in group if n not in swept]
    if unknown or len(group) < 2:
        raise GpusimError(f"--zip {','.join(group)}: " + (f"{unknown[0]} is not swept (give it several values with "
                                                          "--set or --config-set)" if unknown else
                                                          "name two or more swept axes"))
    lengths = {n: len(swept[n]) for n in group}
    if len(set(lengths.values())) > 1:
        raise GpusimError(f"--zip {','.join(group)}: the axes vary together, so they need as many values each; "
                          f"got {', '.join(f'{n} {k}' for n, k in lengths.items())}")
    members = [i for i, (names, _) in enumerate(axes) if set(names) & set(group)]
    if any(len(axes[i][0]) > 1 for i in members):
        raise GpusimError(f"--zip {','.join(group)}: an axis is in two --zip groups")
    names = tuple(n for i in members for n in axes[i][0])
    values = [tuple(v for i in members for v in axes[i][1][k]) for k in range(len(axes[members[0]][1]))]
    out = [a for i, a in enumerate(axes) if i not in members[1:]]
    out[members[0]] = (names, values)
    return out


__all__ = ["Point", "field_paths", "make_points", "parse_values", "resolve_field"]
