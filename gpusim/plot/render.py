"""A chart of a kind from files (what `gpusim plot` draws): which inputs each kind takes, and the config
each needs.

- occupancy, timeline: one result JSON;
- sweep: one sweep table;
- stalls, units, memory, roofline, sol: any number of result JSONs and sweep tables, one bar (or point)
  per result or per ok row of a table.

The config is `cfg` when given, else the one each input names (loaded with its overrides and checked
against its hash); a roofline draws one config's roofs, so its inputs must share one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.plot.io import SweepTable, load_input, point_config, result_config, result_points, sweep_points
from gpusim.plot.memory import memory_figure
from gpusim.plot.occupancy import kernel_resources, occupancy_figure
from gpusim.plot.roofline import roofline_figure
from gpusim.plot.sol import sol_figure
from gpusim.plot.stalls import stalls_figure
from gpusim.plot.sweep import sweep_figure
from gpusim.plot.timeline import timeline_figure
from gpusim.plot.units import units_figure

KINDS = ("occupancy", "stalls", "units", "memory", "roofline", "sol", "sweep", "timeline")
SINGLE_RESULT = ("occupancy", "timeline")


def render(kind: str, paths: Sequence[str | Path], *, metric: str | None = None, intensity: str = "hierarchical",
           stall_scale: str = "cycles", cfg: Config | None = None) -> Figure:
    """The `kind` chart of the files at `paths` (see the module docstring); a GpusimError naming the file
    for input the kind cannot draw."""
    if kind not in KINDS:
        raise GpusimError(f"unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
    if not paths:
        raise GpusimError(f"--kind {kind}: give at least one input file")
    inputs = [load_input(p) for p in paths]
    if kind == "sweep":
        table = _single(kind, paths, inputs, SweepTable, "a sweep table (CSV or JSON)")
        return sweep_figure(table, metric)
    if kind in SINGLE_RESULT:
        result = _single(kind, paths, inputs, dict, "a result JSON (gpusim run --json)")
        if kind == "timeline":
            return timeline_figure(result)
        block, regs, smem = kernel_resources(result)
        cfg = result_config(result, cfg)
        return occupancy_figure(cfg, block, regs, smem, name=result.get("workload"))
    points = result_points([i for i in inputs if isinstance(i, dict)])
    notes = []
    for table in (i for i in inputs if isinstance(i, SweepTable)):
        points += sweep_points(table)
        if table.errors:
            notes.append(f"{table.path}: {table.errors} point(s) with status error skipped")
    if not points:
        raise GpusimError(f"--kind {kind}: no successful kernel in {', '.join(map(str, paths))}")
    if kind == "stalls":
        return stalls_figure(points, scale=stall_scale, notes=notes)
    if kind == "units":
        return units_figure(points, notes=notes)
    configs = [cfg] * len(points) if cfg else [point_config(p) for p in points]
    if kind == "memory":
        return memory_figure(points, configs, notes=notes)
    if kind == "sol":
        return sol_figure(points, configs, notes=notes)
    hashes = {c.hash(): c.name for c in configs}
    if len(hashes) > 1:
        raise GpusimError(f"--kind roofline draws one config's roofs, but the inputs ran on "
                          f"{len(hashes)} configs ({', '.join(sorted(set(hashes.values())))}); plot them apart "
                          "or name one with --config")
    return roofline_figure(configs[0], points, intensity=intensity, notes=notes)


def _single(kind: str, paths: Sequence[str | Path], inputs: list, want: type, what: str):
    if len(inputs) != 1 or not isinstance(inputs[0], want):
        got = "a sweep table" if isinstance(inputs[0], SweepTable) else "a result"
        detail = f"{len(inputs)} files" if len(inputs) != 1 else f"{paths[0]} is {got}"
        raise GpusimError(f"--kind {kind} draws one file, {what}; got {detail}")
    return inputs[0]
