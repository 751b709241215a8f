"""`gpusim list`: the shipped workloads, configs and programs (and those on $GPUSIM_WORKLOAD_PATH and
$GPUSIM_CONFIG_PATH); `--json`: the same as one record per item, which `pandas.read_json` reads as a table."""

from __future__ import annotations

from gpusim.cli.args import add_output
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import emit_json
from gpusim.config import builtin_configs, load_config
from gpusim.system import builtin_programs, find_program, load_program
from gpusim.workloads.catalog import describe, list_workloads


def register(subparsers) -> None:
    p = subparsers.add_parser("list", help=COMMANDS["list"],
                              description="List the workloads, configs and programs gpusim finds by name.")
    add_output(p, "--json", nargs="?", const="-", metavar="FILE",
               help="write them as JSON records {kind, name, description, params, source} to FILE "
                    "('-' or no value: stdout)")
    p.set_defaults(func=run)


def records() -> list[dict]:
    """One record per workload, config and program: kind, name, description, params (a workload's
    default size parameters, as `k=v, ...`; empty for the others) and the file or folder it comes from."""
    rows = []
    for name in list_workloads():  # (their workload.yaml only: no kernel is built)
        wl = describe(name)
        rows.append(_record("workload", name, wl.description, str(wl.folder),
                            ", ".join(f"{k}={v}" for k, v in wl.defaults.items())))
    for name in builtin_configs():
        cfg = load_config(name)
        rows.append(_record("config", name, cfg.description, cfg.source))
    for name in builtin_programs():
        rows.append(_record("program", name, load_program(name).description, str(find_program(name))))
    return rows


def _record(kind: str, name: str, description: str, source: str, params: str = "") -> dict:
    return {"kind": kind, "name": name, "description": description, "params": params, "source": source}


def run(args) -> int:
    rows = records()
    if args.json is not None:
        emit_json(rows, args.json)
        if args.json == "-":
            return 0
    for kind, title in (("workload", "workloads"), ("config", "configs"), ("program", "programs")):
        print(f"{title}:")
        for r in rows:
            if r["kind"] == kind:
                params = f"  [{r['params']}]" if r["params"] else ""
                print(f"  {r['name']:<22} {r['description']}{params}")
    return 0
