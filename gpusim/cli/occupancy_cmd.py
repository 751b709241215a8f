"""`gpusim occupancy`: theoretical occupancy of a kernel's resources on a configuration."""

from __future__ import annotations

import argparse

from gpusim.cli.args import add_config, add_config_set, add_json, add_output, add_params, add_renamed, integer
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import emit_json, parse_sets
from gpusim.config import load_config
from gpusim.config.occupancy import occupancy  # (gpusim.analysis.occupancy, without the analysis package)
from gpusim.errors import GpusimError


def register(subparsers) -> None:
    p = subparsers.add_parser("occupancy", help=COMMANDS["occupancy"],
                              description="Blocks and warps resident per SM for a block size, registers "
                                          "per thread and shared memory per block, and what limits them.")
    add_config(p)
    add_config_set(p)
    p.add_argument("--workload", "-w", default=None,
                   help="take block size, registers and shared memory from a workload's kernel and launch")
    add_params(p, help="a workload parameter (with --workload), e.g. --set n=4096 (repeatable)")
    p.add_argument("--block-size", "-b", type=integer(1), default=None, help="threads per block")
    p.add_argument("--regs", "-r", type=integer(0), default=0, help="registers per thread (0: no limit)")
    p.add_argument("--smem", "-s", type=integer(0), default=0, help="shared memory per block, bytes")
    p.add_argument("--carveout", type=integer(0), default=None, metavar="BYTES",
                   help="shared-memory carve-out to assume (default: the largest)")
    add_json(p)
    add_renamed(p, "--param")
    add_output(p, "--plot", kind="image", metavar="FILE", default=None,
                   help="also draw the occupancy calculator's three charts to FILE (.png or .svg)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, overrides=parse_sets(args.config_sets, "--config-set"))
    if args.workload:
        from gpusim.workloads import load_workload

        wl = load_workload(args.workload)
        launch = wl.launch(wl.params(parse_sets(args.sets)))
        block = args.block_size or launch.threads_per_block
        regs = args.regs or wl.program.regs_per_thread
        smem = args.smem or wl.program.shared_bytes
    elif args.block_size is None:
        raise GpusimError("occupancy: give --block-size (or --workload NAME)")
    else:
        block, regs, smem = args.block_size, args.regs, args.smem
    occ = occupancy(cfg, block, regs, smem, carveout_bytes=args.carveout)
    if args.plot:
        from gpusim.plot import occupancy_figure, save_figure  # matplotlib loads only when a chart is drawn

        save_figure(occupancy_figure(cfg, block, regs, smem, carveout_bytes=args.carveout, name=args.workload),
                    args.plot)
    if args.json is not None:
        emit_json({"config": cfg.name, "config_hash": cfg.hash(), **occ.to_dict()}, args.json)
        if args.json == "-":
            return 0
    print(format_occupancy(cfg.name, occ))
    return 0


def format_occupancy(name: str, occ) -> str:
    def show(v):
        return "no limit" if v is None else str(v)

    rows = [
        f"theoretical occupancy on {name}: block {occ.block_size} threads, {occ.regs_per_thread} registers/thread, "
        f"{occ.smem_per_block} bytes shared/block",
        "",
        f"  {'limit':<16}{'blocks/SM':>10}",
    ]
    for key, value in occ.limits.items():
        mark = "  <- limiter" if key in occ.limiters else ""
        rows.append(f"  {key:<16}{show(value):>10}{mark}")
    rows += [
        "",
        f"  warps per block            {occ.warps_per_block}",
        f"  registers per warp / block {occ.regs_per_warp} / {occ.regs_per_block}",
        f"  shared memory allocated    {occ.smem_allocated_per_block} bytes/block of "
        f"{occ.shared_memory_per_sm_bytes} per SM",
        f"  active blocks per SM       {occ.active_blocks_per_sm}",
        f"  active warps per SM        {occ.active_warps_per_sm} of {occ.max_warps_per_sm}",
        f"  theoretical occupancy      {occ.occupancy:.1%} (the most warps that can be resident; a run's "
        "achieved occupancy is below it)",
        f"  limited by                 {occ.limiter}",
    ]
    if occ.reason:
        rows.append(f"  reason                     {occ.reason}")
    return "\n".join(rows)
