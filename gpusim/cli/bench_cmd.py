"""`gpusim bench`: how fast gpusim simulates. Runs a fixed suite, each workload in a fresh process
(so peak memory is its own), and reports thread- and warp-instructions per second."""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import resource
import sys
import time

from gpusim.cli.common import emit_json

# (workload, params): vecadd at 2^24 is the functional-throughput target (>= 20 M thread-instr/s)
SUITE = [
    ("vecadd", {"n": 1 << 24}),
    ("saxpy", {"n": 1 << 20}),
    ("reduce_sum", {"n": 1 << 22}),
    ("matmul_tiled", {"n": 256}),
    ("transpose_shared", {"rows": 2048, "cols": 2048}),
    ("divergence", {}),
    ("histogram", {}),
]
QUICK = [
    ("vecadd", {"n": 1 << 20}),
    ("reduce_sum", {"n": 1 << 18}),
    ("matmul_tiled", {"n": 64}),
]


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="measure simulation speed on a fixed suite",
                              description="Functional throughput of the simulator: thread- and "
                                          "warp-instructions per second, wall time and peak memory per "
                                          "workload, each run in its own process.")
    p.add_argument("--config", "-c", default="a100", help="config (default a100)")
    p.add_argument("--quick", action="store_true", help="a small suite (seconds)")
    p.add_argument("--only", metavar="WORKLOAD", action="append", help="run only these suite entries")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write the figures as JSON")
    p.set_defaults(func=run)


def measure(name: str, params: dict, config: str) -> dict:
    """Run one workload and return its figures (executed in a child process)."""
    import gpusim

    cfg = gpusim.load_config(config)
    wl = gpusim.load_workload(name)
    t0 = time.perf_counter()
    run = wl.run(params, cfg)
    wall = time.perf_counter() - t0
    st = run.result.stats
    exec_s = getattr(run, "exec_seconds", None) or wall
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "workload": name, "params": run.params, "verified": run.ok,
        "warp_instructions": st.warp_instructions, "thread_instructions": st.thread_instructions,
        "simt_efficiency": st.simt_efficiency,
        "exec_seconds": exec_s, "wall_seconds": wall,
        "thread_instructions_per_second": st.thread_instructions / exec_s,
        "warp_instructions_per_second": st.warp_instructions / exec_s,
        "peak_rss_mib": peak_kb / 1024,
    }


def run(args: argparse.Namespace) -> int:
    suite = QUICK if args.quick else SUITE
    if args.only:
        suite = [s for s in SUITE + QUICK if s[0] in args.only][: len(args.only)]
    ctx = mp.get_context("spawn")
    rows = []
    print(f"{'workload':<18}{'warp instr':>13}{'thread instr':>15}{'exec s':>9}{'M thr-instr/s':>15}"
          f"{'K warp-instr/s':>16}{'peak MiB':>10}  ok", file=sys.stderr if args.json == "-" else sys.stdout)
    for name, params in suite:
        with ctx.Pool(1) as pool:
            r = pool.apply(measure, (name, params, args.config))
        rows.append(r)
        print(f"{name:<18}{r['warp_instructions']:>13,}{r['thread_instructions']:>15,}{r['exec_seconds']:>9.2f}"
              f"{r['thread_instructions_per_second'] / 1e6:>15.1f}{r['warp_instructions_per_second'] / 1e3:>16.1f}"
              f"{r['peak_rss_mib']:>10.0f}  {'yes' if r['verified'] else 'NO'}",
              file=sys.stderr if args.json == "-" else sys.stdout)
    out = {"config": args.config, "python": platform.python_version(), "machine": platform.machine(),
           "mode": "functional", "results": rows}
    emit_json(out, args.json)
    return 0 if all(r["verified"] for r in rows) else 1
