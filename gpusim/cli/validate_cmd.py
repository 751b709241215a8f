"""`gpusim validate`: the microbenchmark suite against published figures and real measurements
(gpusim/data/validation/published.yaml): a table of figure, simulated, reference, error, tolerance and
source; exit status 1 when a figure is outside its tolerance without a known gap written beside it.
`gpusim validate --kernels`: whole kernels measured on the config's GPU against their simulation
(gpusim/analysis/kernel_validation.py): per-pair error, MAPE, mean signed error, Pearson r of log times."""

from __future__ import annotations

import argparse
import sys

from gpusim.cli.args import add_config, add_config_set, add_json, add_output, add_quiet, add_renamed
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import add_executor_args, emit_json, emit_text, make_executor, parse_sets, stdout_taken


def register(subparsers) -> None:
    p = subparsers.add_parser("validate", help=COMMANDS["validate"],
                              description="Run gpusim's microbenchmark suite (pointer chases, dependent and "
                                          "independent chains, bank conflicts, bandwidths, atomics, divergence, "
                                          "launch) on a config and compare each figure with its published or "
                                          "measured reference (gpusim/data/validation/published.yaml; "
                                          "docs/validation.md). Exit status 1 when a figure is outside its "
                                          "tolerance and no known gap is written beside it.")
    add_config(p, help="built-in config with reference figures: a100, gtx980, h200 (default a100; --kernels: h200)",
               default=None)
    p.add_argument("--kernels", action="store_true",
                   help="whole kernels measured on the config's GPU (gpusim/data/measurements/<config>.json) "
                        "against the simulated ports of each (.sasm and nvcc PTX), instead of the microbenchmarks")
    p.add_argument("--power", action="store_true",
                   help="the power model (docs/power.md): idle and one-unit stress microbenchmarks (FFMA, SFU, "
                        "tensor, shared, L2, DRAM) and the model's board power for each, against published or "
                        "measured figures (gpusim/data/validation/power.yaml); --figure picks microbenchmarks")
    p.add_argument("--kernel", action="append", metavar="NAME", help="with --kernels: only this measured kernel "
                                                                      "(repeatable)")
    p.add_argument("--size", action="append", choices=("small", "medium", "large"),
                   help="with --kernels: only this measured size (repeatable)")
    p.add_argument("--front-end", action="append", choices=("sasm", "ptx", "sass"), dest="front_end",
                   help="with --kernels: only this front end (repeatable): sasm (gpusim's .sasm workload), ptx "
                        "(nvcc's PTX of the CUDA port) or sass (the SASS ptxas makes of it, run whole: its large sizes "
                        "only with --size large and --front-end sass given)")
    p.add_argument("--sample", choices=("auto", "on", "off"), default="auto",
                   help="with --kernels: sampled simulation of the large kernels (docs/sampling.md; default auto: "
                        "the large sizes sampled where that gains, their bound shown beside the error; small and "
                        "medium sizes whole; on: every size sampled)")
    p.add_argument("--program-order", action="store_true", dest="program_order",
                   help="with --kernels: run the .sasm and PTX ports in program order, as written, without the "
                        "ptxas model (docs/isa.md, 'The ptxas model'; SASS is machine code either way)")
    p.add_argument("--figure", action="append", metavar="ID", help="only this figure (repeatable; --list shows ids)")
    add_config_set(p, help="config override (repeatable), e.g. --config-set opcodes.rsqrt.latency_cycles=39")
    p.add_argument("--list", action="store_true", help="list the figures with a reference for --config and exit")
    add_json(p, help="write the rows as JSON to FILE ('-' or no FILE: stdout)")
    add_output(p, "--chart", kind="image", metavar="FILE", help="write the correlation chart (.png or .svg)")
    add_output(p, "--markdown", metavar="FILE", help="write the table(s) as Markdown (docs/validation.md's form)")
    add_executor_args(p, "the figures (with --kernels, the kernels); the rows are the same, in the same order")
    add_quiet(p)
    add_renamed(p, "--set", to="--config-set (--set is a parameter of what runs)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.kernels:
        return run_kernels(args)
    if args.power:
        return run_power(args)
    kernel_only = [f for f, v in (("--kernel", args.kernel), ("--size", args.size), ("--front-end", args.front_end),
                                  ("--sample", args.sample != "auto"), ("--program-order", args.program_order))
                   if v]
    if kernel_only:
        print(f"gpusim validate: error: {kernel_only[0]} needs --kernels", file=sys.stderr)
        return 2
    args.config = args.config or "a100"
    from gpusim.analysis.validate import references, validate

    if args.list:
        for fig, ref, source, _ in references(args.config, args.figure):
            print(f"{fig['id']:30s} {fig['kind']:16s} {ref:10.4g} {fig['units']:20s} {source}")
        return 0
    to_stdout = not stdout_taken(args.json, args.markdown)  # the table, unless JSON or Markdown go there
    quiet = not to_stdout or args.quiet  # --quiet: no progress lines
    result = validate(args.config, figures=args.figure, overrides=parse_sets(args.config_sets, "--config-set"),
                      progress=None if quiet else lambda r: print(f"  {r.figure} ... {r.status}", file=sys.stderr),
                      executor=_executor(args))
    emit_json(result.to_dict(), args.json)
    emit_text(result.markdown, args.markdown)
    if args.chart:
        from gpusim.plot.correlation import correlation_figure
        from gpusim.plot.io import save_figure

        save_figure(correlation_figure([result]), args.chart)
    if to_stdout:
        print(result.table())
        if args.chart:
            print(f"wrote {args.chart}")
    return 1 if result.failed else 0


def run_kernels(args: argparse.Namespace) -> int:
    from gpusim.analysis.kernel_validation import validate_kernels

    if args.figure or args.list:
        print(f"gpusim validate: error: {'--figure' if args.figure else '--list'} is for the microbenchmarks, "
              "not --kernels", file=sys.stderr)
        return 2
    to_stdout = not stdout_taken(args.json, args.markdown)  # the table, unless JSON or Markdown go there
    quiet = not to_stdout or args.quiet  # --quiet: no progress lines

    def progress(r) -> None:
        if not quiet:
            bound = f" +-{r.bound_pct:.1f} %" if r.mode == "sampled" else ""
            print(f"  {r.workload} {r.size}: {r.simulated_us:.1f} us{bound} vs {r.measured_us:.1f} measured "
                  f"({r.error_pct:+.1f} %, {r.seconds:.0f} s)", file=sys.stderr)

    result = validate_kernels(args.config or "h200", kernels=args.kernel, sizes=args.size, front_ends=args.front_end,
                              sample=args.sample, overrides=parse_sets(args.config_sets, "--config-set"),
                              progress=progress, ptxas_model=not args.program_order, executor=_executor(args))
    emit_json(result.to_dict(), args.json)
    emit_text(result.markdown, args.markdown)
    if args.chart:
        from gpusim.plot.correlation import kernel_correlation_figure
        from gpusim.plot.io import save_figure

        save_figure(kernel_correlation_figure(result), args.chart)
    if to_stdout:
        print(result.table())
        if args.chart:
            print(f"wrote {args.chart}")
    return 0


def _executor(args: argparse.Namespace):
    """The executor --jobs, --dask or --dask-scheduler name. Before a local pool forks its workers the timing
    engine's machine code is loaded here, once, for them all to inherit, instead of once in each."""
    executor = make_executor(args)
    if getattr(executor, "jobs", 1) > 1:
        from gpusim.timing import warm_up

        warm_up()
    return executor


def run_power(args: argparse.Namespace) -> int:
    from gpusim.analysis.power_validation import validate_power

    quiet = stdout_taken(args.json, args.markdown) or args.quiet
    result = validate_power(args.config or "a100", benches=args.figure,
                            overrides=parse_sets(args.config_sets, "--config-set"),
                            progress=None if quiet else lambda r: print(f"  {r.bench}: {r.power_w:.1f} W at "
                                                                        f"{r.clock_mhz:.0f} MHz ({r.status})",
                                                                        file=sys.stderr))
    emit_json(result.to_dict(), args.json)
    emit_text(result.markdown, args.markdown)
    if not quiet:
        print(result.table())
    return 1 if result.failed else 0
