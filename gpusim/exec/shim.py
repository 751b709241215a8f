"""gpusim's CUDA runtime library (`shim/cudart.c`), built on first use with the system C compiler.

The package ships the C source, not a binary: `shim_dir()` compiles it once into the user cache
(`$GPUSIM_CACHE_DIR`, ... : gpusim.isa.cuda.cache_dir) under `exec/<hash of the sources and compiler>/`,
saying so in one line, and finds it there afterwards. The compiler is `$CC`, else `cc`, `gcc` or `clang` on
PATH (nvcc itself needs one, so a machine that built the application has it); without one, `ExecError`
says so in one line."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from gpusim.errors import GpusimError
from gpusim.isa.cuda import cache_dir

SONAME = "libcudart.so.13"
SOURCES = ("cudart.c", "unsupported.inc", "cudart.map")
CFLAGS = ("-shared", "-fPIC", "-O2", "-fvisibility=hidden", f"-Wl,-soname,{SONAME}")
COMPILERS = ("cc", "gcc", "clang")


class ExecError(GpusimError):
    """`gpusim exec` cannot run the program as asked (no C compiler, not a program, ...): one line."""


def source_dir() -> Path:
    """The folder of the shipped C sources (inside the installed package)."""
    return Path(str(resources.files("gpusim.exec") / "shim"))


def include_dir() -> Path:
    """The folder of `gpusim_cuda_compat.h` (declarations CUDA 13 removed; docs/exec.md)."""
    return Path(str(resources.files("gpusim.exec") / "include"))


def compiler() -> str | None:
    """The C compiler: $CC (its first word) when set, else the first of cc, gcc, clang on PATH."""
    env = os.environ.get("CC", "").split()
    if env:
        return shutil.which(env[0])
    return next((found for name in COMPILERS if (found := shutil.which(name))), None)


def _key(cc: str) -> str:
    h = hashlib.sha256()
    for name in SOURCES:
        h.update((source_dir() / name).read_bytes())
    h.update(cc.encode())
    h.update(" ".join(CFLAGS).encode())
    return h.hexdigest()[:16]


def shim_dir(*, quiet: bool = False) -> Path:
    """The folder holding the built `libcudart.so.13`, building it first when this version of the sources
    has not been built with this compiler (one line on stderr says so)."""
    cc = compiler()
    if cc is None:
        raise ExecError("gpusim exec builds its CUDA runtime (libcudart.so.13) from C source and needs a C "
                        "compiler: none of $CC, " + ", ".join(COMPILERS) + " is on PATH (install the one nvcc "
                        "uses, e.g. gcc)")
    out = cache_dir() / "exec" / _key(cc)
    lib = out / SONAME
    if lib.is_file():
        return out
    if not quiet:
        print(f"gpusim: building the CUDA runtime shim (once) with {cc} -> {lib}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    src = source_dir()
    with tempfile.NamedTemporaryFile(dir=out, prefix=".build-", suffix=".so", delete=False) as tmp:
        tmp_path = Path(tmp.name)
    try:
        proc = subprocess.run([cc, *CFLAGS, f"-Wl,--version-script={src / 'cudart.map'}", "-o", str(tmp_path),
                               str(src / "cudart.c"), "-lpthread"], capture_output=True, text=True)
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])
            raise ExecError(f"building the CUDA runtime shim with {cc} failed: {first.strip()}")
        os.replace(tmp_path, lib)
    finally:
        tmp_path.unlink(missing_ok=True)
    return out
