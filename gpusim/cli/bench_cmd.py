"""`gpusim bench`: how fast gpusim simulates. Runs a fixed suite through the timing model (or, with
`--functional`, the functional executor alone), each workload in a fresh spawned process, one at a time
(so peak memory is the workload's own and the measurement uses a single core), and reports simulated
warp instructions and cycles per wall-clock second and the peak resident memory. `--long` runs two
kernels at about 10 million warp instructions and at a tenth of that, to check that peak memory does not
grow with the kernel's length. See docs/bench.md."""

from __future__ import annotations

import argparse
import datetime as _dt
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import time

from gpusim.cli.common import emit_json
from gpusim.errors import GpusimError

# The timing-model suite (default): the acceptance suite on a100.
SUITE = [
    ("saxpy", {"n": 1 << 20}),
    ("matmul_tiled", {"n": 256}),
    ("reduce_sum", {"n": 1 << 22}),
    ("transpose_shared", {"rows": 2048, "cols": 2048}),
]
QUICK = [
    ("saxpy", {"n": 1 << 14}),
    ("matmul_tiled", {"n": 32}),
    ("reduce_sum", {"n": 1 << 15}),
    ("transpose_shared", {"rows": 256, "cols": 256}),
]
# The suite's simulated cycles on a100 (default config, full sizes): a speed-up must leave them as they
# are; a deliberate model change updates them (and tests/timing/pinned_cycles.json) and says why
# (reduce_sum 37,828 -> 37,796: the GigaThread engine places a block as soon as one retires).
PINNED_CYCLES = {"saxpy": 8_821, "matmul_tiled": 21_955, "reduce_sum": 37_796, "transpose_shared": 20_300}
# Target of the timing model: the suite's median simulated warp-instructions per wall second.
TARGET_WARP_IPS = 200_000

# `--functional`: the functional executor alone. vecadd at 2^24 is its target (>= 20 M thread-instr/s).
FUNCTIONAL_SUITE = [
    ("vecadd", {"n": 1 << 24}),
    ("saxpy", {"n": 1 << 20}),
    ("reduce_sum", {"n": 1 << 22}),
    ("matmul_tiled", {"n": 256}),
    ("transpose_shared", {"rows": 2048, "cols": 2048}),
    ("divergence", {}),
    ("histogram", {}),
]
FUNCTIONAL_QUICK = [
    ("vecadd", {"n": 1 << 20}),
    ("saxpy", {"n": 1 << 16}),
    ("reduce_sum", {"n": 1 << 18}),
    ("matmul_tiled", {"n": 64}),
]

# `--long`: kernels whose length grows with one parameter, on the timing model. stream_copy (a
# grid-stride copy on a fixed grid) grows its data with its length; ffma_peak (a fixed grid of FMA
# chains) does not, so its peak memory isolates the simulator's own. Each entry: workload, fixed
# params, the parameter that sets the length, and two small values of it to fit the warp-instruction
# count (linear in that parameter) on the functional executor.
LONG = [
    ("stream_copy", {"block": 256, "grid": 216}, "n", (216 * 256 * 4, 216 * 256 * 8)),
    ("ffma_peak", {"n": 131072, "block": 256}, "iters", (4, 8)),
]
LONG_TARGET = 10_000_000  # warp instructions
LONG_TARGET_QUICK = 2_000_000
LONG_RSS_LIMIT_MIB = 2048


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="measure simulation speed on a fixed suite",
                              description="Simulation speed: each workload of a fixed suite runs through "
                                          "the timing model in its own process, one at a time; reports "
                                          "warp instructions, simulated cycles, wall time, simulated "
                                          "warp-instructions and cycles per second, and peak memory. "
                                          "See docs/bench.md.")
    p.add_argument("--config", "-c", default="a100", help="config (default a100)")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds; for tests and CI)")
    p.add_argument("--only", metavar="NAME[,NAME]", action="append",
                   help="run only these suite entries (comma-separated or repeated)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE", help="write the figures as JSON ('-': stdout)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--functional", action="store_true",
                      help="time the functional executor alone (thread-instructions per second)")
    mode.add_argument("--long", action="store_true",
                      help=f"run kernels of about {LONG_TARGET / 1e6:.0f} M warp instructions and a tenth of "
                           "that, comparing peak memory (minutes)")
    p.set_defaults(func=run)


# ---- measurements (each runs in a spawned child process) -----------------------------------------

def _peak_rss_mib() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / (1024 * 1024) if sys.platform == "darwin" else kb / 1024  # bytes on macOS, KiB on Linux


def measure(name: str, params: dict, config: str) -> dict:
    """Run one workload on the functional executor alone and return its figures."""
    import gpusim

    cfg = gpusim.load_config(config)
    wl = gpusim.load_workload(name)
    t0 = time.perf_counter()
    run = wl.run(params, cfg)
    wall = time.perf_counter() - t0
    st = run.result.stats
    exec_s = getattr(run, "exec_seconds", None) or wall
    return {
        "workload": name, "params": run.params, "verified": run.ok,
        "warp_instructions": st.warp_instructions, "thread_instructions": st.thread_instructions,
        "simt_efficiency": st.simt_efficiency,
        "exec_seconds": exec_s, "wall_seconds": wall,
        "thread_instructions_per_second": st.thread_instructions / exec_s,
        "warp_instructions_per_second": st.warp_instructions / exec_s,
        "peak_rss_mib": _peak_rss_mib(),
    }


def measure_timing(name: str, params: dict, config: str) -> dict:
    """Run one workload through the functional executor and the timing model (`simulate`) and return
    its figures; the rates are per wall second of the whole simulation."""
    from gpusim.stats.simulate import simulate

    r = simulate(name, config, verify=False, **params)
    peak = _peak_rss_mib()
    run, timing, wall = r.run, r.timing, r.wall_seconds
    warp = int(timing.warp_instructions)
    cycles = int(timing.cycles)
    out = {
        "workload": name, "params": dict(run.params), "verified": bool(run.ok),
        "warp_instructions": warp, "thread_instructions": int(run.result.stats.thread_instructions),
        "cycles": cycles, "wall_seconds": wall, "exec_seconds": run.exec_seconds or wall,
        "warp_instructions_per_second": warp / wall, "cycles_per_second": cycles / wall,
        "peak_rss_mib": peak,
    }
    try:  # the workload's own arrays, to tell the simulator's memory from the data's
        import numpy as np

        from gpusim.workloads import load_workload

        wl = load_workload(name)
        inputs = wl.inputs(wl.params(params), 0)
        in_bytes = sum(a.nbytes for a in inputs.values() if isinstance(a, np.ndarray))
        held = sum(a.nbytes for d in (run.outputs, run.expected) for a in d.values())
        out["input_mib"] = in_bytes / 2**20
        # held at once by the runner: the inputs, their global-memory image, expected and read-back outputs
        out["data_mib"] = (2 * in_bytes + held) / 2**20
    except Exception:  # noqa: BLE001 - a figure for the report only
        pass
    return out


def count_warp_instructions(name: str, params: dict, config: str) -> int:
    """Warp instructions of one run on the functional executor (for sizing `--long`)."""
    import gpusim

    run = gpusim.load_workload(name).run(params, gpusim.load_config(config))
    return int(run.result.stats.warp_instructions)


def _in_child(func, *args):
    """Call `func(*args)` in a fresh spawned process (its peak memory is its own) and return the result.
    A child that dies (killed for memory, say) is an error, not a hang."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # one core: keep numpy's BLAS (used by some references) from spinning threads beside the simulator
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
            return pool.submit(func, *args).result()
    except BrokenProcessPool as exc:
        what = f"{args[0]} ({', '.join(f'{k}={v}' for k, v in args[1].items())})" if len(args) > 1 else func.__name__
        raise GpusimError(f"the process measuring {what} died (out of memory?): {exc}") from None


# ---- the subcommand --------------------------------------------------------------------------------

def _select(suite: list, only: list[str] | None, what: str) -> list:
    if not only:
        return list(suite)
    names = [n.strip() for item in only for n in item.split(",") if n.strip()]
    by_name = {s[0]: s for s in suite}
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        raise GpusimError(f"--only {','.join(unknown) or repr('')}: not in the {what} suite; "
                          f"its workloads: {', '.join(by_name)}")
    return [by_name[n] for n in dict.fromkeys(names)]


def _header(args: argparse.Namespace, mode: str) -> dict:
    return {"mode": mode, "config": args.config, "quick": bool(args.quick),
            "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor() or None, "cpu_count": os.cpu_count()}


def run(args: argparse.Namespace) -> int:
    out = sys.stderr if args.json == "-" else sys.stdout
    if args.functional:
        return _run_functional(args, out)
    if args.long:
        return _run_long(args, out)
    return _run_timing(args, out)


def _run_timing(args: argparse.Namespace, out) -> int:
    suite = _select(QUICK if args.quick else SUITE, args.only, "quick" if args.quick else "bench")
    doc = _header(args, "timing")
    pins = PINNED_CYCLES if args.config == "a100" and not args.quick else {}
    print(f"{'workload':<18}{'warp instr':>13}{'cycles':>12}{'wall s':>9}{'warp-instr/s':>14}"
          f"{'cycles/s':>11}{'peak MiB':>10}  ok  pinned", file=out, flush=True)
    rows = []
    for name, params in suite:
        r = _in_child(measure_timing, name, params, args.config)
        r["pinned_cycles"] = pins.get(name)
        rows.append(r)
        pin = "-" if name not in pins else "yes" if pins[name] == r["cycles"] else f"NO ({pins[name]:,})"
        print(f"{name:<18}{r['warp_instructions']:>13,}{r['cycles']:>12,}{r['wall_seconds']:>9.2f}"
              f"{r['warp_instructions_per_second']:>14,.0f}{r['cycles_per_second']:>11,.0f}"
              f"{r['peak_rss_mib']:>10.0f}  {'yes' if r['verified'] else 'NO ':<4}{pin}", file=out, flush=True)
    median = statistics.median(r["warp_instructions_per_second"] for r in rows)
    met = median >= TARGET_WARP_IPS
    print(f"median {median:,.0f} warp-instr/s; target {TARGET_WARP_IPS:,}/s: {'met' if met else 'not met'}",
          file=out, flush=True)
    doc.update(target_warp_instructions_per_second=TARGET_WARP_IPS,
               median_warp_instructions_per_second=median, target_met=met, results=rows)
    emit_json(doc, args.json)
    moved = [r["workload"] for r in rows if r["pinned_cycles"] not in (None, r["cycles"])]
    if moved:
        print(f"simulated cycles differ from the pinned ones: {', '.join(moved)}", file=out, flush=True)
    return 0 if all(r["verified"] for r in rows) and not moved else 1


def _run_functional(args: argparse.Namespace, out) -> int:
    suite = _select(FUNCTIONAL_QUICK if args.quick else FUNCTIONAL_SUITE, args.only,
                    "functional quick" if args.quick else "functional")
    print(f"{'workload':<18}{'warp instr':>13}{'thread instr':>15}{'exec s':>9}{'M thr-instr/s':>15}"
          f"{'K warp-instr/s':>16}{'peak MiB':>10}  ok", file=out, flush=True)
    rows = []
    for name, params in suite:
        r = _in_child(measure, name, params, args.config)
        rows.append(r)
        print(f"{name:<18}{r['warp_instructions']:>13,}{r['thread_instructions']:>15,}{r['exec_seconds']:>9.2f}"
              f"{r['thread_instructions_per_second'] / 1e6:>15.1f}{r['warp_instructions_per_second'] / 1e3:>16.1f}"
              f"{r['peak_rss_mib']:>10.0f}  {'yes' if r['verified'] else 'NO'}", file=out, flush=True)
    doc = _header(args, "functional")
    doc["results"] = rows
    emit_json(doc, args.json)
    return 0 if all(r["verified"] for r in rows) else 1


def _long_value(name: str, fixed: dict, knob: str, probes: tuple[int, int], target: int, config: str
                ) -> tuple[int, int]:
    """The value of `knob` that gives about `target` warp instructions (and that for target / 10),
    from a straight-line fit through two small functional runs."""
    (x0, x1) = probes
    y0 = _in_child(count_warp_instructions, name, {**fixed, knob: x0}, config)
    y1 = _in_child(count_warp_instructions, name, {**fixed, knob: x1}, config)
    slope = (y1 - y0) / (x1 - x0)
    if slope <= 0:
        raise GpusimError(f"--long: {name}'s length does not grow with {knob}")
    base = y0 - slope * x0
    short, long_ = (max(1, round((t - base) / slope)) for t in (target // 10, target))
    return short, long_


def _run_long(args: argparse.Namespace, out) -> int:
    target = LONG_TARGET_QUICK if args.quick else LONG_TARGET
    kernels = _select(LONG, args.only, "--long")
    doc = _header(args, "long")
    doc.update(target_warp_instructions=target, rss_limit_mib=LONG_RSS_LIMIT_MIB)
    print(f"{'workload':<14}{'params':<34}{'warp instr':>13}{'wall s':>9}{'warp-instr/s':>14}"
          f"{'peak MiB':>10}{'data MiB':>10}  ok", file=out, flush=True)
    entries = []
    ok = True
    for name, fixed, knob, probes in kernels:
        short_v, long_v = _long_value(name, fixed, knob, probes, target, args.config)
        runs = []
        for v in (short_v, long_v):
            r = _in_child(measure_timing, name, {**fixed, knob: v}, args.config)
            runs.append(r)
            ok = ok and r["verified"]
            ps = ", ".join(f"{k}={r['params'][k]}" for k in (*fixed, knob) if k in r["params"])
            print(f"{name:<14}{ps:<34}{r['warp_instructions']:>13,}{r['wall_seconds']:>9.1f}"
                  f"{r['warp_instructions_per_second']:>14,.0f}{r['peak_rss_mib']:>10.0f}"
                  f"{r.get('data_mib', float('nan')):>10.0f}  {'yes' if r['verified'] else 'NO'}",
                  file=out, flush=True)
        short, long_ = runs
        growth = long_["peak_rss_mib"] - short["peak_rss_mib"]
        data_growth = long_.get("data_mib", 0.0) - short.get("data_mib", 0.0)
        under = long_["peak_rss_mib"] < LONG_RSS_LIMIT_MIB
        print(f"{name}: {long_['warp_instructions'] / short['warp_instructions']:.1f}x the warp instructions, "
              f"peak RSS {short['peak_rss_mib']:.0f} -> {long_['peak_rss_mib']:.0f} MiB ({growth:+.0f} MiB, "
              f"of which workload arrays {data_growth:+.0f} MiB); under {LONG_RSS_LIMIT_MIB} MiB: "
              f"{'yes' if under else 'NO'}", file=out, flush=True)
        entries.append({"workload": name, "length_param": knob, "short": short, "long": long_,
                        "rss_growth_mib": growth, "data_growth_mib": data_growth, "under_limit": under})
    doc["results"] = entries
    emit_json(doc, args.json)
    return 0 if ok else 1
