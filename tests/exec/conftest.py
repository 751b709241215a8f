"""The programs gpusim exec's tests run, built both ways.

Each program is a CUDA source here (tests/exec/programs/*.cu, tests/exec/suites/*/) with its nvcc command
(PROGRAMS). Its binary is checked in beside the tests (tests/exec/programs/bin/NAME, with NAME.sha256: the
sha256 of the sources and the command it was built from), so the tests run where nvcc is not installed;
where nvcc is, `built_by_nvcc` builds it afresh and the tests run that one too (`both_ways`), and
test_programs.py checks that each checked-in binary is current. Refresh them with
`python tests/exec/conftest.py` after changing a source."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BIN = HERE / "programs" / "bin"
COMPAT = HERE.parents[1] / "gpusim" / "exec" / "include" / "gpusim_cuda_compat.h"
ARCH = ["-cudart", "shared", "-arch=sm_80"]

# name -> (folder, main source, other sources hashed, extra nvcc flags)
PROGRAMS: dict[str, tuple[Path, str, tuple[str, ...], tuple[str, ...]]] = {
    "vecadd": (HERE / "programs", "vecadd.cu", (), ()),
    "runtime_calls": (HERE / "programs", "runtime_calls.cu", (), ()),
    "two_streams": (HERE / "programs", "two_streams.cu", (), ()),
    "missing_api": (HERE / "programs", "missing_api.cu", (), ()),
    "exit_status": (HERE / "programs", "exit_status.cu", (), ()),
    # public suites, unmodified (tests/exec/suites/README.md): PolyBench/GPU GEMM at 64^3, cuda-samples vectorAdd
    "polybench_gemm": (HERE / "suites" / "polybench-gpu" / "CUDA" / "GEMM", "gemm.cu",
                       ("gemm.cuh", "../../common/polybench.h", "../../common/polybench.c",
                        "../../common/polybenchUtilFuncts.h"),
                       ("-O3", "-include", "COMPAT", "-DN=", "-DNI=64", "-DNJ=64", "-DNK=64")),
    "cuda_samples_vectorAdd": (HERE / "suites" / "cuda-samples" / "Samples" / "0_Introduction" / "vectorAdd",
                               "vectorAdd.cu", ("../../../Common/helper_cuda.h", "../../../Common/helper_string.h"),
                               ("-I../../../Common",)),
}


def command(name: str) -> list[str]:
    folder, main, _others, flags = PROGRAMS[name]
    flags = tuple(str(COMPAT) if f == "COMPAT" else f for f in flags)
    return ["nvcc", *ARCH, *flags, main, "-o"]


def digest(name: str) -> str:
    """sha256 of the program's sources and its command (the compat header's path left out)."""
    folder, main, others, flags = PROGRAMS[name]
    h = hashlib.sha256()
    for src in (main, *others):
        h.update((folder / src).read_bytes())
    h.update(" ".join(["nvcc", *ARCH, *flags, main]).encode())
    if "COMPAT" in flags:
        h.update(COMPAT.read_bytes())
    return h.hexdigest()


def build(name: str, out: Path) -> Path:
    folder = PROGRAMS[name][0]
    done = subprocess.run([*command(name), str(out)], cwd=folder, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def checked_in(name: str) -> Path:
    """The checked-in binary of `name` (skips when it is missing or stale: rebuild with this file)."""
    path = BIN / name
    stamp = BIN / f"{name}.sha256"
    if not path.is_file() or not stamp.is_file():
        pytest.skip(f"no checked-in binary of {name} (python tests/exec/conftest.py builds them)")
    if stamp.read_text().split()[0] != digest(name):
        pytest.skip(f"the checked-in {name} was built from other sources (python tests/exec/conftest.py)")
    return path


_BUILT: dict[str, Path] = {}


def built_by_nvcc(name: str, tmp_factory) -> Path:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the programs are not built afresh (the checked-in binaries still run)")
    if name not in _BUILT:
        _BUILT[name] = build(name, tmp_factory.mktemp("nvcc") / name)
    return _BUILT[name]


@pytest.fixture(autouse=True)
def needs_c_compiler():
    from gpusim.exec.shim import compiler

    if compiler() is None:
        pytest.skip("no C compiler: gpusim exec builds its runtime with one (cc, gcc or clang)")


@pytest.fixture(params=["checked-in", "nvcc"])
def both_ways(request, tmp_path_factory):
    """A function giving a program's binary: the checked-in one, then one nvcc builds now."""
    if request.param == "checked-in":
        return checked_in
    return lambda name: built_by_nvcc(name, tmp_path_factory)


def main() -> None:
    BIN.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or PROGRAMS:
        build(name, BIN / name)
        folder, main_src, _others, flags = PROGRAMS[name]
        (BIN / f"{name}.sha256").write_text(f"{digest(name)}  {' '.join(['nvcc', *ARCH, *flags, main_src])}\n")
        print(f"built {BIN / name}")


if __name__ == "__main__":
    main()
