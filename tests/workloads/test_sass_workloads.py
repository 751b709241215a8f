"""The shipped CUDA C workloads run as SASS (`isa="sass"`): verified against numpy on a100 (sm_80) and h200
(sm_90), functional at every test size and timed; from the checked-in cubin and listing with no nvcc or
nvdisasm present; the checked-in files current where the tools exist; and each run's warp instructions equal to
the static SASS of every basic block times the trips the run took (beside the PTX run's count)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gpusim
from gpusim.config import load_config
from gpusim.data import data_dir
from gpusim.errors import AssemblyError
from gpusim.functional.executor import Executor
from gpusim.functional.stats import PcStats
from gpusim.isa.sass import build, load_sass
from gpusim.isa.sass.program import basic_blocks

PORTS = ("vecadd", "saxpy", "reduce_sum", "reduce_sum_shfl", "matmul_tiled", "transpose_shared", "histogram",
         "softmax", "gemm_mma_cu")
CONFIGS = (("a100", 80), ("h200", 90))
HAVE_TOOLS = shutil.which("nvcc") is not None and build.tool("nvdisasm") is not None


def workload(name: str) -> str:
    return name if name.endswith("_cu") else f"{name}_cu"


def source(name: str) -> Path:
    folder = data_dir("workloads") / workload(name)
    return next(folder.glob("*.cu"))


@pytest.mark.parametrize("cfg", [c for c, _ in CONFIGS])
@pytest.mark.parametrize("name", PORTS)
def test_port_verifies_from_sass_at_every_test_size(name, cfg):
    wl = gpusim.load_workload(workload(name), isa="sass")
    prog = wl.program_for(cfg)
    assert prog.isa == "sass" and prog.arch == dict(CONFIGS)[cfg]
    assert [p.name for p in prog.params] == [p.name for p in gpusim.load_workload(workload(name)).program.params]
    for size in wl.test_sizes:
        run = wl.run(size, cfg)
        assert run.ok, run.message()


@pytest.mark.parametrize("cfg", [c for c, _ in CONFIGS])
@pytest.mark.parametrize("name", PORTS)
def test_port_verifies_from_sass_timed(name, cfg):
    wl = gpusim.load_workload(workload(name), isa="sass")
    r = gpusim.simulate(wl, config=cfg, params=wl.test_sizes[0])
    assert r.verified and r.cycles > 0
    assert r.run.result.stats.warp_instructions == wl.run(wl.test_sizes[0], cfg).result.stats.warp_instructions


def test_every_port_runs_from_its_checked_in_cubin_without_nvcc(monkeypatch, tmp_path):
    monkeypatch.setattr(build, "tool", lambda name: None)
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    for name in PORTS:
        for _, arch in CONFIGS:
            cubin, listing = build.sass_for(source(name), arch)
            assert (cubin, listing) == build.checked_in(source(name), arch)
            assert load_sass(source(name), arch).symbol in cubin.read_bytes().decode("latin-1")
    for cfg, _ in CONFIGS:
        wl = gpusim.load_workload("saxpy_cu", isa="sass")
        assert wl.run(wl.test_sizes[0], cfg).ok


def test_without_nvcc_a_changed_source_is_a_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setattr(build, "tool", lambda name: None)
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "empty-cache"))
    for f in source("saxpy").parent.iterdir():
        shutil.copy(f, tmp_path)
    cu = tmp_path / "saxpy.cu"
    cu.write_text(cu.read_text() + "\n// changed\n")
    with pytest.raises(AssemblyError) as e:
        load_sass(cu, 90)
    msg = str(e.value)
    assert "\n" not in msg and "nvcc is not available" in msg and "another version of the source" in msg


@pytest.mark.skipif(not HAVE_TOOLS, reason="nvcc or nvdisasm is absent")
@pytest.mark.parametrize("name", ("saxpy", "softmax", "gemm_mma_cu"))
def test_checked_in_cubin_and_listing_are_what_nvcc_makes_now(name, tmp_path):
    for _, arch in CONFIGS:
        cubin, listing = build.compile_sass(source(name), arch, tmp_path)
        want_cubin, want_listing = build.checked_in(source(name), arch)
        assert cubin.read_bytes() == want_cubin.read_bytes(), (
            f"regenerate: python -c \"from gpusim.isa.sass import write_checked_in; "
            f"write_checked_in('{source(name)}', {arch})\"")
        assert listing.read_text() == want_listing.read_text()


def per_pc(prog, wl, cfg, size):
    """Warp instructions per pc of one functional run, and the run's total."""
    cfg = load_config(cfg)
    prep = wl.prepare(size, cfg=cfg)
    ex = Executor(prog, prep.launch, dict(prep.args), prep.memory, cfg=cfg, record=True)
    counts = PcStats.zeros(len(prog))
    for src in ex.stream_batches():
        while (ch := src.advance()) is not None:
            counts.tally(ch)
    return counts.warp_instructions, ex.stats.warp_instructions


@pytest.mark.parametrize("name", PORTS)
def test_warp_instructions_are_static_blocks_times_trips(name, capsys):
    wl = gpusim.load_workload(workload(name), isa="sass")
    ptx = gpusim.load_workload(workload(name))
    size = wl.test_sizes[-1]
    for cfg, _ in CONFIGS:
        prog = wl.program_for(cfg)
        counts, total = per_pc(prog, wl, cfg, size)
        blocks = basic_blocks(prog.instructions)
        assert sum(b.end - b.start + 1 for b in blocks) == len(prog)
        for b in blocks:  # every instruction of a block runs as often as the block is entered
            assert (counts[b.start:b.end + 1] == counts[b.start]).all(), (cfg, b)
        assert sum((b.end - b.start + 1) * int(counts[b.start]) for b in blocks) == total
        ptx_total = ptx.run(size, cfg).result.stats.warp_instructions
        with capsys.disabled():
            print(f"\n{workload(name)} {cfg} {size}: SASS {total:,} warp instructions, PTX {ptx_total:,} "
                  f"({total / ptx_total:.2f}x)", end="")
        assert 0 < total


def test_source_view_per_sass_line_and_back_to_the_cuda_line():
    wl = gpusim.load_workload("saxpy_cu", isa="sass")
    r = gpusim.simulate(wl, config="h200", params={"n": 4096}, per_pc=True)
    prog = wl.program_for("h200")
    assert len(r.pcs) == len(prog)
    listing = Path(prog.source).read_text().splitlines()
    for row, ins in zip(r.pcs, prog.instructions, strict=True):
        assert row["instruction"] == ins.text and ins.text in listing[row["asm_line"] - 1]
        if ins.loc is not None:
            assert (row["file"], row["line"]) == ins.loc
    ffma = next(row for row in r.pcs if row["instruction"].startswith("FFMA"))
    assert (ffma["file"], ffma["line"]) == ("saxpy.cu", 6)  # y[i] = a * x[i] + y[i]
    by_line = {(s["file"], s["line"]): s["warp_instructions"] for s in r.source}
    assert sum(by_line.values()) == r.run.result.stats.warp_instructions
    assert by_line[("saxpy.cu", 6)] == sum(row["warp_instructions"] for row in r.pcs if row["line"] == 6)
