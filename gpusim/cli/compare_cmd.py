"""`gpusim compare WORKLOAD`: one workload over problem sizes on several designs (a CPU-like one beside
GPUs): time, throughput, one element's latency, the crossovers, and their chart."""

from __future__ import annotations

import argparse

from gpusim.cli.args import add_config, add_json, add_metric, add_output, add_quiet, add_renamed, integer, number
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import emit_json

MAX_SIZE = 1e12  # the largest size --sizes reaches (sizes past --max-simulated are extrapolated)
MAX_SIMULATED = 2**31  # the largest size simulated in full (a .u32 element count)


def register(subparsers) -> None:
    p = subparsers.add_parser("compare", help=COMMANDS["compare"],
                              description="Simulate WORKLOAD at log-spaced sizes n on each design: the time of "
                                          "launch + kernel (+ host-device copies with --include-transfers), "
                                          "throughput, the latency of one element, and the sizes where one design "
                                          "overtakes another. Sizes past --max-simulated are extrapolated "
                                          "linearly in waves and marked (docs/system.md).")
    p.add_argument("workload", help="a workload with a size parameter n (saxpy, vecadd, embedding, chase, "
                                    "matmul_tiled, ...), or 'step': a data-parallel multi-GPU step whose sizes "
                                    "are gradient bytes (--config dgx_a100,a100x8_pcie)")
    add_config(p, default="cpu_8core,gtx980,a100", several=True,
               help="the designs, comma-separated (default cpu_8core,gtx980,a100)")
    p.add_argument("--sizes", type=parse_range, default="1e2..1e8", metavar="LOW..HIGH",
                   help="size range (default 1e2..1e8)")
    p.add_argument("--per-decade", type=integer(1, 100), default=1, metavar="K", help="sizes per decade (default 1)")
    p.add_argument("--size-param", default="n", metavar="NAME", help="the parameter swept (default n; e.g. paths)")
    p.add_argument("--set", action="append", default=[], type=parse_setting, dest="sets", metavar="PARAM=VALUE",
                   help="fix another parameter of the workload (repeatable)")
    p.add_argument("--include-transfers", action="store_true",
                   help="count copying the inputs to the GPU and the outputs back over PCIe")
    p.add_argument("--max-simulated", type=number(1, MAX_SIMULATED), default=2**18, metavar="N",
                   help="largest size simulated in full; larger ones are extrapolated (default 262144)")
    add_metric(p, help="what 'best' means: least time (default) or least energy to solution (designs with a power "
                       "model: the table's 'least energy' column, the explanation leads with energy)")
    add_output(p, "--plot", kind="image", metavar="FILE", help="write the crossover and latency charts (.png or .svg)")
    add_json(p, help="write the comparison as JSON to FILE ('-' or no FILE: stdout)")
    add_quiet(p)
    add_renamed(p, "--configs")
    p.set_defaults(func=run)


def parse_range(text: str) -> tuple[float, float]:
    """`1e2..1e8` -> (100.0, 1e8); an argparse `type`."""
    low, sep, high = text.partition("..")
    size = number(1, MAX_SIZE)
    try:
        bounds = size(low), size(high if sep else low)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LOW..HIGH, e.g. 1e2..1e8: {exc}") from None
    if bounds[0] > bounds[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: LOW is above HIGH")
    return bounds


def parse_setting(text: str) -> tuple[str, int | float]:
    """`n=65536` -> ('n', 65536); an argparse `type`."""
    key, sep, value = text.partition("=")
    try:
        if not (sep and key.strip()):
            raise ValueError
        return key.strip(), float(value) if "." in value or "e" in value.lower() else int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=NUMBER, e.g. n=65536") from None


def run(args: argparse.Namespace) -> int:
    from gpusim.analysis.compare import compare, log_sizes, multi_gpu_step

    sizes = log_sizes(*args.sizes, per_decade=args.per_decade)
    configs = [c.strip() for c in args.config.split(",") if c.strip()]
    if args.workload == "step":  # a data-parallel training step: NVLink vs PCIe (sizes: gradient bytes)
        step = multi_gpu_step(configs, sizes)
        emit_json(step.to_dict(), args.json)
        if args.plot:
            from gpusim.plot.compare import step_figure
            from gpusim.plot.io import save_figure

            save_figure(step_figure(step), args.plot)
        if args.json != "-":
            print(step.table())
        return 0
    fixed = dict(args.sets)
    result = compare(args.workload, configs, sizes, include_transfers=args.include_transfers,
                     max_simulated=int(args.max_simulated), size=args.size_param, params=fixed,
                     metric=args.metric)
    emit_json(result.to_dict(), args.json)
    if args.plot:
        from gpusim.plot.compare import compare_figure
        from gpusim.plot.io import save_figure

        save_figure(compare_figure(result), args.plot)
    if args.json != "-":
        print(result.table())
        if args.plot:
            print(f"wrote {args.plot}")
    return 0
