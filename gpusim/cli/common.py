"""Helpers shared by the subcommands: writing JSON atomically, parsing `--set k=v`, the options saying
where parallel work runs (`--jobs N`, `--dask`, `--dask-scheduler tcp://HOST:PORT`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from gpusim.cli.args import add_renamed, integer
from gpusim.errors import GpusimError

__all__ = ["add_executor_args", "emit_json", "emit_text", "make_executor", "parse_sets", "stdout_taken",
           "write_atomic"]


MAX_JOBS = 1024  # worker processes (or Dask workers) a sweep or tuner may start


def add_executor_args(p, what: str) -> None:
    """`--jobs N`, and `--dask` or `--dask-scheduler tcp://HOST:PORT`: where `what` (e.g. "the points")
    runs."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dask-scheduler", metavar="tcp://HOST:PORT",
                       help=f"run {what} on the Dask cluster with this scheduler")
    where.add_argument("--dask", action="store_true", help=f"run {what} on a Dask LocalCluster of --jobs workers")
    p.add_argument("--jobs", "-j", type=integer(1, MAX_JOBS), metavar="N",
                   help="local worker processes (default: one per core; 1 runs in this process)")
    add_renamed(p, "--scheduler")


def make_executor(args):
    """The executor the options of `add_executor_args` name (a LocalExecutor by default)."""
    from gpusim.stats.simulate import SCHEDULERS
    from gpusim.sweep import DaskExecutor, LocalExecutor

    if args.dask_scheduler in SCHEDULERS:
        raise GpusimError(f"--dask-scheduler is the Dask scheduler's address (tcp://HOST:PORT); for the warp "
                          f"scheduler policy use --warp-scheduler {args.dask_scheduler}")
    if args.dask_scheduler is not None and args.jobs is not None:
        raise GpusimError("--jobs sets local workers; with --dask-scheduler the cluster's workers run the points")
    if args.dask_scheduler is not None:
        return DaskExecutor(args.dask_scheduler)
    if args.dask:
        return DaskExecutor(workers=args.jobs)
    return LocalExecutor(args.jobs)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """gpusim.stats.files.write_atomic, imported when a file is written: importing gpusim.stats loads the
    timing engine, which a subcommand's `--help` must not wait for."""
    from gpusim.stats.files import write_atomic as write

    write(path, data)


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


def parse_sets(items: list[str] | None, flag: str = "--set") -> dict[str, object]:
    """`--set n=1024 --set block=128` -> {'n': 1024, 'block': 128} (ints, floats or strings); `flag`
    names the option in an error."""
    out: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise GpusimError(f"{flag} {item!r}: expected KEY=VALUE")
        out[key.strip()] = _number(value.strip())
    return out


def _number(text: str):
    for conv in (int, float):
        try:
            return conv(text, 0) if conv is int else conv(text)
        except ValueError:
            pass
    return text
