"""`gpusim run WORKLOAD`: simulate a workload on a configuration (the timing model: cycles, metrics, the
bottleneck verdict) and verify its values against numpy; `--functional` runs the functional executor
alone (values and instruction counts, no cycles); `--source` adds the per-line source view
(gpusim.stats.source)."""

from __future__ import annotations

import argparse
import sys
import time

import gpusim
from gpusim.cli.args import (
    add_config,
    add_config_set,
    add_csv,
    add_json,
    add_output,
    add_params,
    add_quiet,
    add_renamed,
    integer,
    number,
)
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import emit_json, emit_text, parse_sets, stdout_taken
from gpusim.config.vocab import SCHEDULER_POLICIES
from gpusim.errors import GpusimError

# The runaway-loop guard's fallback count, as --help shows it: gpusim.functional.warps.DEFAULT_MAX_STEPS_PER_WARP,
# spelled here so that `gpusim run --help` does not import the executor (tests/cli/test_startup.py checks
# that the two agree).
MAX_STEPS_SHOWN = "4,294,967,296"


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help=COMMANDS["run"],
                              description="Simulate WORKLOAD (a built-in name or a folder) on CONFIG: execute it "
                                          "lane by lane, compare its outputs with the numpy reference, and run "
                                          "its instruction streams through the timing model for cycles, metrics "
                                          "(docs/stats.md) and a bottleneck verdict. Exit status 1 when the "
                                          "outputs differ from the reference.")
    p.add_argument("workload", help="workload name (see `gpusim list`) or folder")
    add_config(p)
    add_params(p, help="a workload parameter, e.g. --set n=4096 (repeatable)")
    add_config_set(p)
    p.add_argument("--warp-scheduler", choices=SCHEDULER_POLICIES,
                   help="warp scheduler policy (default: the config's scheduler.policy)")
    p.add_argument("--functional", action="store_true",
                   help="functional execution only (values, instruction counts), no timing model")
    p.add_argument("--seed", type=integer(0), default=0, help="seed of the input generator (default 0)")
    p.add_argument("--max-steps", type=integer(1), default=None, metavar="N",
                   help="fault when a warp issues more than N instructions (the runaway-loop guard). Default: "
                        "a kernel is stopped on evidence that it never ends (a warp in a loop with no way out, a "
                        "block back in a state it was in; docs/robustness.md), and a warp past "
                        f"{MAX_STEPS_SHOWN} instructions faults")
    p.add_argument("--max-cycles", type=integer(1), default=None, metavar="N",
                   help="stop the timing model at cycle N and say which warps are still running, and on what")
    p.add_argument("--sample", choices=("auto", "on", "off"), default="off",
                   help="sampled simulation of large kernels (docs/sampling.md): auto simulates the first waves "
                        "of blocks with loops cut short and extrapolates, printing the estimate and its error "
                        "bound, or simulates in full where that gains little; on samples whenever it can; "
                        "off (default) simulates every instruction")
    p.add_argument("--sample-bound", type=number(0.1, 99.0), default=None, metavar="PCT",
                   help="with --sample: the error bound, in %%, the sample grows towards (more waves, deeper loop "
                        "levels; default 5); auto simulates in full where meeting it would cost more")
    p.add_argument("--sample-budget", type=integer(1), default=None, metavar="N",
                   help="with --sample: simulate up to about N warp instructions in detail (default: a twentieth "
                        "of the kernel's, at most 6,000,000, about half a minute); more cuts loops later, which "
                        "is more accurate")
    p.add_argument("--source", action="store_true",
                   help="also print the kernel's source with per-line results, as Nsight Compute's Source page: "
                        "warp instructions, share of the warp-state samples and top stalls, memory requests, "
                        "sectors and wavefronts per request (in --json: 'source' per line, 'pcs' per instruction; "
                        "docs/stats.md)")
    p.add_argument("--program-order", action="store_true",
                   help="run the kernel in program order, as written: without the ptxas model (moves folded, counted "
                        "loops unrolled, each block's instructions scheduled; docs/isa.md, 'The ptxas model')")
    add_json(p, help="write the full result as JSON to FILE ('-' or no FILE: stdout)")
    add_csv(p, help="write the metrics as tidy long-format CSV to FILE ('-': stdout; see docs/stats.md)")
    add_output(p, "--html", metavar="FILE",
               help="write a self-contained HTML report to FILE (docs/report.md; with --source, the source view)")
    add_quiet(p)
    add_renamed(p, "--scheduler")
    add_output(p, "--trace", metavar="FILE",
                   help="write the block timeline as a Chrome/Perfetto trace (JSON) to FILE ('-': stdout)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.functional:
        timing_only = [f"--{n.replace('_', '-')}" for n in ("warp_scheduler", "csv", "trace", "html", "max_cycles")
                       if getattr(args, n) is not None]
        if args.sample != "off":
            timing_only.append("--sample")
        if args.sample_budget is not None:
            timing_only.append("--sample-budget")
        if args.sample_bound is not None:
            timing_only.append("--sample-bound")
        if args.program_order:
            timing_only.append("--program-order")
        if timing_only:
            verb = "needs" if len(timing_only) == 1 else "need"
            raise GpusimError(f"{' and '.join(timing_only)} {verb} the timing model: drop --functional")
        return run_functional(args)
    return run_timing(args)


def run_timing(args: argparse.Namespace) -> int:
    if args.sample != "off":
        if args.source:
            raise GpusimError("--source needs the whole kernel simulated: drop --sample")
        return run_sampled(args)
    if args.sample_budget is not None:
        raise GpusimError("--sample-budget needs --sample auto or on")
    if args.sample_bound is not None:
        raise GpusimError("--sample-bound needs --sample auto or on")
    from gpusim.stats import simulate
    from gpusim.stats.source import format_source

    wl = gpusim.load_workload(args.workload)
    result = simulate(wl, args.config, seed=args.seed, scheduler=args.warp_scheduler,
                      overrides=parse_sets(args.config_sets, "--config-set") or None, max_steps_per_warp=args.max_steps,
                      max_cycles=args.max_cycles, verify=False, per_pc=args.source, ptxas_model=not args.program_order,
                      **parse_sets(args.sets))
    summary = result.summary_table
    if args.source:
        title = f"source view: {result.provenance['workload']} on {result.provenance['config']} (timing)"
        summary = lambda: result.summary_table() + "\n\n" + format_source(result.source, title=title)  # noqa: E731
    _emit(args, result, result, summary)
    if result.verified is False:
        print(result.run.message(), file=sys.stderr)
        return 1
    return 0


def run_sampled(args: argparse.Namespace) -> int:
    """`--sample auto|on`: the estimate, its bound and what was simulated; the whole kernel's metrics
    (estimated from the sample, with their bounds) in the summary, the JSON and the HTML report. --csv
    and --trace describe the run that was simulated in detail: the whole kernel when it ran in full,
    else the largest sampled run (the first blocks, loops cut short)."""
    from gpusim.analysis.sampling import simulate_sampled

    budget = {} if args.sample_budget is None else {"max_sample_warp_instructions": args.sample_budget}
    if args.sample_bound is not None:
        budget["bound"] = args.sample_bound / 100
    wl = args.workload
    if args.program_order:
        wl = gpusim.load_workload(wl).for_config(None, ptxas_model=False)
    r = simulate_sampled(wl, args.config, sample=args.sample, seed=args.seed,
                         scheduler=args.warp_scheduler, overrides=parse_sets(args.config_sets, "--config-set") or None,
                         max_steps_per_warp=args.max_steps, max_cycles=args.max_cycles, **budget,
                         **parse_sets(args.sets))
    _emit(args, r, r.detail, r.summary_table)
    if r.full is not None and not r.full.verified:
        print(r.full.run.message(), file=sys.stderr)
        return 1
    return 0


def _emit(args: argparse.Namespace, result, detail, summary) -> None:
    """--json and --html of `result` (what `summary()` prints: a SimResult, or a sampled run's result),
    --csv and --trace of `detail` (the run simulated in detail), and `summary()` on stdout unless an output
    took it."""
    from gpusim.stats import trace_json

    emit_json(result.to_dict(), args.json)
    emit_text(detail.to_csv, args.csv)
    emit_text(lambda: trace_json(detail), args.trace)
    if args.html is not None:
        from gpusim.plot.report import report_html  # (matplotlib loads only for a report)

        emit_text(lambda: report_html(result), args.html)
    if not stdout_taken(args.json, args.csv, args.trace, args.html):
        print(summary())


def run_functional(args: argparse.Namespace) -> int:
    if args.source:  # (gpusim.stats loads the timing engine: only the source view needs it here)
        from gpusim.stats.source import execute_per_pc, format_source, line_records, pc_records
    cfg = gpusim.load_config(args.config, overrides=parse_sets(args.config_sets, "--config-set") or None)
    wl = gpusim.load_workload(args.workload)
    params = wl.params(parse_sets(args.sets))
    t0 = time.perf_counter()
    result = wl.run(params, cfg, seed=args.seed, max_steps_per_warp=args.max_steps,
                    executor=execute_per_pc if args.source else None)
    wall = time.perf_counter() - t0
    occ = gpusim.occupancy(cfg, result.launch.threads_per_block, wl.program.regs_per_thread,
                           wl.program.shared_bytes)
    summary = result.summary()
    summary.update(config=cfg.name, config_hash=cfg.hash(), gpusim_version=gpusim.__version__,
                   mode="functional", wall_seconds=wall, exec_seconds=result.exec_seconds,
                   regs_per_thread=wl.program.regs_per_thread, shared_bytes_per_block=wl.program.shared_bytes,
                   theoretical_occupancy=occ.to_dict())
    if args.source:
        summary["pcs"] = pc_records(wl.program, result.result.stats.per_pc, None, cfg)
        summary["source"] = line_records(summary["pcs"])
    if args.json is not None:
        emit_json(summary, args.json)
    if args.json != "-":
        print(format_summary(summary, occ))
        if args.source:
            print()
            print(format_source(summary["source"], title=f"source view: {wl.name} on {cfg.name} (functional)"))
    if not result.ok:
        print(result.message(), file=sys.stderr)
        return 1
    return 0


def format_summary(s: dict, occ) -> str:
    from gpusim.workloads.verify import verified_text

    st = s["stats"]
    g, b = s["launch"]["grid"], s["launch"]["block"]
    rate = st["thread_instructions"] / s["exec_seconds"] if s["exec_seconds"] else 0.0
    rows = [
        ("workload", s["workload"]),
        ("config", f"{s['config']} (hash {s['config_hash']})"),
        ("params", ", ".join(f"{k}={v}" for k, v in s["params"].items())),
        ("launch", f"grid ({g[0]},{g[1]},{g[2]}) x block ({b[0]},{b[1]},{b[2]}), {st['blocks']} blocks, "
                   f"{st['warps']} warps"),
        ("resources", f"{s['regs_per_thread']} registers/thread, {s['shared_bytes_per_block']} B shared/block"),
        ("occupancy", f"{occ.occupancy:.0%} theoretical ({occ.active_warps_per_sm}/{occ.max_warps_per_sm} warps, "
                      f"limited by {occ.limiter})"),
        ("warp instructions", f"{st['warp_instructions']:,}"),
        ("thread instructions", f"{st['thread_instructions']:,}"),
        ("SIMT efficiency", f"{st['simt_efficiency']:.1%} ({st['divergent_branches']:,} divergent branches)"),
        ("global memory", f"{st['global_bytes_read']:,} B read, {st['global_bytes_written']:,} B written"),
        ("shared memory", f"{st['shared_bytes_read']:,} B read, {st['shared_bytes_written']:,} B written"),
        ("atomics / barriers", f"{st['atomics']:,} / {st['barriers']:,}"),
        ("by unit", ", ".join(f"{k} {v:,}" for k, v in st["warp_instructions_by_unit"].items())),
        ("verified", verified_text(s["verified"])),
        ("wall time", f"{s['wall_seconds']:.3f} s, of which the kernel {s['exec_seconds']:.3f} s "
                      f"({rate / 1e6:.1f} M thread-instructions/s)"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
