"""`gpusim step WORKLOAD`: one thread block of a workload, instruction by instruction, with each warp's
active mask, reconvergence stack (pushed at a divergent branch, popped where the paths meet) and chosen
registers' lane values (gpusim.functional.stepper); with `--schedule`, the timing model's view of the
same block: which warp each scheduler picked, cycle by cycle, and why the others did not issue
(gpusim.stats.schedule)."""

from __future__ import annotations

import argparse

from gpusim.cli.args import VOCABULARY, add_config, add_config_set, add_params, integer
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import parse_sets
from gpusim.errors import GpusimError


def register(subparsers) -> None:
    p = subparsers.add_parser("step", help=COMMANDS["step"],
                              description="Run one thread block of WORKLOAD on the functional executor and print "
                                          "every step: the instruction, the warps that issued it together, each "
                                          "warp's active mask, its reconvergence stack (PUSH at a divergent "
                                          "branch, POP where the paths reconverge) and the lane values of the "
                                          "registers written (or those --reg names). See docs/isa.md.")
    p.add_argument("workload", help="workload name (see `gpusim list`) or folder")
    add_config(p)
    add_params(p, help="a workload parameter, e.g. --set n=64 (repeatable)")
    p.add_argument("--block", type=integer(0), default=0, metavar="N", help="the block to run (default 0)")
    p.add_argument("--warps", metavar="W[,W...]", help="show only these warps of the block (default all)")
    p.add_argument("--reg", metavar="NAME[,NAME...]",
                   help="registers whose lane values to show at every step (default: each step's destinations)")
    p.add_argument("--lanes", type=integer(1, 64), default=8, metavar="N", help="lane values shown (default 8)")
    p.add_argument("--steps", type=integer(1), default=200, metavar="N", help="stop after N steps (default 200)")
    p.add_argument("--seed", type=integer(0), default=0, help="seed of the input generator (default 0)")
    p.add_argument("--schedule", action="store_true",
                   help="the timing model's view instead: the block alone on SM 0, one line per pick of a warp "
                        "scheduler with every other warp of its sub-partition and its warp state at that cycle")
    p.add_argument("--picks", type=integer(1), default=80, metavar="N",
                   help="with --schedule: show the first N picks (default 80)")
    from gpusim.config.vocab import SCHEDULER_POLICIES
    p.add_argument("--warp-scheduler", choices=SCHEDULER_POLICIES, help=VOCABULARY["--warp-scheduler"])
    add_config_set(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpusim.config import load_config
    from gpusim.functional.stepper import format_steps, step_block
    from gpusim.stats.simulate import configure
    from gpusim.workloads import load_workload

    wl = load_workload(args.workload)
    cfg = configure(load_config(args.config), args.warp_scheduler,
                    parse_sets(args.config_sets, "--config-set") or None)
    prep = wl.prepare(parse_sets(args.sets), seed=args.seed, cfg=cfg)
    if not 0 <= args.block < prep.launch.num_blocks:
        raise GpusimError(f"block {args.block}: the grid has blocks 0..{prep.launch.num_blocks - 1}")
    if args.schedule:
        return _schedule(wl, cfg, prep, args)
    warps = None
    if args.warps:
        try:
            warps = [int(w) for w in args.warps.split(",")]
        except ValueError:
            raise GpusimError(f"--warps {args.warps!r}: expected warp numbers, e.g. 0,1") from None
    regs = [r.strip() for r in args.reg.split(",")] if args.reg else []
    steps = step_block(prep.program, prep.launch, prep.args, prep.memory, cfg=cfg, block=args.block,
                       registers=regs, max_steps=args.steps)
    print(f"{wl.name} block {args.block} of {prep.launch.num_blocks} on {cfg.name}: "
          f"{prep.launch.threads_per_block} threads, {len(steps)} steps"
          + (" (stopped at --steps)" if len(steps) >= args.steps else ""))
    print("lanes: # runs the instruction, . does not; stack: top entry first, rpc = reconvergence pc")
    print(format_steps(steps, prep.program, warps=warps, lanes=args.lanes))
    return 0


LOG_ENTRIES = 400_000  # the issue log's room: a block's first few thousand picks, with their warps' states


def _schedule(wl, cfg, prep, args) -> int:
    from gpusim.stats.schedule import format_picks, picks
    from gpusim.stats.simulate import timed_execute

    te = timed_execute(prep.program, prep.launch, dict(prep.args), prep.memory, cfg=cfg, block_ids=[args.block],
                       issue_log=LOG_ENTRIES)
    ps = picks(te.timing.issue_log, cfg.sm.subpartitions)
    print(f"{wl.name} block {args.block} of {prep.launch.num_blocks} alone on SM 0 of {cfg.name} "
          f"({cfg.scheduler.policy} scheduler, {cfg.sm.subpartitions} sub-partitions): {len(ps):,} picks in "
          f"{te.timing.cycles:,} cycles" + (f", the first {args.picks} shown" if len(ps) > args.picks else "")
          + (" (the log filled: later picks dropped)" if te.timing.issue_log_dropped else ""))
    print("each line: the warp the sub-partition's scheduler issued, then its other warps' Nsight warp states "
          "(not_selected: ready, another warp chosen; *_throttle: its unit busy; long_scoreboard: waiting for "
          "a load; see docs/stats.md)")
    print(format_picks(ps, prep.program, limit=args.picks))
    return 0
