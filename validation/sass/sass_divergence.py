"""The H200's divergence microbenchmark (validation/cuda/microbench.cu, k_diverge) run by gpusim as the
machine code the GPU ran: its SASS (k_diverge.cu beside this file, the clock reads left out; the cubin and
listing checked in, so no nvcc is needed), and, with --sasm, gpusim's .sasm chain (the `diverge_paths`
workload that `gpusim validate` times), against the cycles per iteration measured on the H200
(gpusim/data/measurements/h200.json, "divergence": 1 and 32 warps, 1 to 32 paths).

A run's cycles per iteration are (cycles at 12 iterations - cycles at 4) / 8, which leaves out the launch,
the prologue and the last barrier, as the measurement's clock reads around the loop do.

    python validation/sass/sass_divergence.py                              # h200 as configured
    python validation/sass/sass_divergence.py --set scheduler.policy=lrr --sasm
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import gpusim
from gpusim.cli.common import parse_sets
from gpusim.config import load_config

HERE = Path(__file__).resolve().parent
MEASURED = HERE.parents[1] / "gpusim" / "data" / "measurements" / "h200.json"
ITERS = (4, 12)


def per_iteration(run) -> float:
    """(cycles at ITERS[1] - cycles at ITERS[0]) / their difference, `run(iters)` giving the cycles."""
    lo, hi = (run(i) for i in ITERS)
    return (hi - lo) / (ITERS[1] - ITERS[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a config override (repeatable), as gpusim's --config-set")
    ap.add_argument("--sasm", action="store_true", help="also the .sasm chain (diverge_paths)")
    args = ap.parse_args()
    cfg = load_config("h200", overrides=parse_sets(args.set))
    rows = json.loads(MEASURED.read_text())["divergence"]
    ports = {"sass": lambda paths, threads: lambda iters: gpusim.launch(
        HERE / "k_diverge.cu", 1, threads, [np.int32(paths), np.int32(iters), np.zeros(4, np.float32)],
        config=cfg, isa="sass").cycles}
    if args.sasm:
        ports["sasm"] = lambda paths, threads: lambda iters: gpusim.simulate(
            "diverge_paths", config=cfg, params={"paths": paths, "iters": iters, "threads": threads},
            verify=False).cycles
    errors: dict[str, list[float]] = {p: [] for p in ports}
    print(f"{'warps':>5} {'paths':>5} {'measured':>9} " + " ".join(f"{p:>17}" for p in ports))
    for row in rows:
        m = row["cycles_per_iteration"]
        cells = []
        for port, make in ports.items():
            got = per_iteration(make(row["paths"], 32 * row["warps"]))
            errors[port].append(abs(got / m - 1))
            cells.append(f"{got:8.1f} ({got / m - 1:+6.1%})")
        print(f"{row['warps']:>5} {row['paths']:>5} {m:9.1f} " + " ".join(cells), flush=True)
    print("MAPE " + ", ".join(f"{p} {100 * np.mean(e):.1f} %" for p, e in errors.items())
          + f" ({cfg.scheduler.policy} scheduler)")


if __name__ == "__main__":
    main()
