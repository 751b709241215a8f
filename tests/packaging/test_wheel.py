"""gpusim as a user installs it: an sdist built from this tree, a wheel built from that sdist, installed
into a fresh virtual environment, run from an empty folder. The shipped configs and workloads must come
with it (package data), and the installed version must answer `gpusim --version`.

The installed timing engine runs as plain Python here (NUMBA_DISABLE_JIT=1, the same source, a second
for the small run): compiling it afresh in the new venv takes 1-5 minutes on a shared 2-core machine and
tests Numba, not the packaging; the checkout's own engine is compiled by the suite (conftest) and its
cycles are compared with the plain-Python run (tests/timing/test_nojit.py). GPUSIM_WHEEL_COMPILE=1
compiles the installed engine too, as a user's first run does."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("gpusim/data/configs/a100.yaml", "gpusim/data/configs/programs/two_streams.yaml",
           "gpusim/data/workloads/saxpy/saxpy.sasm", "gpusim/data/workloads/saxpy/reference.py",
           "gpusim/data/workloads/micro/pointer_chase/workload.yaml")


def _run(argv, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _wheel(tmp: Path) -> Path:
    """A wheel built from an sdist of a copy of the tree (no stale build/ or egg-info of the checkout). The
    sdist is built with this environment's setuptools where there is one, the wheel without build isolation
    (no network) where that setuptools can build wheels, else in pip's isolated build environment."""
    src = tmp / "src"
    shutil.copytree(REPO / "gpusim", src / "gpusim", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    dist = tmp / "dist"
    target = src
    if importlib.util.find_spec("setuptools") is not None:
        _run([sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(dist)!r})"],
             cwd=src)
        (target,) = dist.glob("gpusim-*.tar.gz")
        with tarfile.open(target) as tar:
            names = {n.partition("/")[2] for n in tar.getnames()}
        assert set(SHIPPED) <= names, f"the sdist lacks {sorted(set(SHIPPED) - names)}"
    isolation = ["--no-build-isolation"] if _can_build_wheels() else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", dist, target])
    (wheel,) = dist.glob("gpusim-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        assert set(SHIPPED) <= set(whl.namelist()), f"the wheel lacks {sorted(set(SHIPPED) - set(whl.namelist()))}"
    return wheel


def _can_build_wheels() -> bool:
    """This environment's setuptools builds wheels: 70.1 or later, or 68 (pyproject.toml's minimum) and the
    `wheel` package."""
    try:
        version = tuple(int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return version >= (70, 1) or (version >= (68, 0) and importlib.util.find_spec("wheel") is not None)


@pytest.mark.slow
def test_a_wheel_runs_from_an_empty_folder(tmp_path):
    wheel = _wheel(tmp_path)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel])
    # numpy, simpy, matplotlib and pyyaml from this environment, behind the venv's own site-packages (a
    # path in a .pth file is appended to sys.path; the .pth files in it, this checkout's editable
    # install among them, are not read)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_test_deps.pth").write_text("".join(f"{p}\n" for p in sorted(here)))
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "GPUSIM_CONFIG_PATH", "GPUSIM_WORKLOAD_PATH", "VIRTUAL_ENV", "NUMBA_CACHE_DIR")}
    env["GPUSIM_CACHE_DIR"] = str(tmp_path / "cache")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")  # the engine's machine code: a first run's cold cache
    if os.environ.get("GPUSIM_WHEEL_COMPILE") != "1":
        env["NUMBA_DISABLE_JIT"] = "1"
    gpusim = venv / "bin" / "gpusim"

    where = _run([python, "-c", "import gpusim; print(gpusim.__file__)"], cwd=empty, env=env).stdout
    assert where.startswith(str(venv)), f"imported gpusim from {where}, not from the installed wheel"
    version = _run([gpusim, "--version"], cwd=empty, env=env).stdout
    assert version.strip() == f"gpusim {_version()}"
    run = _run([gpusim, "run", "saxpy", "--config", "a100", "--set", "n=4096"], cwd=empty, env=env).stdout
    assert "cycles" in run and "verified" in run
    listed = _run([gpusim, "list"], cwd=empty, env=env).stdout
    assert "saxpy" in listed and "pointer_chase" in listed and "gtx980" in listed and "two_streams" in listed
    info = _run([gpusim, "info", "--config", "gtx980"], cwd=empty, env=env).stdout
    assert info.startswith("gtx980: NVIDIA GeForce GTX 980") and str(venv) in info
    _run([gpusim, "program", "two_streams"], cwd=empty, env=env)
    if shutil.which(os.environ.get("CC", "cc").split()[0]):  # gpusim exec builds its CUDA runtime with it
        app = tmp_path / "vecadd"
        shutil.copy(REPO / "tests" / "exec" / "programs" / "bin" / "vecadd", app)
        done = _run([gpusim, "exec", "--", app, "300"], cwd=empty, env=env)
        assert done.stdout == "vecadd n=300: no error, 0 mismatches\n"
        assert "building the CUDA runtime shim (once)" in done.stderr and " vecadd " in done.stderr
        assert list((tmp_path / "cache" / "exec").glob("*/libcudart.so.13"))
    assert list(empty.iterdir()) == []


def _version() -> str:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
