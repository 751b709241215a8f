"""`gpusim step WORKLOAD`: one thread block of a workload, instruction by instruction, with each warp's
active mask, reconvergence stack (pushed at a divergent branch, popped where the paths meet) and chosen
registers' lane values (gpusim.functional.stepper)."""

from __future__ import annotations

import argparse

from gpusim.cli.args import add_config, add_params, integer
from gpusim.cli.common import parse_sets
from gpusim.errors import GpusimError


def register(subparsers) -> None:
    p = subparsers.add_parser("step", help="one block's warps instruction by instruction: masks, SIMT stack, values",
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gpusim.config import load_config
    from gpusim.functional.stepper import format_steps, step_block
    from gpusim.workloads import load_workload

    wl = load_workload(args.workload)
    cfg = load_config(args.config)
    prep = wl.prepare(parse_sets(args.sets), seed=args.seed, cfg=cfg)
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
