"""`gpusim list`: the built-in workloads and configs."""

from __future__ import annotations

import gpusim
from gpusim.config import builtin_configs


def register(subparsers) -> None:
    p = subparsers.add_parser("list", help="list workloads and built-in configs")
    p.set_defaults(func=run)


def run(args) -> int:
    print("workloads:")
    for name in gpusim.list_workloads():
        wl = gpusim.load_workload(name)
        params = ", ".join(f"{k}={v}" for k, v in wl.defaults.items())
        print(f"  {name:<22} {wl.description}  [{params}]")
    print("configs:")
    for name in builtin_configs():
        print(f"  {name}")
    return 0
