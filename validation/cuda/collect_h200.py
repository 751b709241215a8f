"""Collect the H200 runs' raw output (validation/cuda/results/*/) into gpusim/data/measurements/h200.json.

Usage: python validation/cuda/collect_h200.py [RESULTS_DIR ...]   (default: every results/2026-12-04-run*)

The last run given is the primary one (its figures are the table's); earlier runs are kept beside
each figure as `earlier_runs` where the same measurement was made, to show the run-to-run spread.
Op chains that ptxas folded away (SASS loop body without the opcode) are marked `folded` and left out
of the summary. Only the standard library is used.
"""

from __future__ import annotations

import collections
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = REPO / "gpusim" / "data" / "measurements" / "h200.json"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def env_field(env: str, pattern: str) -> str | None:
    m = re.search(pattern, env)
    return m.group(1).strip() if m else None


def smi_rows(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    head = [h.strip() for h in lines[0].split(",")]
    return [dict(zip(head, (v.strip() for v in line.split(",")), strict=False)) for line in lines[1:]]


def dmon_clocks(path: Path) -> dict:
    sm, mem, pwr = [], [], []
    for line in path.read_text().splitlines():
        f = line.split()
        if not f or f[0].startswith("#") or len(f) < 7:
            continue
        try:
            pwr.append(int(f[2]))
            mem.append(int(f[5]))
            sm.append(int(f[6]))
        except ValueError:
            continue
    if not sm:
        return {}
    return {"samples": len(sm), "sm_mhz_min": min(sm), "sm_mhz_max": max(sm), "mem_mhz_min": min(mem),
            "mem_mhz_max": max(mem), "power_w_min": min(pwr), "power_w_max": max(pwr)}


def sass_mix(path: Path) -> dict[str, dict]:
    """Instruction mix of each lat_kernel<op_X> loop body (the longest backward branch)."""
    if not path.exists():
        return {}
    txt = gzip.open(path, "rt").read()
    mixes = {}
    for f in re.split(r"\n\s*Function : ", txt)[1:]:
        name = f.split("\n", 1)[0].strip()
        m = re.match(r"_Z10lat_kernelI(\d+)", name)  # _Z10lat_kernelI7op_dmulEvPNT_1TEPxi
        if not m:
            continue
        start = m.end()
        op = name[start:start + int(m.group(1))].removeprefix("op_")
        ins = re.findall(r"/\*([0-9a-f]{4})\*/\s+([^;]*);", f)
        loops = []
        for addr, i in ins:
            b = re.search(r"BRA (?:`\(\.L_x_\d+\) )?(0x[0-9a-f]+)", i)
            if b and int(b.group(1), 16) < int(addr, 16):
                loops.append((int(b.group(1), 16), int(addr, 16)))
        if not loops:
            mixes[op] = {"folded": True, "loop_body": {}}
            continue
        lo, hi = max(loops, key=lambda x: x[1] - x[0])
        body = [i for a, i in ins if lo <= int(a, 16) <= hi]
        c = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", i).split()[0] for i in body)
        mixes[op] = {"folded": False, "loop_body": dict(c.most_common())}
    return mixes


def run_info(d: Path) -> dict:
    env = (d / "env.txt").read_text()
    smi = smi_rows(d / "smi.csv")
    return {
        "id": d.name,
        "date_utc": env_field(env, r"== date\n(.*)"),
        "kernel": env_field(env, r"== uname\n(.*)"),
        "nvcc": env_field(env, r"(Cuda compilation tools.*)"),
        "driver": env_field(env, r"Driver Version:\s*([\d.]+)"),
        "cuda_driver_api": env_field(env, r"CUDA Version:\s*([\d.]+)"),
        "persistence_mode": env_field(env, r"NVIDIA H200\s+(On|Off)\s*\|"),
        "nvidia_smi_clocks": [{k: r.get(k) for k in ("label", "timestamp", "pstate", "clocks.sm",
                                                    "clocks.mem", "clocks.max.sm",
                                                    "temperature.gpu", "power.draw")} for r in smi],
        "dmon": dmon_clocks(d / "dmon.txt"),
    }


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv] or sorted((HERE / "results").glob("2026-12-04-run*"))
    runs = [(d, jsonl(d / "microbench.jsonl"), jsonl(d / "kernels.jsonl")) for d in dirs]
    d_last, mb, kr = runs[-1]
    earlier = runs[:-1]

    def sections(rows, name):
        return [r for r in rows if r["section"] == name]

    props = sections(mb, "properties")[0]
    props = {k: v for k, v in props.items() if k != "section"}
    mix = sass_mix(d_last / "sass.txt.gz")
    mhz = [r["sm_mhz_during"] for r in sections(mb, "pointer_chase")]
    mhz += [r["sm_mhz_during"] for r in sections(mb, "op_latency") if r["cycles_per_op"] >= 0.5]  # not folded

    # pointer chase: one row per (pattern, footprint), ca and cg side by side
    chase: dict[str, list] = {"random": [], "stride": []}
    rows: dict[tuple, dict] = {}
    for r in sections(mb, "pointer_chase"):
        key = (r["pattern"], r["footprint_bytes"])
        row = rows.setdefault(key, {"footprint_bytes": r["footprint_bytes"]})
        row[f"{r['load']}_cycles"] = r["cycles_per_load"]
        row[f"{r['load']}_ns"] = r["ns_per_load"]
        row[f"{r['load']}_per_load"] = r["per_load_cycles"]
        row[f"{r['load']}_per_load_hist16"] = r["per_load_hist16"]
    for _, rmb, _ in earlier:
        for r in sections(rmb, "pointer_chase"):
            row = rows.get((r["pattern"], r["footprint_bytes"]))
            if row is not None and r["load"] == "ca":  # run 1's cg figures above 128 MiB hit L2 (fixed in run 2)
                row.setdefault("ca_cycles_earlier_runs", []).append(r["cycles_per_load"])
    for (pattern, _), row in sorted(rows.items()):
        chase[pattern].append(row)

    def chase_at(kib, load="ca"):
        return next(r[f"{load}_cycles"] for r in chase["random"] if r["footprint_bytes"] == kib * 1024)

    def chase_p50(kib, load="cg"):
        return next(r[f"{load}_per_load"]["p50"] for r in chase["random"] if r["footprint_bytes"] == kib * 1024)

    # op latencies and throughputs
    op_lat = {}
    for r in sections(mb, "op_latency"):
        m = mix.get(r["op"], {})
        op_lat[r["op"]] = {"cycles_per_ptx_op": r["cycles_per_op"], "ptx": r["ptx"],
                           "ptx_ops_per_chain_step": r["ptx_ops_counted"],
                           "sass_loop_body": m.get("loop_body"), "folded_by_ptxas": m.get("folded", None)}
        if r["cycles_per_op"] < 0.5:
            op_lat[r["op"]]["folded_by_ptxas"] = True
    for _, rmb, _ in earlier:
        for r in sections(rmb, "op_latency"):
            if r["op"] in op_lat:
                op_lat[r["op"]].setdefault("earlier_runs", []).append(r["cycles_per_op"])
    op_thr = collections.defaultdict(dict)
    for r in sections(mb, "op_throughput"):
        op_thr[r["op"]][f"threads_{r['threads_per_block']}"] = {
            "ops_per_clk_per_sm": r["ops_per_clk_per_sm"], "gops_per_s": r["gops_per_s_events"], "ptx": r["ptx"]}

    shared = {
        "latency_cycles": sections(mb, "shared_latency")[0]["cycles_per_load"],
        "bank_conflicts": [{k: r[k] for k in ("stride_words", "warps", "cycles_per_warp_access", "view")}
                           for r in sections(mb, "shared_bank_conflict")],
        "bandwidth": [{k: r[k] for k in ("bytes_per_load", "bytes_per_clk_per_sm", "min", "max")}
                      for r in sections(mb, "shared_bandwidth")],
    }
    strip = lambda r: {k: v for k, v in r.items() if k != "section"}  # noqa: E731
    dram = {r["kernel"]: strip(r) for r in sections(mb, "dram_bandwidth")}
    for _, rmb, _ in earlier:
        for r in sections(rmb, "dram_bandwidth"):
            dram[r["kernel"]].setdefault("gb_per_s_earlier_runs", []).append(r["gb_per_s"])
    l2bw = [strip(r) for r in sections(mb, "l2_bandwidth")]
    atom = {r["kind"]: strip(r) for r in sections(mb, "atomics")}
    div = [strip(r) for r in sections(mb, "divergence")]
    launch = strip(sections(mb, "launch_overhead")[0])
    launch_earlier = [strip(sections(rmb, "launch_overhead")[0]) for _, rmb, _ in earlier]

    kernels = []
    for r in sections(kr, "kernel"):
        row = strip(r)
        for _, _, rk in earlier:
            for e in sections(rk, "kernel"):
                if e["kernel"] == r["kernel"] and e["params"] == r["params"]:
                    row.setdefault("ms_median_rotated_earlier_runs", []).append(e["ms_median_rotated"])
        kernels.append(row)

    peak_dram = 2 * props["memory_clock_rate_khz"] * 1e3 * props["memory_bus_width_bits"] / 8 / 1e9
    far = [r for r in chase["random"] if 34 * 1024 <= r["footprint_bytes"] // 1024 <= 57344]
    summary = {
        "sm_clock_mhz_measured": {"min": min(mhz), "max": max(mhz),
                                  "how": "clock64 over %globaltimer during every latency chain"},
        "l1_hit_cycles": chase_at(64),
        "l1_effective_capacity_kib": "between 192 and 224 (chase at 224 KiB: partly misses)",
        "l2_near_hit_cycles": chase_at(16384, "cg"),
        "l2_near_hit_cycles_p50_per_load": chase_p50(16384),
        "l2_far_hit_cycles_mean": round(sum(r["cg_cycles"] for r in far) / len(far), 1),
        "l2_far_hit_cycles_p50_per_load": sorted(r["cg_per_load"]["p50"] for r in far)[len(far) // 2],
        "l2_near_to_far_step_footprint_mib": "28-34 (half of the 60 MiB L2: 30 MiB)",
        "dram_cycles": chase_at(1048576),
        "dram_ns": next(r["ca_ns"] for r in chase["random"] if r["footprint_bytes"] == 1 << 30),
        "shared_load_cycles": shared["latency_cycles"],
        "ffma_latency_cycles": op_lat["ffma"]["cycles_per_ptx_op"],
        "dfma_latency_cycles": op_lat["dfma"]["cycles_per_ptx_op"],
        "mufu_latency_cycles": op_lat["ex2_approx_ftz"]["cycles_per_ptx_op"],
        "sin_cos_latency_cycles": op_lat["sin_approx"]["cycles_per_ptx_op"],
        "ffma_ops_per_clk_per_sm": op_thr["ffma"]["threads_1024"]["ops_per_clk_per_sm"],
        "mufu_ops_per_clk_per_sm": op_thr["ex2_approx_ftz"]["threads_1024"]["ops_per_clk_per_sm"],
        "dram_peak_gb_per_s_from_attributes": round(peak_dram, 1),
        "stream_copy_gb_per_s": dram["copy"]["gb_per_s"],
        "stream_copy_fraction_of_peak": round(dram["copy"]["gb_per_s"] / peak_dram, 3),
        "stream_triad_gb_per_s": dram["triad"]["gb_per_s"],
        "l2_bandwidth_gb_per_s_max": max(r["gb_per_s"] for r in l2bw),
        "l2_bandwidth_bytes_per_clk_max": max(r["bytes_per_clk"] for r in l2bw),
        "launch_us_back_to_back": launch["us_per_empty_kernel_back_to_back"],
        "launch_us_in_cuda_graph": launch["us_per_kernel_in_cuda_graph"],
    }
    out = {
        "schema": 1,
        "what": "Microbenchmarks and gpusim's shipped kernels measured on one NVIDIA H200 (SXM, 141 GB) lent "
                "through this workplace's device tool; see docs/validation.md",
        "date": "2026-12-04",
        "sources": {"programs": ["validation/cuda/microbench.cu", "validation/cuda/kernels.cu"],
                    "script": "validation/cuda/run_h200.sh",
                    "raw": [str(d.relative_to(REPO)) for d, _, _ in runs],
                    "collector": "validation/cuda/collect_h200.py"},
        "runs": [run_info(d) for d, _, _ in runs],
        "primary_run": d_last.name,
        "method": {
            "clock": "clock64() (SM cycles) around dependent chains in one thread; %globaltimer beside it "
                     "gives the SM clock during the chain. The clocks were left as found (never locked): "
                     "nvidia-smi read 1980 MHz SM (its maximum) and 3201 MHz memory throughout both runs.",
            "pointer_chase": "128-byte lines linked in one random cycle (or a fixed 128-byte stride) over the "
                             "footprint; ld.global.ca (L1+L2) and ld.global.cg (L2 only); footprints up to 128 MiB "
                             "are walked once in full before the 4096 timed loads, larger ones have a 4096-load "
                             "warm-up from their own starting point; cycles = total / 4096. per_load: each load "
                             "timed alone (an interval between clock reads; distribution only, not valid for L1 "
                             "hits, see microbench.cu)",
            "op_latency": "64 dependent PTX ops unrolled in a loop of 512 iterations (32768 ops), median of 5 "
                          "launches; the SASS loop body (sass_loop_body) says which machine instructions each "
                          "PTX op became",
            "op_throughput": "one block per SM (132), 256 or 1024 threads, 8 independent chains per thread; "
                             "ops/clk/SM from clock64 per block",
            "bandwidth": "cudaEvent timing, median of 20 launches after 3 warm-ups, 1 GiB arrays, "
                         "grid = 8 blocks/SM x 256 threads, float4 grid-stride loops",
            "kernels": "median of 30 launches after 3 warm-ups, rotating among enough buffer copies to make "
                       "each launch miss L2 ('rotated'), and on one set ('same_buffers'); each checked once "
                       "against a float64 CPU reference",
        },
        "properties": props,
        "summary": summary,
        "pointer_chase": {"line_bytes": 128, "timed_loads": 4096, **chase},
        "op_latency": op_lat,
        "op_throughput": dict(op_thr),
        "shared_memory": shared,
        "dram_bandwidth": dram,
        "l2_bandwidth": l2bw,
        "atomics": atom,
        "divergence": div,
        "launch_overhead": {**launch, "earlier_runs": launch_earlier},
        "kernels": kernels,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(REPO)} ({OUT.stat().st_size} bytes)")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
