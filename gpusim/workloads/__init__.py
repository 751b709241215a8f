"""Workloads: a kernel, its size parameters and launch shape, and a numpy reference to verify it against.
Each is a folder under `gpusim/data/workloads/` (micro-benchmarks under `micro/`); see docs/workloads.md.

    >>> from gpusim.workloads import load_workload, list_workloads
    >>> run = load_workload("saxpy").run({"n": 1000}, "a100")
    >>> run.check().summary()["verified"]
    True
"""

from gpusim.workloads.loader import (
    Workload,
    find_workload,
    list_workloads,
    load_workload,
    workload_dirs,
)
from gpusim.workloads.verify import WorkloadRun, compare

__all__ = ["Workload", "WorkloadRun", "compare", "find_workload", "list_workloads", "load_workload",
           "workload_dirs"]
