"""`gpusim info`: print a hardware configuration and its derived figures, or list the built-ins."""

from __future__ import annotations

import argparse

from gpusim.cli.args import add_config, add_config_set, add_json, add_renamed
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import emit_json, parse_sets
from gpusim.config import builtin_configs, load_config


def register(subparsers) -> None:
    p = subparsers.add_parser("info", help=COMMANDS["info"],
                              description="Show a hardware configuration and its derived figures "
                                          "(peak GFLOP/s, bandwidths, limits).")
    add_config(p)
    add_config_set(p)
    p.add_argument("--list", action="store_true", help="list the built-in configurations and exit")
    add_json(p, help="write {config, derived} as JSON to FILE ('-' or no FILE: stdout)")
    add_renamed(p, "--set", to="--config-set (--set is a parameter of what runs)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        names = builtin_configs()
        if args.json is not None:
            emit_json({"configs": [_summary(n) for n in names]}, args.json)
            return 0
        for item in (_summary(n) for n in names):
            print(f"{item['name']:<12} {item['description']}")
        return 0
    cfg = load_config(args.config, overrides=parse_sets(args.config_sets, "--config-set"))
    derived = cfg.derived()
    if args.json is not None:
        emit_json({"config": cfg.to_dict(), "hash": cfg.hash(), "derived": derived}, args.json)
        if args.json == "-":
            return 0
    print(format_info(cfg, derived))
    return 0


def _summary(name: str) -> dict:
    cfg = load_config(name)
    return {"name": name, "description": cfg.description, "source": cfg.source}


def format_info(cfg, derived: dict) -> str:
    """The human-readable report: a summary of derived figures, then every field by section."""
    d = derived
    lines = [
        f"{cfg.name}: {cfg.description}",
        f"  source {cfg.source}  hash {cfg.hash()}",
        "",
        "derived",
        f"  compute capability          {cfg.chip.compute_capability} ({cfg.chip.architecture})",
        f"  SMs                         {cfg.chip.sm_count} ({cfg.chip.gpcs} GPCs x up to "
        f"{cfg.chip.sms_per_gpc})",
        f"  FP32 cores                  {d['total_fp32_cores']} ({d['fp32_cores_per_sm']} per SM)",
        f"  peak FP32                   {d['peak_fp32_gflops']:.1f} GFLOP/s at {cfg.chip.clock_mhz:g} MHz",
        f"  peak FP64                   {d['peak_fp64_gflops']:.1f} GFLOP/s",
        f"  peak DRAM bandwidth         {d['peak_dram_bandwidth_gbps']:g} GB/s",
        f"  machine balance             {d['machine_balance_flops_per_byte']:.2f} FLOP/byte",
        f"  L2                          {d['l2_size_bytes']} bytes ({d['l2_size_bytes'] / 2**20:g} MiB)",
        f"  max warps / threads / blocks per SM  {d['max_warps_per_sm']} / {d['max_threads_per_sm']} / "
        f"{d['max_blocks_per_sm']}",
        f"  PCIe                        {d['pcie_bandwidth_gbps']:g} GB/s per direction "
        f"(gen {cfg.pcie.generation} x{cfg.pcie.lanes})",
        f"  NVLink                      {d['nvlink_total_bandwidth_gbps']:g} GB/s "
        f"({cfg.nvlink.links} links)",
    ]
    data = cfg.to_dict()
    for section, fields in data.items():
        if not isinstance(fields, dict):
            continue
        lines += ["", section]
        for key, value in fields.items():
            if isinstance(value, dict):  # units
                value = ", ".join(f"{k}={v}" for k, v in value.items())
            lines.append(f"  {key:<40} {value}")
    return "\n".join(lines)
