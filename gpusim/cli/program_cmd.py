"""`gpusim program FILE.yaml`: run a program of copies, kernels, events and collectives on streams (kernels
timed by the timing model) and report each operation and the overlap; `gpusim program transformer_layer`:
the shipped tensor-parallel transformer layer on 1, 2, 4, 8 GPUs of each system."""

from __future__ import annotations

import argparse
import dataclasses
import json

from gpusim.cli.args import add_config, add_output, add_params, add_quiet, integer, integers
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import emit_json, emit_text, parse_sets, stdout_taken
from gpusim.config import load_config
from gpusim.errors import GpusimError

TRANSFORMER = "transformer_layer"


def register(subparsers) -> None:
    p = subparsers.add_parser("program", help=COMMANDS["program"],
                              description="Run PROGRAM (a YAML file, docs/system.md) on a configuration's node and "
                                          "print each operation's start and end and the time copy and compute "
                                          f"overlap; or `{TRANSFORMER}`: a Megatron-style tensor-parallel layer "
                                          "on 1, 2, 4, 8 GPUs of each --config, split into compute, "
                                          "communication and overlap.")
    p.add_argument("program", help=f"program YAML file, a shipped program's name (see `gpusim list`), or "
                                   f"{TRANSFORMER}")
    add_config(p, default=None, several=True,
               help=f"config (default a100); for {TRANSFORMER} comma-separated systems (default dgx_a100,a100x8_pcie)")
    p.add_argument("--gpus", type=integers(1, 1024), default="1,2,4,8",
                   help=f"{TRANSFORMER}: GPU counts (default 1,2,4,8)")
    add_params(p, help=f"{TRANSFORMER}: tokens, hidden or ffn_hidden (default 2048, 512, 2048)")
    p.add_argument("--chunks", type=integer(1), default=1,
                   help=f"{TRANSFORMER}: token chunks on alternate streams, to overlap all-reduce with compute")
    add_output(p, "--json", nargs="?", const="-", metavar="FILE", help="write the report as JSON ('-': stdout)")
    add_output(p, "--trace", metavar="FILE", help="write a Chrome/Perfetto trace ('-': stdout; for "
                                                   f"{TRANSFORMER}: of the first config at the most GPUs)")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpusim.analysis.program import simulate_program
    from gpusim.system import run_program, trace_dict

    if args.program == TRANSFORMER:
        from gpusim.analysis.sharding import LayerShape, layer_program, sharding_study

        try:
            shape = LayerShape(**parse_sets(args.sets))
        except (TypeError, ValueError) as exc:
            fields = ", ".join(f.name for f in dataclasses.fields(LayerShape))
            raise GpusimError(f"{TRANSFORMER}: {exc} (--set takes {fields})") from None
        systems = [load_config(c.strip()) for c in (args.config or "dgx_a100,a100x8_pcie").split(",")]
        study = sharding_study(systems, args.gpus, shape, args.chunks)
        emit_json(study.to_dict(), args.json)
        report = None
        if args.trace:
            report = run_program(layer_program(systems[0], shape, max(args.gpus), args.chunks)[0], systems[0])
        text = study.table()
    else:
        if args.sets or args.chunks != 1:
            raise GpusimError(f"--set and --chunks are for {TRANSFORMER}")
        report = simulate_program(args.program, load_config(args.config or "a100"))
        emit_json(report.to_dict(), args.json)
        text = report.table()
    if args.trace:
        emit_text(lambda: json.dumps(trace_dict(report), separators=(",", ":")) + "\n", args.trace)
    if not stdout_taken(args.json, args.trace):
        print(text)
    return 0
