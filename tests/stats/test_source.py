"""The source view (Nsight Compute's Source page): per-instruction and per-line counters that add up
to the kernel's, warp states charged to the instruction a warp waits on, `gpusim run --source`."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

import gpusim
from gpusim.cli.main import main
from gpusim.config.vocab import WARP_STATES
from gpusim.functional import GlobalMemory
from gpusim.functional.launch import Launch
from gpusim.isa import assemble
from gpusim.stats.simulate import timed_execute
from gpusim.stats.source import format_source, line_records, pc_records

# (workload, params): loads and stores, shared memory with barriers and bank conflicts, shuffles,
# divergence, global atomics
RUNS = [
    ("saxpy", {"n": 4099}),
    ("reduce_sum", {"n": 1 << 13}),
    ("shared_bank_conflict", {"n": 4096, "stride": 32, "iters": 8}),
    ("reduce_sum_shfl", {"n": 1 << 12}),
    ("divergence", {"n": 4099, "paths": 8, "k": 5}),
    ("histogram", {"n": 1 << 14}),
    ("transpose_shared", {"rows": 512, "cols": 512}),  # (chunks of shared accesses alone)
]
SUMMED = ("warp_instructions", "thread_instructions", "global_requests", "global_sectors", "global_bytes",
          "shared_requests", "shared_wavefronts", "shared_ideal_wavefronts", "shared_bytes", "samples")


def _total(records, key):
    return sum(r[key] for r in records if r[key] is not None)


@pytest.mark.parametrize(("workload", "params"), RUNS, ids=[w for w, _ in RUNS])
def test_per_instruction_and_per_line_totals_equal_the_kernels(workload, params):
    r = gpusim.simulate(workload, "a100", per_pc=True, **params)
    k, st = r.kernel, r.run.result.stats
    pcs, lines = r.pcs, r.source
    # every warp state, charged to instructions, adds up to the kernel's count of it
    for s in WARP_STATES:
        assert _total(pcs, f"warp_states.{s}") == k["warp_states"][s], s
        assert _total(lines, f"warp_states.{s}") == k["warp_states"][s], s
    assert _total(pcs, "samples") == sum(k["warp_states"].values())
    assert _total(pcs, "warp_instructions") == k["warp_instructions"] == st.warp_instructions
    assert _total(pcs, "thread_instructions") == st.thread_instructions
    assert _total(pcs, "global_requests") == k["global_requests"]
    assert _total(pcs, "global_bytes") == st.global_bytes_read + st.global_bytes_written
    assert _total(pcs, "shared_requests") == k["shared_requests"]
    assert _total(pcs, "shared_wavefronts") == k["shared_wavefronts"]
    assert _total(pcs, "shared_ideal_wavefronts") == k["shared_ideal_wavefronts"]
    assert _total(pcs, "shared_bytes") == st.shared_bytes_read + st.shared_bytes_written
    if workload != "histogram":  # (global atomics run at the L2, outside the L1's and the writes' sectors)
        assert _total(pcs, "global_sectors") == k["global_sectors"]
    for key in SUMMED:
        assert _total(lines, key) == _total(pcs, key), key
    assert pytest.approx(sum(x["samples_pct"] for x in pcs)) == 100.0
    # one record per instruction; per line, one for every line of the kernel's file
    assert [x["pc"] for x in pcs] == list(range(len(r.run.result.program)))
    text = open(r.run.result.program.source).read().splitlines()
    assert [x["line"] for x in lines] == list(range(1, len(text) + 1))
    assert [x["text"] for x in lines] == [t.expandtabs(4) for t in text]


def test_per_pc_counting_changes_no_statistic():
    off = gpusim.simulate("reduce_sum", "a100", n=1 << 13)
    on = gpusim.simulate("reduce_sum", "a100", n=1 << 13, per_pc=True)
    assert dataclasses.asdict(on.timing) == dataclasses.asdict(off.timing)
    assert off.timing.pc_states is None and off.source is None and "source" not in off.to_dict()
    assert on.timing.pc_states.shape == (len(on.run.result.program), len(WARP_STATES))


DEPENDENT = """\
.kernel dependent
.param .u64 x
.param .u64 y
.reg .u32 %r<1>
.reg .u64 %rd<3>
.reg .f32 %f<2>
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd0, %r0, 4;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    add.u64 %rd1, %rd1, %rd0;
    add.u64 %rd2, %rd2, %rd0;
    ld.global.f32 %f0, [%rd1];
    add.f32 %f1, %f0, %f0;
    st.global.f32 [%rd2], %f1;
    exit;
"""
LOAD_LINE, USE_LINE, EXIT_LINE = 13, 14, 16


def test_a_load_then_its_use_stalls_on_the_use_in_long_scoreboard():
    cfg = gpusim.load_config("a100")
    prog = assemble(DEPENDENT)
    mem = GlobalMemory()
    x = np.arange(64, dtype=np.float32)
    args = {"x": mem.alloc_array(x), "y": mem.alloc_array(np.zeros(64, np.float32))}
    te = timed_execute(prog, Launch(1, 64), args, mem, cfg=cfg, per_pc=True)
    assert np.array_equal(mem.read(args["y"], np.float32, 64), 2 * x)
    lines = {r["line"]: r for r in line_records(pc_records(prog, te.stats.per_pc, te.timing.pc_states, cfg))}
    assert sorted(lines) == list(range(7, 17))  # (the string has no file: its lines with instructions)
    use, load = lines[USE_LINE], lines[LOAD_LINE]
    assert use["text"] == "add.f32 %f1, %f0, %f0"
    # the load's latency is waited out on the add that reads %f0, not on the load
    assert use["top_stall"] == "long_scoreboard" and use["top_stall_pct"] > 90
    assert use["warp_states.long_scoreboard"] == te.timing.warp_states["long_scoreboard"]
    assert load["warp_states.long_scoreboard"] == 0
    # each of the 2 warps: at least an L2 miss's latency (the DRAM's) minus the cycle it issues in
    assert use["warp_states.long_scoreboard"] >= 2 * (cfg.dram.latency_cycles - 1)
    assert load["global_requests"] == 2 and load["global_sectors"] == 2 * 4 and load["global_bytes"] == 2 * 128
    # the store's acknowledgement is waited for on the exit (drain)
    assert lines[EXIT_LINE]["top_stall"] == "drain"


def test_run_source_prints_the_saxpy_source_page(capsys):
    assert main(["run", "saxpy", "--set", "n=4096", "--source"]) == 0
    out = capsys.readouterr().out
    view = out[out.index("source view: saxpy on a100 (timing)"):].splitlines()
    assert view[1].startswith("-- ") and view[1].endswith("saxpy/saxpy.sasm")
    assert view[2].split() == ["line", "inst", "thr", "samp%", "top", "stalls", "(%", "of", "line)", "req",
                               "sec/rq", "source"]
    rows = {int(s.split()[0]): s for s in view[3:]}
    assert len(rows) == 28 and all(len(s) <= 120 for s in view)
    assert rows[2].split() == ["2", ".kernel", "saxpy"]  # a line without instructions, printed plainly
    # 4096 threads: 128 warps run each instruction with 32 threads
    fma = rows[26].split()
    assert fma[:3] == ["26", "128", "32.0"] and fma[4] == "long_scoreboard"
    assert fma[-5:] == ["fma.rn.f32", "%f3,", "%f0,", "%f1,", "%f2;"]
    assert float(fma[3]) > 50  # most warp-cycles wait for the loads, on the fma
    for load in (24, 25):  # coalesced: 4 sectors per request
        assert rows[load].split()[-5:-2] == ["128", "4.0", "ld.global.f32"]
    assert rows[27].split()[-5:-3] == ["128", "4.0"] and rows[28].split()[4] == "drain"


def test_json_source_is_records_pandas_reads(tmp_path, capsys):
    js = tmp_path / "r.json"
    assert main(["run", "reduce_sum", "--set", "n=8192", "--source", "--json", str(js)]) == 0
    d = json.loads(js.read_text())
    df = pd.DataFrame(d["source"])
    assert {"file", "line", "text", "warp_instructions", "samples_pct", "top_stall", "global_sectors",
            "shared_wavefronts", "warp_states.barrier"} <= set(df.columns)
    assert df.warp_instructions.sum() == d["kernel"]["warp_instructions"]
    assert df["warp_states.barrier"].sum() == d["kernel"]["warp_states"]["barrier"] > 0
    bar = df[df.text.str.contains("bar.sync") & df.pcs.notna()]
    assert len(bar) == 2
    assert (bar.top_stall == "barrier").all()  # a barrier's wait is charged to its bar.sync
    pcs = pd.DataFrame(d["pcs"])
    assert pcs.pc.tolist() == list(range(len(pcs))) and pcs.warp_instructions.sum() == df.warp_instructions.sum()


def test_functional_source_has_counts_without_stalls(capsys, tmp_path):
    js = tmp_path / "f.json"
    assert main(["run", "saxpy", "--set", "n=4096", "--functional", "--source", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "source view: saxpy on a100 (functional)" in out and "samp%" not in out
    d = json.loads(js.read_text())
    df = pd.DataFrame(d["source"])
    assert df.warp_instructions.sum() == d["stats"]["warp_instructions"]
    assert df.thread_instructions.sum() == d["stats"]["thread_instructions"]
    assert df.global_requests.sum() == d["stats"]["global_requests"] == 3 * 128
    assert df.samples.isna().all()


def test_source_with_sample_is_an_error(capsys):
    assert main(["run", "saxpy", "--source", "--sample", "on"]) == 2
    assert "--source needs the whole kernel simulated: drop --sample" in capsys.readouterr().err


CUDA = """\
// saxpy in CUDA C (the .sasm's instructions carry these lines as their `loc`)
__global__ void saxpy(const float* x, float* y, float a, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""
# saxpy.sasm's lines -> the CUDA line each instruction came from (the exit at its end has none)
CUDA_LINE = {12: 4, 13: 4, 14: 4, 15: 5, 16: 5, 17: 5, **dict.fromkeys(range(18, 28), 6)}


def test_instructions_with_a_cuda_loc_are_reported_on_the_cuda_source(tmp_path):
    cu = tmp_path / "saxpy.cu"
    cu.write_text(CUDA)
    wl = gpusim.load_workload("saxpy")
    prog = wl.program
    located = dataclasses.replace(prog, instructions=tuple(
        dataclasses.replace(i, loc=(str(cu), CUDA_LINE[i.line]) if i.line in CUDA_LINE else None)
        for i in prog.instructions))
    cfg = gpusim.load_config("a100")
    pl = wl.prepare({"n": 4096})
    te = timed_execute(located, pl.launch, pl.args, pl.memory, cfg=cfg, per_pc=True)
    lines = line_records(pc_records(located, te.stats.per_pc, te.timing.pc_states, cfg))
    cuda = [r for r in lines if r["file"] == str(cu)]
    assert [r["line"] for r in cuda] == list(range(1, 8)) and cuda[5]["text"] == CUDA.splitlines()[5]
    assert [r["pcs"] for r in cuda] == [None, None, None, 3, 3, 10, None]
    assert cuda[5]["warp_instructions"] == 10 * 128 and cuda[5]["global_requests"] == 3 * 128
    assert cuda[5]["top_stall"] == "long_scoreboard"  # the loads' latency, waited on the fma of line 6
    # the one instruction without a loc (the final exit) stays on its line of the .sasm
    rest = [r for r in lines if r["file"] != str(cu)]
    assert [(r["line"], r["pcs"]) for r in rest if r["pcs"]] == [(28, 1)] and rest[27]["top_stall"] == "drain"
    assert sum(r["samples"] or 0 for r in lines) == sum(te.timing.warp_states.values())
    view = format_source(lines).splitlines()
    assert view[0] == f"-- {cu}" and view.index(f"-- {prog.source}") == 9
    assert view[7].split()[:3] == ["6", str(10 * 128), "32.0"] and view[7].endswith("y[i] = a * x[i] + y[i];")
