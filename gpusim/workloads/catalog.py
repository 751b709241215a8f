"""The workloads gpusim finds by name, and what their workload.yaml says before anything is built: the
folders searched, the names, and a workload's description and default parameters (`describe`, what
`gpusim list` shows). Reads YAML only, so that listing the workloads loads no kernel, numpy or executor
(gpusim.workloads.loader builds a workload; docs/workloads.md gives the format)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpusim.data import data_dir
from gpusim.errors import WorkloadError

WORKLOAD_FILE = "workload.yaml"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser where PyYAML was built with it


def workload_dirs() -> list[Path]:
    """Folders searched for built-in names, in order: `$GPUSIM_WORKLOAD_PATH` (os.pathsep-separated)
    first, then the shipped `gpusim/data/workloads/` (package data). A folder `<dir>/<name>/` holding a
    workload.yaml is the workload `<name>`; each `<dir>/micro/` is searched too."""
    dirs = [Path(p) for p in os.environ.get("GPUSIM_WORKLOAD_PATH", "").split(os.pathsep) if p]
    dirs.append(data_dir("workloads"))
    out: list[Path] = []
    for d in dirs:
        for cand in (d, d / "micro"):
            if cand not in out:
                out.append(cand)
    return out


def list_workloads() -> list[str]:
    """Names of every workload found in `workload_dirs()`, sorted (a name found twice counts once)."""
    names: set[str] = set()
    for d in workload_dirs():
        if d.is_dir():
            names.update(p.name for p in d.iterdir() if (p / WORKLOAD_FILE).is_file())
    return sorted(names)


def find_workload(name: str) -> Path | None:
    """The folder of the built-in (or `$GPUSIM_WORKLOAD_PATH`) workload `name`, or None."""
    for d in workload_dirs():
        if (d / name / WORKLOAD_FILE).is_file():
            return d / name
    return None


FieldError = Callable[[str, str], WorkloadError]  # (field, message) -> "file:line: field: message"


def field_error(yml: Path, lines: dict[str, int]) -> FieldError:
    """The FieldError of workload.yaml `yml` whose top-level fields start at `lines`."""

    def err(fld: str, msg: str) -> WorkloadError:
        top = fld.split(".")[0].split("[")[0]
        where = f"{yml}:{lines[top]}" if top in lines else str(yml)
        return WorkloadError(f"{where}: {fld}: {msg}")

    return err


@dataclass(frozen=True, slots=True)
class WorkloadInfo:
    """What workload.yaml says of a workload, read without building it."""

    name: str
    description: str
    folder: Path
    defaults: dict[str, int | float]


def describe(name: str) -> WorkloadInfo:
    """The built-in (or `$GPUSIM_WORKLOAD_PATH`) workload `name`'s description and default parameters,
    checked as `load_workload` checks them (a WorkloadError naming file and line); its kernel and
    reference are not read."""
    folder = find_workload(name)
    if folder is None:
        raise WorkloadError(f"{name}: no such workload (see gpusim list)")
    yml = folder / WORKLOAD_FILE
    data, lines = read_yaml(yml)
    if not isinstance(data, dict) or "params" not in data:
        raise WorkloadError(f"{yml}: missing field 'params'")
    return WorkloadInfo(name, str(data.get("description", "") or ""), folder.resolve(),
                        read_params(data, field_error(yml, lines)))


def read_yaml(yml: Path) -> tuple[Any, dict[str, int]]:
    """workload.yaml's data, and the line of each top-level field."""
    try:
        text = yml.read_text()
        loader = _Loader(text)  # parsed once: the node tree gives the lines, and the data is built from it
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except OSError as e:
        raise WorkloadError(f"{yml}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{yml}:{mark.line + 1}" if mark else str(yml)
        raise WorkloadError(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
    lines = {}
    if isinstance(node, yaml.MappingNode):
        lines = {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
    return data, lines


def read_params(data: dict, err: FieldError) -> dict[str, int | float]:
    """`params`: parameter name -> default number."""
    raw = data["params"]
    if not isinstance(raw, dict) or not raw:
        raise err("params", "expected a mapping of parameter name -> default number, "
                  "e.g. {n: 1024, block: 256}")
    defaults: dict[str, int | float] = {}
    for k, v in raw.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise err("params", f"parameter name {k!r} is not an identifier")
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise err(f"params.{k}", f"default must be a number, got {v!r}")
        defaults[k] = v
    return defaults
