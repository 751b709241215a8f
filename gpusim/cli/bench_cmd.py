"""`gpusim bench`: how fast gpusim simulates. Runs a fixed suite through the timing model (or, with
`--functional`, the functional executor alone), each workload in a fresh spawned process, one at a time
(so peak memory is the workload's own and the measurement uses a single core), and reports simulated
warp instructions and cycles per wall-clock second and the peak resident memory. `--long` runs two
kernels at about 10 million warp instructions and at a tenth of that, to check that peak memory does not
grow with the kernel's length. See docs/bench.md. `--sampling` runs every shipped workload in full and
sampled (`--sample auto`) and reports the cycle error and the wall-time speed-up (docs/sampling.md)."""

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

from gpusim.cli import bench_sampling
from gpusim.cli.args import add_config, add_output, add_quiet, integer, number
from gpusim.cli.bench_sampling import BENCH_MAX_STEPS_PER_WARP
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import add_executor_args, emit_json, emit_text, make_executor
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
# (reduce_sum 37,828 -> 37,796: the GigaThread engine places a block as soon as one retires; saxpy 8,942 ->
# 8,950 and transpose_shared 24,294 -> 24,339: the DRAM's hashed channel select; reduce_sum 40,920 -> 40,918:
# the L2's read-modify-write of partial stores; saxpy 8,950 -> 8,947, matmul_tiled 23,905 -> 22,050,
# reduce_sum 40,918 -> 44,821, transpose_shared 24,339 -> 24,398: the kernels as the ptxas model compiles
# them, gpusim.isa.ptxas (reduce_sum's tree step predicated in every warp, as its sm_90 SASS has it);
# matmul_tiled 22,050 -> 19,793: the ptxas model lets a tile's global load pass the other tile's st.shared;
# tests/cli/test_bench.py simulates the suite against these).
PINNED_CYCLES = {"saxpy": 8_947, "matmul_tiled": 19_793, "reduce_sum": 44_821, "transpose_shared": 24_398}
# `--sass`: the CUDA ports' timing runs from nvcc's PTX and from their SASS (`<name>_cu@sass`, docs/isa.md
# section 12), side by side on the same config.
SASS_SUITE = [
    ("saxpy_cu", {"n": 1 << 20}),
    ("matmul_tiled_cu", {"n": 256}),
    ("reduce_sum_cu", {"n": 1 << 22}),
    ("transpose_shared_cu", {"rows": 2048, "cols": 2048}),
]
SASS_QUICK = [
    ("saxpy_cu", {"n": 1 << 14}),
    ("matmul_tiled_cu", {"n": 32}),
    ("reduce_sum_cu", {"n": 1 << 15}),
    ("transpose_shared_cu", {"rows": 256, "cols": 256}),
]
# Target of the timing model: the suite's median simulated warp-instructions per wall second, the whole path
# on one core (issue 36; issue 18's was 2,000,000).
TARGET_WARP_IPS = 4_000_000

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
    p = subparsers.add_parser("bench", help=COMMANDS["bench"],
                              description="Simulation speed: each workload of a fixed suite runs through "
                                          "the timing model in its own process, one at a time; reports "
                                          "warp instructions, simulated cycles, wall time, simulated "
                                          "warp-instructions and cycles per second, and peak memory. "
                                          "See docs/bench.md.")
    add_config(p)
    add_quiet(p)
    p.add_argument("--quick", action="store_true", help="small sizes (seconds; for tests and CI)")
    p.add_argument("--only", metavar="NAME[,NAME]", action="append",
                   help="run only these suite entries (comma-separated or repeated)")
    add_output(p, "--json", nargs="?", const="-", metavar="FILE", help="write the figures as JSON ('-': stdout)")
    p.add_argument("--cold", action="store_true",
                   help="timing suite: first measure the engine's compile time from an empty Numba cache (about a "
                        "minute), as a first run after installing sees it")
    p.add_argument("--repeat", type=integer(1, 1000), default=1, metavar="N",
                   help="timing suite: measure each workload N times, each in a fresh process, and report its "
                        "fastest run (as timeit does: slower runs measure other load on the machine)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--functional", action="store_true",
                      help="time the functional executor alone (thread-instructions per second)")
    mode.add_argument("--sass", action="store_true",
                      help="timing suite of the CUDA ports: each from nvcc's PTX and from its SASS (<name>_cu@sass), "
                           "side by side (docs/isa.md section 12)")
    mode.add_argument("--sampling", action="store_true",
                      help="every workload simulated in full and sampled: cycle error and wall-time speed-up "
                           "(tens of minutes; docs/sampling.md)")
    p.add_argument("--sample", choices=("auto", "on", "off"), default="auto",
                   help="with --sampling: the sampled runs' mode (default auto; 'on' samples even where auto "
                        "would simulate in full; 'off': the full runs only, to fill --references)")
    p.add_argument("--suite", choices=bench_sampling.SUITES, default="bench",
                   help="with --sampling: 'bench' (default: a size per shipped workload on --config) or 'h200' "
                        "(the kernel sizes measured on the H200, .sasm and _cu, on the h200 config)")
    p.add_argument("--sample-bound", type=number(0.1, 99.0), metavar="PCT",
                   help="with --sampling: the error bound the samples aim at, in %% (default 5)")
    add_output(p, "--references", metavar="FILE",
               help="with --sampling: read the full runs from FILE (JSON lines) where stored for the same "
                    "workload, parameters, config and model code, and add the ones simulated")
    p.add_argument("--full-limit", type=number(1.0, 1e7), default=bench_sampling.FULL_LIMIT_SECONDS, metavar="S",
                   help="with --sampling: stop a full run after S CPU seconds and report the sampled run alone "
                        f"(default {bench_sampling.FULL_LIMIT_SECONDS:g})")
    p.add_argument("--stored-only", action="store_true",
                   help="with --sampling and --references: simulate no full run; a row whose full run is not "
                        "stored is reported sampled alone")
    add_output(p, "--markdown", metavar="FILE",
               help="with --sampling: also write the table as Markdown to FILE (docs/sampling.md's table)")
    mode.add_argument("--tune", action="store_true",
                      help="tune one --size^3 matmul over --candidates candidates, each simulated (large ones "
                           "sampled), in parallel: wall time, candidates, the winner and its cycles (docs/compiler.md)")
    p.add_argument("--size", type=integer(1, 1 << 16), default=512, metavar="N",
                   help="with --tune: the matmul's M = K = N (default 512)")
    p.add_argument("--candidates", type=integer(1, 1_000_000), default=200, metavar="N",
                   help="with --tune: candidates the local search scores (default 200)")
    p.add_argument("--sample-budget", type=integer(1, 2**62), metavar="N",
                   help="with --tune: at most N warp instructions simulated per sampled candidate (default: the "
                        "sampler's, a twentieth of the candidate's)")
    add_output(p, "--cache-dir", kind="folder", help="with --tune: reuse this cache of simulated costs (default: a "
                                                     "fresh one, so every candidate is simulated)")
    add_executor_args(p, "the candidates (with --tune)")
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
    run = wl.run(params, cfg, max_steps_per_warp=BENCH_MAX_STEPS_PER_WARP)
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
    from gpusim.timing import warm_up
    from gpusim.workloads import load_workload

    load = warm_up()  # the engine's machine code from Numba's cache (compiled if there is none)
    base, _, isa = name.partition("@")  # `<workload>@sass`: its SASS (docs/isa.md section 12)
    cpu0 = time.process_time()
    r = simulate(load_workload(base, isa=isa or None), config, verify=False,
                 max_steps_per_warp=BENCH_MAX_STEPS_PER_WARP, **params)
    cpu = time.process_time() - cpu0
    peak = _peak_rss_mib()
    run, timing, wall = r.run, r.timing, r.wall_seconds
    warp = int(timing.warp_instructions)
    cycles = int(timing.cycles)
    out = {
        "workload": name, "params": dict(run.params), "verified": bool(run.ok),
        "warp_instructions": warp, "thread_instructions": int(run.result.stats.thread_instructions),
        "cycles": cycles, "wall_seconds": wall, "exec_seconds": run.exec_seconds or wall,
        "warp_instructions_per_second": warp / wall, "cycles_per_second": cycles / wall,
        "cpu_seconds": cpu, "warp_instructions_per_cpu_second": warp / cpu if cpu > 0 else None,
        "engine_load_seconds": load, "peak_rss_mib": peak,
    }
    try:  # the workload's own arrays, to tell the simulator's memory from the data's
        import numpy as np

        from gpusim.workloads import load_workload

        wl = load_workload(base)
        inputs = wl.inputs(wl.params(params), 0)
        in_bytes = sum(a.nbytes for a in inputs.values() if isinstance(a, np.ndarray))
        held = sum(a.nbytes for d in (run.outputs, run.expected) for a in d.values())
        out["input_mib"] = in_bytes / 2**20
        # held at once by the runner: the inputs, their global-memory image, expected and read-back outputs
        out["data_mib"] = (2 * in_bytes + held) / 2**20
    except Exception:  # noqa: BLE001 - a figure for the report only
        pass
    return out


def measure_compile(cache_dir: str) -> float:
    """Seconds to compile the timing engine from nothing (an empty Numba cache in `cache_dir`)."""
    # A new interpreter: Numba fixes each compiled function's cache folder when its module is imported,
    # and the worker that runs this has imported gpusim already.
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", "import gpusim.timing as t; print(t.warm_up())"], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


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

    from gpusim.sweep.executors import stop_pool, worker_signals

    # one core: keep numpy's BLAS (used by some references) from spinning threads beside the simulator
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"), initializer=worker_signals)
    try:
        return pool.submit(func, *args).result()
    except BrokenProcessPool as exc:
        what = f"{args[0]} ({', '.join(f'{k}={v}' for k, v in args[1].items())})" if len(args) > 1 else func.__name__
        raise GpusimError(f"the process measuring {what} died (out of memory?): {exc}") from None
    except BaseException:  # Ctrl-C or SIGTERM: stop the measurement now
        stop_pool(pool)
        raise
    finally:
        pool.shutdown()


def _fastest(runs: list[dict]) -> dict:
    """The fastest of repeated measurements of one workload, with every run's wall time
    (`wall_seconds_runs`) and the largest peak memory. The runs must agree on what was simulated."""
    first = runs[0]
    for r in runs[1:]:
        for key in ("cycles", "warp_instructions", "verified"):
            if r[key] != first[key]:
                raise GpusimError(f"{first['workload']}: repeated runs differ in {key} ({first[key]} and {r[key]}): "
                                  "the same simulation should give the same result every time")
    best = dict(min(runs, key=lambda r: r["wall_seconds"]))
    best["wall_seconds_runs"] = [r["wall_seconds"] for r in runs]
    best["peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
    return best


# ---- the subcommand --------------------------------------------------------------------------------

def _select(suite: list, only: list[str] | None, what: str) -> list:
    if not only:
        return list(suite)
    names = [n.strip() for item in only for n in item.split(",") if n.strip()]
    by_name: dict[str, list] = {}
    for entry in suite:
        by_name.setdefault(entry[0], []).append(entry)
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        raise GpusimError(f"--only {','.join(unknown) or repr('')}: not in the {what} suite; "
                          f"its workloads: {', '.join(by_name)}")
    return [e for n in dict.fromkeys(names) for e in by_name[n]]


def _header(args: argparse.Namespace, mode: str) -> dict:
    return {"mode": mode, "config": args.config, "quick": bool(args.quick),
            "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor() or None, "cpu_count": os.cpu_count()}


def run(args: argparse.Namespace) -> int:
    out = sys.stderr if args.json == "-" else sys.stdout
    if args.repeat > 1 and (args.functional or args.long or args.sampling):
        raise GpusimError("--repeat applies to the timing suite only (not with --functional, --long or --sampling)")
    if args.functional:
        return _run_functional(args, out)
    if args.long:
        return _run_long(args, out)
    if args.sampling:
        return _run_sampling(args, out)
    if args.tune:
        return _run_tune(args, out)
    return _run_timing(args, out)


def _run_tune(args: argparse.Namespace, out) -> int:
    from gpusim.compiler.bench import tune_matmul
    from gpusim.config import load_config

    cfg = load_config(args.config)
    executor = make_executor(args)
    n = args.size
    print(f"tuning a {n}x{n}x{n} matmul on {cfg.name}: at least {args.candidates} candidates, simulated "
          f"(sampled above 2,000,000 warp instructions), {getattr(executor, 'jobs', None) or 'Dask'} workers",
          file=out, flush=True)
    r = tune_matmul(cfg, n=n, candidates=args.candidates, executor=executor, sample_budget=args.sample_budget,
                    cache_dir=args.cache_dir)
    params = " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in r["params"].items())
    bound = f" +- {r['confidence']:.1%} (sampled)" if r["sampled"] else " (simulated whole)"
    print(f"candidates scored   {r['candidates']:,} ({r['simulations']:,} kernels simulated)", file=out)
    print(f"wall time           {r['wall_seconds']:,.1f} s ({r['wall_seconds'] / 60:.1f} min)", file=out)
    print(f"winner              {params}", file=out)
    print(f"winner's cycles     {r['kernel_cycles']:,.0f}{bound}; {r['cycles']:,.0f} with the launch overhead",
          file=out)
    if r["rejected"]:
        print(f"rejected            {len(r['rejected'])} better candidates differ from the reference evaluator",
              file=out)
    emit_json(_header(args, "tune") | r, args.json)
    return 0


def _run_timing(args: argparse.Namespace, out) -> int:
    suite = _select(QUICK if args.quick else SUITE, args.only, "quick" if args.quick else "bench")
    if args.sass:  # each CUDA port from its PTX, then from its SASS
        ports = _select(SASS_QUICK if args.quick else SASS_SUITE, args.only, "sass")
        suite = [(n + isa, p) for n, p in ports for isa in ("", "@sass")]
    doc = _header(args, "timing")
    if args.cold:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="gpusim-numba-") as tmp:
            doc["engine_compile_seconds"] = _in_child(measure_compile, tmp)
        print(f"engine compiled from an empty cache in {doc['engine_compile_seconds']:.1f} s", file=out, flush=True)
    pins = PINNED_CYCLES if args.config == "a100" and not args.quick else {}
    print(f"{'workload':<25}{'warp instr':>13}{'cycles':>12}{'wall s':>9}{'warp-instr/s':>14}"
          f"{'cycles/s':>11}{'peak MiB':>10}  ok  pinned", file=out, flush=True)
    rows = []
    for name, params in suite:
        r = _fastest([_in_child(measure_timing, name, params, args.config) for _ in range(args.repeat)])
        r["pinned_cycles"] = pins.get(name)
        rows.append(r)
        pin = "-" if name not in pins else "yes" if pins[name] == r["cycles"] else f"NO ({pins[name]:,})"
        print(f"{name:<25}{r['warp_instructions']:>13,}{r['cycles']:>12,}{r['wall_seconds']:>9.2f}"
              f"{r['warp_instructions_per_second']:>14,.0f}{r['cycles_per_second']:>11,.0f}"
              f"{r['peak_rss_mib']:>10.0f}  {'yes' if r['verified'] else 'NO ':<4}{pin}", file=out, flush=True)
    median = statistics.median(r["warp_instructions_per_second"] for r in rows)
    per_cpu = statistics.median(r["warp_instructions_per_cpu_second"] or 0 for r in rows)
    load = max(r["engine_load_seconds"] for r in rows)
    met = median >= TARGET_WARP_IPS
    each = f" (the fastest of {args.repeat} runs of each)" if args.repeat > 1 else ""
    print(f"median {median:,.0f} warp-instr/s{each} ({per_cpu:,.0f} per CPU second); target {TARGET_WARP_IPS:,}/s: "
          f"{'met' if met else 'not met'}; engine loaded from the cache in at most {load:.2f} s (not timed)",
          file=out, flush=True)
    doc.update(repeat=args.repeat, target_warp_instructions_per_second=TARGET_WARP_IPS,
               median_warp_instructions_per_second=median, median_warp_instructions_per_cpu_second=per_cpu,
               target_met=met, results=rows)
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
        print(f"{name:<25}{r['warp_instructions']:>13,}{r['thread_instructions']:>15,}{r['exec_seconds']:>9.2f}"
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


def _run_sampling(args: argparse.Namespace, out) -> int:
    """`--sampling`: each workload of the suite in full (or from --references) and sampled, side by side;
    the table, the acceptance summary (bench_sampling.summary), the JSON and the Markdown table."""
    bs = bench_sampling
    if args.suite == "h200":
        suite, config = bs.h200_suite(), "h200"
    else:
        suite, config = (bs.SAMPLING_QUICK if args.quick else bs.SAMPLING_SUITE), args.config
    suite = _select(suite, args.only, f"sampling {args.suite}{' quick' if args.quick else ''}")
    bound = None if args.sample_bound is None else args.sample_bound / 100
    refs = bs.read_references(args.references)
    doc = _header(args, "sampling")
    doc.update(config=config, suite=args.suite, sample=args.sample, sample_bound=bound,
               targets={"error_pct": bs.TARGET_ERROR_PCT, "bound_pct": bs.TARGET_BOUND_PCT,
                        "speedup": bs.TARGET_SPEEDUP, "speedup_from_seconds": bs.SPEEDUP_FROM_SECONDS,
                        "geomean_error_pct": bs.TARGET_GEOMEAN_ERROR_PCT}, full_limit_seconds=args.full_limit)
    print(bs.table_header(), file=out, flush=True)
    rows = []
    for name, params in suite:
        f = bs.full_reference(name, params, config, refs, args.references, args.full_limit, _in_child,
                              stored_only=args.stored_only)
        if args.sample == "off":
            rows.append(bs.compare(f, {"decision": "not run", "reason": "--sample off"}))
        else:
            rows.append(bs.compare(f, _in_child(bs.measure_sampled, name, params, config, args.sample, bound)))
        print(bs.table_line(rows[-1]), file=out, flush=True)
    doc["results"] = rows
    doc["summary"] = summ = bs.summary(rows)
    print(bs.summary_line(summ), file=out, flush=True)
    emit_json(doc, args.json)
    emit_text(lambda: bs.markdown(rows, summ, doc), args.markdown)
    return 0
