"""`gpusim sweep WORKLOAD`: simulate the cross product of launch configurations, configs and config
overrides (gpusim.sweep), print the table and the best point, and write the table as CSV or JSON."""

from __future__ import annotations

import argparse
import sys
import warnings

from gpusim.cli.args import (
    add_config,
    add_config_set,
    add_csv,
    add_json,
    add_metric,
    add_output,
    add_params,
    add_quiet,
    add_renamed,
    integer,
    number,
)
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import add_executor_args, emit_text, make_executor, stdout_taken
from gpusim.config.vocab import SCHEDULER_POLICIES as SCHEDULERS
from gpusim.errors import GpusimError

# gpusim.sweep.result.TIE_PCT, spelled here so that `gpusim sweep --help` imports no sweep (the timing
# engine with it); tests/cli/test_startup.py checks that the two agree.
TIE_PCT = 1.0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help=COMMANDS["sweep"],
        description="Simulate WORKLOAD at every combination of the values given (--block, --grid, --set, "
                    "--config, --config-set, --warp-scheduler), in parallel, verifying each against numpy; "
                    "print one line per point and the best point (fewest cycles, or least energy with --metric "
                    "energy) of each problem size with the "
                    "evidence and the points tied with it, and write the table (one row per point, every metric) "
                    "as CSV or JSON. Points simulated before are read from the cache. Exit status 1 when a point "
                    "failed (its row says why). See docs/sweep.md.")
    p.add_argument("workload", help="workload name (see `gpusim list`) or folder")
    add_config(p, several=True)
    p.add_argument("--block", metavar="N[,N...]", help="values of the workload's `block` parameter, e.g. 64,128,256")
    p.add_argument("--grid", metavar="N[,N...]", help="values of the workload's `grid` parameter")
    add_params(p, lists=True, help="a workload parameter: one value fixes it, a comma list sweeps it (repeatable)")
    add_config_set(p, lists=True, help="a config field: one value fixes it, a comma list sweeps it; a dotted field "
                                       "or a unique leaf name: sm_count=54,108 (repeatable)")
    p.add_argument("--zip", action="append", metavar="AXIS,AXIS[,...]",
                   help="swept axes (parameters or config fields) that vary together, their first values in one "
                        "point, their second in the next, instead of every combination; each needs as many "
                        "values (repeatable): --config-set dram.bandwidth_gbps=800,3000 --config-set "
                        "l2.size_bytes=20971520,41943040 --zip dram.bandwidth_gbps,l2.size_bytes")
    p.add_argument("--warp-scheduler", metavar="POLICY[,POLICY...]",
                   help=f"warp scheduler policies ({', '.join(SCHEDULERS)}; default: the config's)")
    p.add_argument("--seed", type=integer(0), default=0, help="seed of the input generator (default 0)")
    p.add_argument("--tie", type=number(0, 100), default=TIE_PCT, metavar="PCT",
                   help=f"points within PCT percent of the best point's cycles are ties (default {TIE_PCT:g})")
    add_metric(p, help="what 'best' means: fewest cycles / least time (default), or least energy (energy_j: configs "
                       "with a power model; the others are left out of the ranking)")
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="keep points whose values differ from the numpy reference as ok (verified False)")
    add_executor_args(p, "the points")
    add_output(p, "--cache-dir", kind="folder", metavar="DIR",
                   help="result cache folder (default $GPUSIM_CACHE_DIR or ~/.cache/gpusim)")
    p.add_argument("--no-cache", action="store_true", help="simulate every point; read and write no cache")
    add_csv(p)
    add_json(p, help="write the table as JSON to FILE ('-' or no FILE: stdout)")
    add_quiet(p)
    add_renamed(p, "--config-override")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpusim.sweep import ResultCache, parse_values, sweep

    executor = make_executor(args)
    grid = {name: parse_values(text, f"--{name}") for name, text in (("block", args.block), ("grid", args.grid))
            if text is not None}
    params = {}
    for item in args.sets or []:
        name, values = _assignment(item, "--set")
        if name in grid or name in params:
            raise GpusimError(f"--set {item!r}: parameter {name!r} is given twice")
        if len(values) == 1:
            params[name] = values[0]
        else:
            grid[name] = values
    overrides = dict(_assignment(item, "--config-set") for item in args.config_sets or [])
    policies = parse_values(args.warp_scheduler, "--warp-scheduler") if args.warp_scheduler else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            result = sweep(args.workload, args.config.split(","), grid=grid, overrides=overrides, params=params,
                           warp_schedulers=policies, seed=args.seed, verify=args.verify, executor=executor,
                           cache=None if args.no_cache else ResultCache(args.cache_dir),
                           progress=not args.quiet and sys.stderr.isatty(), tie_pct=args.tie,
                           zipped=[[n.strip() for n in z.split(",")] for z in args.zip or []], metric=args.metric)
        except BaseException as exc:  # Ctrl-C or SIGTERM (maybe wrapped): gpusim.cli.main prints the note and exits
            from gpusim.cli.main import signal_behind

            stop = signal_behind(exc)
            if stop is not None and not args.no_cache:
                stop.add_note("the points that finished are cached: run the same command again to resume")
            raise
        finally:
            _report(caught)
    emit_text(result.to_csv, args.csv)
    emit_text(result.to_json, args.json)
    if not stdout_taken(args.csv, args.json):
        cached = sum(bool(r["cached"]) for r in result.rows)
        print(result.table())
        print()
        print(result.explain())
        warned = result.warned()
        if warned:
            print("\nabove peak (the CSV's warnings column):\n" + "\n".join(f"  {w}" for w in warned))
        print(f"\n{len(result.rows)} points: {len(result.rows) - cached} simulated, {cached} from the cache")
    failed = sum(r["status"] != "ok" for r in result.rows)
    if failed:
        print(f"gpusim sweep: {failed} of {len(result.rows)} points failed (status error; the error column says why)",
              file=sys.stderr)
    return 1 if failed else 0


def _assignment(item: str, flag: str) -> tuple[str, list]:
    """`NAME=V1,V2` -> (NAME, [V1, V2])."""
    from gpusim.sweep.points import parse_values

    name, sep, text = item.partition("=")
    if not sep or not name.strip():
        raise GpusimError(f"{flag} {item!r}: expected NAME=VALUE[,VALUE...]")
    return name.strip(), parse_values(text, f"{flag} {name.strip()}")


def _report(caught: list[warnings.WarningMessage]) -> None:
    """Cache warnings as one line each; any other warning as Python shows it."""
    from gpusim.sweep.cache import CacheWarning

    for w in caught:
        if issubclass(w.category, CacheWarning):
            print(f"gpusim sweep: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
