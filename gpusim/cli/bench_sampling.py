"""`gpusim bench --sampling`: every workload of a suite simulated in full and sampled (`--sample auto`),
side by side: the cycle error, the reported bound, whether the bound holds the full run's cycles, the
whole-kernel statistics' errors and the speed-up (docs/sampling.md is generated from its table).

Two suites: "bench" (default: `SAMPLING_SUITE` on `--config`, a size per workload where the full run
takes tens of seconds) and "h200" (the kernel sizes measured on the H200, `data/measurements/h200.json`,
each as its .sasm workload and its nvcc-PTX port `<name>_cu`, on the h200 config).

A full run is the reference and can take many minutes, so `--references FILE` keeps them: one JSON line a
full run, keyed by workload, parameters, config hash, seed and the hash of the simulator's model code
(`model_version`: timing, functional, isa, config, workloads; not the sampler's); a run whose key is in
the file is read back instead of simulated. A full run that uses more than `--full-limit` CPU seconds is
stopped and recorded as over the limit; the sampled run alone is then reported. With `--stored-only`, a
full run not in the file is not simulated either (the sampled run alone, "not stored")."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

from gpusim.errors import GpusimError

# the suite's longest warps (pointer_chase at 100,000 steps: 700,011 instructions) run past the default
# runaway-loop guard (DEFAULT_MAX_STEPS_PER_WARP) on purpose
BENCH_MAX_STEPS_PER_WARP = 1 << 21

# `--sampling` (suite "bench"): every shipped workload, at a size where full simulation takes roughly
# 5-60 CPU s, chosen (within that) for many waves or long loops where the workload's parameters allow.
SAMPLING_SUITE = [
    ("divergence", {"n": 1 << 22, "paths": 4, "k": 4}),
    ("ffma_peak", {"n": 16384, "iters": 512}),
    ("gemm_tiled", {"m": 96, "n": 96, "k": 8192}),
    ("histogram", {"n": 1 << 25, "per_thread": 512}),
    ("matmul_naive", {"n": 320}),
    ("matmul_tiled", {"n": 384}),
    ("pointer_chase", {"steps": 100_000}),
    ("reduce_sum", {"n": 6 << 20}),
    ("reduce_sum_shfl", {"n": 1 << 23}),
    ("saxpy", {"n": 1 << 24}),
    ("sfu_peak", {"n": 32768, "iters": 2048}),
    ("shared_bank_conflict", {"n": 27648, "iters": 768}),
    ("softmax", {"rows": 131072, "cols": 32, "block": 32}),
    ("stream_copy", {"n": 1 << 25, "grid": 65536}),
    ("transpose_naive", {"rows": 4096, "cols": 3072}),
    ("transpose_shared", {"rows": 4096, "cols": 3072, "by": 32}),
    ("vecadd", {"n": 1 << 24}),
]
# `--sampling --quick`: seconds; on a100 "auto" simulates these in full (they are small); on a config of a
# few SMs (a YAML with `extends: a100` and `chip: {sm_count: 4}`) they are several waves or a long loop.
SAMPLING_QUICK = [
    ("saxpy", {"n": 1 << 16}),
    ("ffma_peak", {"n": 4096, "iters": 20}),
]
SUITES = ("bench", "h200")
TARGET_ERROR_PCT = 3.0  # issue 41: |sampled - full| / full within 3 %
TARGET_BOUND_PCT = 10.0  # no reported bound above 10 %
TARGET_SPEEDUP = 10.0  # at least 10x less time ...
SPEEDUP_FROM_SECONDS = 60.0  # ... where the full run takes over a minute
TARGET_GEOMEAN_ERROR_PCT = 1.0
FULL_LIMIT_SECONDS = 600.0  # CPU seconds a full run may take before it is stopped ("under 10 minutes here")
# the whole-kernel statistics compared between a sampled run and the full one (`kernel` keys)
COMPARED_STATS = ("dram_bytes_read", "dram_bytes_written", "l2_hit_rate_pct", "l1_hit_rate_pct")
MODEL_PACKAGES = ("timing", "functional", "isa", "config", "workloads", "data/configs", "data/workloads")


def h200_suite() -> list[tuple[str, dict[str, Any]]]:
    """The measured H200 kernel sizes (`data/measurements/h200.json` "kernels"), each kernel as its .sasm
    workload and, where shipped, its nvcc-PTX port `<name>_cu`, in the file's order."""
    from gpusim.data import data_dir
    from gpusim.workloads.loader import list_workloads

    names = set(list_workloads())
    doc = json.loads((data_dir("measurements") / "h200.json").read_text())
    out = []
    for k in doc["kernels"]:
        for name in (k["kernel"], k["kernel"] + "_cu"):
            if name in names:
                out.append((name, dict(k["params"])))
    return out


@functools.lru_cache(maxsize=1)
def model_version() -> str:
    """A hash of the source that decides a full run's cycles and metrics (`MODEL_PACKAGES` and the stats
    metrics): a change there makes every stored reference stale; a change to the sampler does not."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    paths = [p for pkg in MODEL_PACKAGES for p in sorted((root / pkg).rglob("*")) if p.is_file()]
    paths += [root / "stats" / "metrics.py", root / "stats" / "bottleneck.py", root / "stats" / "simulate.py"]
    for p in paths:
        if "__pycache__" in p.parts or p.suffix in (".pyc", ".nbi", ".nbc"):
            continue
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def reference_key(name: str, params: dict[str, Any], config: str, seed: int = 0) -> str:
    """The key of a full run in a references file."""
    from gpusim.config import load_config

    return json.dumps({"workload": name, "params": dict(sorted(params.items())),
                       "config_hash": load_config(config).hash(), "seed": seed, "model": model_version()},
                      sort_keys=True)


def read_references(path: str | os.PathLike | None) -> dict[str, dict[str, Any]]:
    """The full runs stored in `path` (JSON lines), by `reference_key`; {} when there is no file. A line
    that does not parse is an error naming the file and line."""
    if path is None or not Path(path).is_file():
        return {}
    out = {}
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            out[rec["key"]] = rec
        except (ValueError, KeyError, TypeError) as e:
            raise GpusimError(f"{path}:{i}: not a reference record ({e})") from None
    return out


def append_reference(path: str | os.PathLike, rec: dict[str, Any]) -> None:
    """Append one full run to the references file (one line, flushed)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(json.dumps(rec, default=_plain) + "\n")


def _plain(obj):
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON")


def _peak_rss_mib() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / (1024 * 1024) if sys.platform == "darwin" else kb / 1024


class _OverLimit(Exception):
    pass


def _limit_cpu(seconds: float | None) -> None:
    """In a measuring child: past `seconds` of CPU time, SIGXCPU raises _OverLimit (a minute later the
    kernel kills the process)."""
    if not seconds:
        return

    def over(signum, frame):
        raise _OverLimit

    signal.signal(signal.SIGXCPU, over)
    used = time.process_time()
    soft = math.ceil(used + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 60))


def whole_kernel_stats(kernel: dict[str, Any]) -> dict[str, Any]:
    """What a reference keeps of a SimResult's `kernel`: the figures a sampled run estimates."""
    keys = ("cycles", "warp_instructions", "dram_bytes_read", "dram_bytes_written", "l1_hit_rate_pct",
            "l2_hit_rate_pct", "dram_bandwidth_gbps", "l2_busy_pct", "dram_busy_pct", "ipc",
            "achieved_occupancy", "warp_states_pct", "warp_states", "unit_utilisation_pct",
            "memory_throughput_pct", "compute_throughput_pct")
    return {k: kernel.get(k) for k in keys}


def measure_full(name: str, params: dict, config: str, limit_seconds: float | None = None) -> dict:
    """Simulate one workload in full (`simulate`) and return its cycles, its whole-kernel statistics,
    its verdict, wall and CPU seconds; {"over_limit": True, ...} when it passed `limit_seconds` of CPU."""
    from gpusim.stats.simulate import simulate

    _limit_cpu(limit_seconds)
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        r = simulate(name, config, verify=False, max_steps_per_warp=BENCH_MAX_STEPS_PER_WARP, **params)
    except _OverLimit:
        return {"workload": name, "params": dict(params), "over_limit": True, "limit_seconds": limit_seconds,
                "wall_seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0}
    return {"workload": name, "params": dict(r.run.params), "verified": bool(r.run.ok), "cycles": int(r.cycles),
            "warp_instructions": int(r.timing.warp_instructions), "wall_seconds": r.wall_seconds,
            "cpu_seconds": time.process_time() - c0, "peak_rss_mib": _peak_rss_mib(),
            "kernel": whole_kernel_stats(r.kernel), "verdict": r.verdict.kind, "retired": retirements(r.timing)}


def retirements(timing, points: int = 2048) -> dict[str, Any]:
    """The cycles by which every k-th block had retired (k = blocks / `points`, at least 1): the kernel's
    progress over time, for studying a sampled run's errors against it."""
    ends = sorted(e for _, _, _, e in timing.timeline)
    step = max(1, len(ends) // points)
    return {"every": step, "ends": ends[step - 1::step]}


def measure_sampled(name: str, params: dict, config: str, sample: str, bound: float | None = None) -> dict:
    """Run one workload through `simulate_sampled` and return its estimate, its bound, its whole-kernel
    estimates and what it simulated (or, when it cannot be sampled under `sample`, why)."""
    from gpusim.analysis.sampling import simulate_sampled

    c0 = time.process_time()
    kw = {} if bound is None else {"bound": bound}
    try:
        r = simulate_sampled(name, config, sample=sample, max_steps_per_warp=BENCH_MAX_STEPS_PER_WARP, **kw,
                             **params)
    except GpusimError as e:
        return {"workload": name, "params": dict(params), "decision": "error", "reason": str(e)}
    d = r.to_dict()
    return {"workload": name, "params": dict(r.params), "decision": r.mode, "reason": r.reason,
            "cycles": r.cycles, "confidence": r.confidence, "wall_seconds": r.wall_seconds,
            "cpu_seconds": time.process_time() - c0,
            "warp_instructions_simulated": r.warp_instructions_simulated,
            "warp_instructions_estimated": r.warp_instructions_estimated,
            "runs": [x.to_dict() for x in r.runs], "peak_rss_mib": _peak_rss_mib(),
            "whole_kernel": d.get("whole_kernel"), "verdict": (d.get("verdict") or {}).get("kind")}


def full_reference(name: str, params: dict, config: str, refs: dict, path, limit: float | None, in_child,
                   stored_only: bool = False) -> dict:
    """The full run of `name` at `params` on `config`: from `refs` (read from `path`) when stored, else
    simulated in a child process and appended to `path` (when given), or with `stored_only` a record
    saying it is not stored."""
    key = reference_key(name, params, config)
    if key in refs:
        return {**refs[key], "cached": True}
    if stored_only:
        return {"workload": name, "params": dict(params), "not_stored": True}
    rec = in_child(measure_full, name, params, config, limit)
    rec.update(key=key, config=config, model=model_version())
    if path is not None:
        append_reference(path, rec)
    refs[key] = rec
    return {**rec, "cached": False}


def compare(full: dict, sampled: dict) -> dict[str, Any]:
    """One row of the table: the sampled run against the full one."""
    row: dict[str, Any] = {"workload": full["workload"], "params": full["params"], "decision": sampled["decision"],
                           "reason": sampled["reason"]}
    if full.get("verified") is False:
        row["full_verified"] = False
    if full.get("over_limit"):
        row.update(full_over_limit=True, full_cpu_seconds=full["cpu_seconds"])
    elif full.get("not_stored"):
        row.update(full_not_stored=True)
    else:
        row.update(full_cycles=full["cycles"], full_wall_seconds=full["wall_seconds"],
                   full_cpu_seconds=full["cpu_seconds"], full_warp_instructions=full["warp_instructions"],
                   full_cached=full.get("cached", False))
    if sampled["decision"] in ("error", "not run"):
        return row
    row.update(sampled_cycles=sampled["cycles"], confidence_pct=100.0 * sampled["confidence"],
               sampled_wall_seconds=sampled["wall_seconds"], sampled_cpu_seconds=sampled["cpu_seconds"],
               sampled_warp_instructions=sampled["warp_instructions_simulated"],
               estimated_warp_instructions=sampled["warp_instructions_estimated"], runs=sampled["runs"])
    if full.get("over_limit") or full.get("not_stored"):
        return row
    err = 100.0 * (sampled["cycles"] - full["cycles"]) / full["cycles"]
    # speed-up in CPU seconds: the machine is shared, and wall time measures the others' load too
    speedup = full["cpu_seconds"] / max(sampled["cpu_seconds"], 1e-9)
    row.update(error_pct=err, within_bound=abs(err) <= row["confidence_pct"] + 1e-9, speedup=speedup,
               wall_speedup=full["wall_seconds"] / max(sampled["wall_seconds"], 1e-9))
    row["targets_met"] = (abs(err) <= TARGET_ERROR_PCT and row["within_bound"]
                          and row["confidence_pct"] <= TARGET_BOUND_PCT
                          and (full["cpu_seconds"] <= SPEEDUP_FROM_SECONDS or speedup >= TARGET_SPEEDUP))
    wk = sampled.get("whole_kernel") or {}
    stats = {}
    for k in COMPARED_STATS:
        est, ref = (wk.get(k) or {}), full.get("kernel", {}).get(k)
        if ref is None or "value" not in est or est["value"] is None:
            continue
        stats[k] = {"full": ref, "sampled": est["value"], "low": est.get("low"), "high": est.get("high"),
                    "within": est.get("low") is not None and est["low"] - 1e-9 <= ref <= est["high"] + 1e-9}
    row["stats"] = stats
    return row


def summary(rows: list[dict]) -> dict[str, Any]:
    """The table's verdict against issue 41's acceptance: over the rows with a full run within the limit."""
    done = [r for r in rows if "error_pct" in r]
    errs = [max(abs(r["error_pct"]), 1e-3) for r in done]  # (an exact full run counts as 0.001 %)
    geo = _geomean(errs)
    sampled = [max(abs(r["error_pct"]), 1e-3) for r in done if r["decision"] == "sampled"]
    return {"compared": len(done), "rows": len(rows),
            "within_error": sum(abs(r["error_pct"]) <= TARGET_ERROR_PCT for r in done),
            "within_bound": sum(r["within_bound"] for r in done),
            "bound_at_most": sum(r["confidence_pct"] <= TARGET_BOUND_PCT for r in done),
            "fast_enough": sum(r["full_cpu_seconds"] <= SPEEDUP_FROM_SECONDS or r["speedup"] >= TARGET_SPEEDUP
                               for r in done),
            "targets_met": sum(r["targets_met"] for r in done),
            "geomean_error_pct": geo, "max_error_pct": max(errs, default=None),
            "sampled": len(sampled), "geomean_sampled_error_pct": _geomean(sampled),
            "max_bound_pct": max((r["confidence_pct"] for r in rows if "confidence_pct" in r), default=None),
            "over_limit": sum(bool(r.get("full_over_limit")) for r in rows),
            "not_stored": sum(bool(r.get("full_not_stored")) for r in rows)}


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# ---- the table ------------------------------------------------------------------------------------------

def _params(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())


def table_header() -> str:
    return (f"{'workload':<20}{'parameters':<34}{'full cycles':>12}{'sampled':>12}{'error %':>9}{'bound %':>9}"
            f"{'full s':>8}{'sampled s':>10}{'speed-up':>9}  met  decision")


def table_line(r: dict) -> str:
    """One row of the terminal table (CPU seconds)."""
    head = f"{r['workload']:<20}{_params(r['params'])[:33]:<34}"
    full = _missing(r) or f"{r['full_cycles']:,}"
    if "sampled_cycles" not in r:
        return f"{head}{full:>12}  {r['decision']}: {r['reason']}"
    if "error_pct" not in r:
        return (f"{head}{full:>12}{r['sampled_cycles']:>12,}{'':>9}{r['confidence_pct']:>9.2f}"
                f"{_seconds(r.get('full_cpu_seconds')):>8}{r['sampled_cpu_seconds']:>10.1f}{'':>9}  -    "
                f"{r['decision']}")
    return (f"{head}{full:>12}{r['sampled_cycles']:>12,}{r['error_pct']:>+9.2f}{r['confidence_pct']:>9.2f}"
            f"{r['full_cpu_seconds']:>8.1f}{r['sampled_cpu_seconds']:>10.1f}{r['speedup']:>8.1f}x  "
            f"{'yes' if r['targets_met'] else 'no ':<4} {r['decision']}")


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _missing(r: dict) -> str:
    """Why a row has no full run to compare with ('' where it has one)."""
    return "over limit" if r.get("full_over_limit") else "not stored" if r.get("full_not_stored") else ""


def summary_line(s: dict) -> str:
    geo = "n/a" if s["geomean_error_pct"] is None else f"{s['geomean_error_pct']:.2f}%"
    geo_s = "n/a" if s.get("geomean_sampled_error_pct") is None else f"{s['geomean_sampled_error_pct']:.2f}%"
    missing = f"{s['over_limit']} over the full-run limit" + (f", {s['not_stored']} not stored"
                                                                if s.get("not_stored") else "")
    return (f"{s['compared']} of {s['rows']} compared with their full run ({missing}): "
            f"|error| <= {TARGET_ERROR_PCT:g}% for {s['within_error']}, the bound holds the full run for "
            f"{s['within_bound']}, bound <= {TARGET_BOUND_PCT:g}% for {s['bound_at_most']}, >= {TARGET_SPEEDUP:g}x "
            f"(where the full run takes over {SPEEDUP_FROM_SECONDS:g} s) for {s['fast_enough']}; all targets: "
            f"{s['targets_met']}; geometric-mean |error| {geo} (target {TARGET_GEOMEAN_ERROR_PCT:g}%), over the "
            f"{s.get('sampled', 0)} that auto sampled {geo_s}")


def markdown(rows: list[dict], s: dict, doc: dict) -> str:
    """The table as Markdown (docs/sampling.md): one row a workload, then the summary line."""
    out = [f"`gpusim bench --sampling --suite {doc['suite']}` on {doc['config']}, {doc['started']} "
           f"({doc['cpu_count']} cores; times in CPU seconds of one process).", "",
           "| workload | parameters | full cycles | sampled cycles | error | bound | full CPU s | sampled CPU s | "
           "speed-up | targets | what auto did |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        full = _missing(r) or f"{r['full_cycles']:,}"
        if "sampled_cycles" not in r:
            out.append(f"| {r['workload']} | {_params(r['params'])} | {full} | - | - | - | "
                       f"{_seconds(r.get('full_cpu_seconds'))} | - | - | - | {r['decision']}: {r['reason']} |")
            continue
        same = r["decision"] == "full"
        err = f"{r['error_pct']:+.2f} %" if "error_pct" in r else "-"
        speed = f"{r['speedup']:.1f}x" if "speedup" in r else "-"
        met = ("yes" if r["targets_met"] else "no") if "targets_met" in r else "-"
        what = f"{r['decision']}: {r['reason']}".replace("|", "/")
        sampled = "=" if same else f"{r['sampled_cycles']:,}"
        out.append(f"| {r['workload']} | {_params(r['params'])} | {full} | {sampled} | {err} | "
                   f"{r['confidence_pct']:.1f} % | {_seconds(r.get('full_cpu_seconds'))} | "
                   f"{r['sampled_cpu_seconds']:.1f} | "
                   f"{speed} | {met} | {what} |")
    out += ["", summary_line(s), ""]
    return "\n".join(out)
