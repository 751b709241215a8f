"""Workloads: a kernel, its size parameters and launch shape, and a numpy reference to verify it against.
Each is a folder under `gpusim/data/workloads/` (micro-benchmarks under `micro/`); see docs/workloads.md.

    >>> from gpusim.workloads import load_workload, list_workloads
    >>> run = load_workload("saxpy").run({"n": 1000}, "a100")
    >>> run.check().summary()["verified"]
    True

The names below are imported on first use (PEP 562): `gpusim.workloads.catalog` (the names and
descriptions, YAML only) loads without the executor that `gpusim.workloads.loader` needs.
"""

import importlib

_LAZY = {
    **dict.fromkeys(["find_workload", "list_workloads", "workload_dirs"], "gpusim.workloads.catalog"),
    **dict.fromkeys(["Workload", "load_workload"], "gpusim.workloads.loader"),
    **dict.fromkeys(["WorkloadRun", "compare"], "gpusim.workloads.verify"),
}

__all__ = ["Workload", "WorkloadRun", "compare", "find_workload", "list_workloads", "load_workload",
           "workload_dirs"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
