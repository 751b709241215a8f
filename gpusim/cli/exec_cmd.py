"""`gpusim exec [OPTIONS] -- PROGRAM [ARGS]`: run a whole CUDA application (built with `nvcc -cudart shared`)
with every kernel simulated (gpusim.exec; docs/exec.md)."""

from __future__ import annotations

import argparse
import sys

from gpusim.cli.args import add_config, add_config_set, add_json, add_output
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import emit_json, parse_sets


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "exec", help=COMMANDS["exec"],
        description="Run PROGRAM as it is, its host code on this machine and every CUDA runtime call served by "
                    "gpusim: device memory, copies over the modelled PCIe, streams and events, and each kernel "
                    "simulated by the timing model. The program's own stdout and stderr are untouched; gpusim's "
                    "table (one row per kernel launch, then the program's simulated GPU time, copies included) "
                    "goes to stderr at the end. The exit status is the program's. Build the program with "
                    "`nvcc -cudart shared -arch=sm_80 ...` (docs/exec.md).")
    add_config(p)
    add_config_set(p)
    add_json(p, help="write the launches, the timeline and each kernel's result as JSON to FILE ('-': stdout)")
    add_output(p, "--trace", metavar="FILE", help="write the program's GPU timeline as a Chrome trace (Perfetto)")
    p.add_argument("--quiet", "-q", action="store_true", help="no table at the end (the JSON still has it)")
    p.add_argument("--include-dir", action="store_true",
                   help="print the folder of gpusim_cuda_compat.h (declarations CUDA 13 removed that older suites "
                        "call) and exit")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS]",
                   help="the program and its arguments")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpusim.exec import ExecError, include_dir, run_app, write_trace
    from gpusim.stats.simulate import configure

    if args.include_dir:
        print(include_dir())
        return 0
    argv = list(args.program)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise ExecError("no program to run: gpusim exec [OPTIONS] -- PROGRAM [ARGS]")
    cfg = configure(args.config, overrides=parse_sets(args.config_sets, "--config-set") or None)
    result = run_app(argv, cfg, quiet=args.quiet)
    sys.stdout.flush()
    if not args.quiet:
        print(result.table(), file=sys.stderr)
        if result.unsupported:
            print(f"gpusim: the program called {len(result.unsupported)} runtime function(s) gpusim does not "
                  f"implement: {', '.join(result.unsupported)}", file=sys.stderr)
    if args.json:
        emit_json(result.to_dict(), args.json)
    if args.trace:
        write_trace(result, args.trace)
    return result.exit_status
