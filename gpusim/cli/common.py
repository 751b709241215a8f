"""Helpers shared by the subcommands: writing JSON atomically, parsing `--set k=v`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from gpusim.errors import GpusimError
from gpusim.stats.files import write_atomic

__all__ = ["emit_json", "emit_text", "parse_sets", "stdout_taken", "write_atomic"]


def emit_text(text: Callable[[], str], dest: str | None) -> None:
    """`dest` '-' prints `text()` to stdout, a path writes it to the file atomically, None does nothing
    (and does not call `text`)."""
    if dest == "-":
        sys.stdout.write(text())
    elif dest is not None:
        write_atomic(dest, text())


def emit_json(obj, dest: str | None) -> None:
    """`obj` as indented JSON, through `emit_text`."""
    emit_text(lambda: json.dumps(obj, indent=2, default=_jsonable) + "\n", dest)


def stdout_taken(*dests: str | None) -> bool:
    """An output goes to stdout ('-'), so the human-readable report must not."""
    return "-" in dests


def _jsonable(obj):
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def parse_sets(items: list[str] | None) -> dict[str, object]:
    """`--set n=1024 --set block=128` -> {'n': 1024, 'block': 128} (ints, floats or strings)."""
    out: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise GpusimError(f"--set {item!r}: expected KEY=VALUE")
        out[key.strip()] = _number(value.strip())
    return out


def _number(text: str):
    for conv in (int, float):
        try:
            return conv(text, 0) if conv is int else conv(text)
        except ValueError:
            pass
    return text
