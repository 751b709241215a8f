"""What runs one sweep point, wherever it runs (this process, a pool worker, a Dask worker): simulate it and
reduce the SimResult to a small JSON-ready outcome, the thing the cache stores."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from gpusim.config import Config
from gpusim.errors import GpusimError
from gpusim.stats import simulate
from gpusim.stats.metrics import flatten
from gpusim.workloads import Workload, load_workload


@dataclass(frozen=True)
class Task:
    """A point as a worker needs it: the workload by reference (a built-in name or a folder path, loaded
    once per worker process), the resolved Config (overrides and warp scheduler applied), every workload
    parameter and the seed."""

    workload: str
    cfg: Config
    params: dict[str, int | float]
    seed: int


@functools.lru_cache(maxsize=16)
def _workload(ref: str) -> Workload:
    return load_workload(ref)


def run_task(task: Task) -> dict[str, Any]:
    """Simulate one point (without raising on a wrong result). The outcome is {"verified", "mismatch" (where
    the values differ, or None), "wall_seconds", "metrics" (flattened kernel metrics), "verdict",
    "verdict_reason"}, or failure(exc) when the point cannot run."""
    try:
        r = simulate(_workload(task.workload), task.cfg, seed=task.seed, verify=False, **task.params)
    except Exception as exc:  # one point's failure must not cost the sweep its other points
        return failure(exc)
    return {"verified": r.verified, "mismatch": r.run.message() if r.verified is False else None,
            "wall_seconds": r.wall_seconds, "metrics": dict(flatten(r.kernel)), "verdict": r.verdict.kind,
            "verdict_reason": r.verdict.summary}


def failure(exc: BaseException) -> dict[str, str]:
    """The outcome of a point that could not run: a GpusimError's own message (a bad launch, a kernel
    fault); anything else is named as an internal error with its type."""
    if isinstance(exc, GpusimError):
        return {"error": str(exc)}
    return {"error": f"internal error: {type(exc).__name__}: {exc}"}


__all__ = ["Task", "failure", "run_task"]
