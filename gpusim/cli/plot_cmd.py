"""`gpusim plot`: a chart of result JSONs or a sweep table, written as PNG or SVG."""

from __future__ import annotations

import argparse

from gpusim.cli.args import add_config, add_config_set, add_output
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import parse_sets
from gpusim.config import load_config
from gpusim.errors import GpusimError

KINDS = "occupancy|stalls|units|memory|roofline|sol|sweep|timeline"  # gpusim.plot.KINDS, without importing matplotlib


def register(subparsers) -> None:
    p = subparsers.add_parser("plot", help=COMMANDS["plot"],
                              description="Draw a chart of results (gpusim run --json) or a sweep table "
                                          "(CSV or JSON) and write it as PNG or SVG (by the file's suffix).")
    p.add_argument("inputs", nargs="+", metavar="FILE",
                   help="RESULT.json (several for stalls, units, memory, roofline), SWEEP.csv or SWEEP.json")
    p.add_argument("--kind", "-k", required=True, metavar="KIND", help=f"the chart: {KINDS}")
    add_output(p, "--output", "-o", kind="image", required=True, metavar="FILE",
               help="the image to write: .png or .svg")
    p.add_argument("--metric", "-m", default=None,
                   help="sweep charts: the column to draw (default or 'time': what ranks the points, cycles at one "
                        "clock, kernel_seconds where the clocks differ; 'energy': energy_j; e.g. achieved_gflops)")
    p.add_argument("--intensity", default="hierarchical", metavar="hierarchical|dram|moved",
                   help="roofline: each kernel at flops over its L1, L2 and DRAM bytes (default), over DRAM "
                        "bytes alone, or over the workload's bytes_moved")
    p.add_argument("--stall-scale", default="cycles", metavar="cycles|pct",
                   help="stalls: warp-cycles per issued instruction (default) or %% of warp-cycles")
    add_config(p, default=None, help="the config the inputs ran on (default: the one each names, checked by hash)")
    add_config_set(p, help="override a field of --config (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpusim.plot import render, save_figure  # matplotlib loads only when a chart is drawn

    if args.config_sets and not args.config:
        raise GpusimError("--config-set needs --config")
    cfg = load_config(args.config, overrides=parse_sets(args.config_sets)) if args.config else None
    fig = render(args.kind, args.inputs, metric=args.metric, intensity=args.intensity, stall_scale=args.stall_scale,
                 cfg=cfg)
    save_figure(fig, args.output)
    print(f"wrote {args.output} ({args.kind})")
    return 0
