"""The shipped configs (`configs/*.yaml`), programs (`configs/programs/*.yaml`) and workloads
(`workloads/<name>/`, micro-benchmarks in `workloads/micro/<name>/`): package data, found through
`importlib.resources`, so that a wheel, an sdist and an editable install find them the same way."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["data_dir"]


def data_dir(kind: str) -> Path:
    """The folder of the shipped `kind` ("configs", "configs/programs" or "workloads")."""
    return Path(str(files(__name__).joinpath(*kind.split("/"))))
