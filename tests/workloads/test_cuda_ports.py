"""CUDA C workloads: `kernel:` naming a .cu or .ptx file, the checked-in PTX beside each shipped .cu (current:
recompiled and compared where nvcc exists), the nvcc cache, and the one-line errors when nvcc is absent.
(test_shipped.py verifies every port at its test sizes on a100 and gtx980; test_warp_size.py at 8-64 lanes in
both modes.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gpusim
from gpusim.data import data_dir
from gpusim.errors import AssemblyError, WorkloadError
from gpusim.isa import cuda

PORTS = ("vecadd", "saxpy", "reduce_sum", "reduce_sum_shfl", "matmul_tiled", "transpose_shared", "histogram",
         "softmax")
HAVE_NVCC = shutil.which("nvcc") is not None


def source(name: str) -> Path:
    return data_dir("workloads") / f"{name}_cu" / f"{name}.cu"


@pytest.mark.parametrize("name", PORTS)
def test_port_uses_its_checked_in_ptx_and_the_sasm_reference(name):
    assert cuda.is_current(source(name), source(name).with_suffix(".ptx"))
    assert cuda.ptx_for(source(name)) == source(name).with_suffix(".ptx")
    wl = gpusim.load_workload(f"{name}_cu")
    sasm = gpusim.load_workload(name)
    assert wl.reference_path == sasm.reference_path
    assert [p.name for p in wl.program.params] == [p.name for p in sasm.program.params]
    assert [p.type for p in wl.program.params] == [p.type for p in sasm.program.params]
    assert wl.program.name == name
    # the renamed program disassembles to .sasm that assembles back to it (shfl's `d|p` included)
    again = gpusim.assemble(gpusim.disassemble(wl.program))
    assert again.instructions == wl.program.instructions and again.params == wl.program.params


@pytest.mark.parametrize("name", ("vecadd", "reduce_sum"))
def test_port_times_like_its_sasm_version(name):
    """Timing mode verifies, and (these two kernels being nearly the same code in both languages) the
    cycles are within 15 % of the .sasm version's."""
    size = {"n": 8192}
    cu = gpusim.simulate(f"{name}_cu", "a100", **size)
    sa = gpusim.simulate(name, "a100", **size)
    assert cu.verified and abs(cu.cycles - sa.cycles) <= 0.15 * sa.cycles


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not on PATH")
@pytest.mark.parametrize("name", PORTS)
def test_checked_in_ptx_is_what_nvcc_makes_now(name):
    ptx = source(name).with_suffix(".ptx").read_text()
    header, _, body = ptx.partition("\n")
    assert header == cuda.header_line(source(name))
    assert body == cuda.compile_cu(source(name)), (
        f"regenerate: python -c \"from gpusim.isa.cuda import write_checked_in_ptx; "
        f"write_checked_in_ptx('{source(name)}')\"")


def _copy(tmp_path: Path, name: str, with_ptx: bool) -> Path:
    folder = tmp_path / f"{name}_cu"
    shutil.copytree(source(name).parent, folder)
    if not with_ptx:
        (folder / f"{name}.ptx").unlink()
    (folder / "workload.yaml").write_text((folder / "workload.yaml").read_text().replace(
        f"reference: ../{name}/reference.py", f"reference: {source(name).parent.parent / name / 'reference.py'}"))
    return folder


def test_without_nvcc_and_without_ptx_the_error_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "cache"))
    folder = _copy(tmp_path, "vecadd", with_ptx=False)
    with pytest.raises(AssemblyError) as e:
        gpusim.load_workload(folder)
    assert str(e.value) == (
        f"{folder / 'vecadd.cu'}:0:0: nvcc is not on PATH and no vecadd.ptx is checked in beside it; install the "
        "CUDA toolkit, or check in the PTX (`nvcc -ptx -arch=sm_80 -lineinfo vecadd.cu -o vecadd.ptx`)")


def test_without_nvcc_a_stale_ptx_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "cache"))
    folder = _copy(tmp_path, "vecadd", with_ptx=True)
    cu = folder / "vecadd.cu"
    cu.write_text(cu.read_text() + "// changed\n")
    with pytest.raises(AssemblyError, match="vecadd.ptx beside it was made from another version of the source"):
        gpusim.load_workload(folder)


def test_checked_in_ptx_needs_no_nvcc(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    wl = gpusim.load_workload(_copy(tmp_path, "saxpy", with_ptx=True))
    assert wl.run({"n": 300}, "a100").ok


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not on PATH")
def test_nvcc_output_is_cached_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "cache"))
    folder = _copy(tmp_path, "vecadd", with_ptx=False)
    cu = folder / "vecadd.cu"
    first = cuda.ptx_for(cu)
    assert first.parent == tmp_path / "cache" / "ptx" and first.is_file()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # the second time nvcc is not needed
    assert cuda.ptx_for(cu) == first
    assert gpusim.load_workload(folder).run({"n": 300}).ok
    # the source's line numbers come through the cached PTX
    prog = gpusim.load_kernel(cu)
    assert {Path(i.loc[0]) for i in prog.instructions if i.loc} == {cu.resolve()}


def test_workload_kernel_may_be_ptx_with_entry(tmp_path):
    folder = _copy(tmp_path, "vecadd", with_ptx=True)
    (folder / "vecadd.cu").unlink()
    text = (folder / "workload.yaml").read_text().replace("kernel: vecadd.cu", "kernel: vecadd.ptx\nentry: vecadd")
    (folder / "workload.yaml").write_text(text)
    assert gpusim.load_workload(folder).run({"n": 300}).ok
    (folder / "workload.yaml").write_text(text.replace("entry: vecadd", "entry: saxpy"))
    with pytest.raises(AssemblyError, match="no kernel is named 'saxpy'; the PTX has vecadd"):
        gpusim.load_workload(folder)


@pytest.mark.parametrize(("edit", "message"), [
    (("args: [a, b, c, n]", "args: [a, b, c]"), "args: 3 names for the 4 parameters of kernel vecadd"),
    (("args: [a, b, c, n]", "args: [a, a, c, n]"), "args: expected a list of distinct parameter names"),
    (("kernel: vecadd.cu", "kernel: vecadd.txt"), "kernel file 'vecadd.txt' not found"),
    (("reference: ", "reference: x"), "reference.py: missing reference.py"),
])
def test_cuda_workload_fields_are_checked(tmp_path, edit, message):
    folder = _copy(tmp_path, "vecadd", with_ptx=True)
    yml = folder / "workload.yaml"
    yml.write_text(yml.read_text().replace(*edit))
    with pytest.raises(WorkloadError, match=message):
        gpusim.load_workload(folder)
