"""CUDA C sources -> PTX with nvcc (`nvcc -ptx -arch=sm_80 -lineinfo`), cached by content hash.

A `.cu` kernel is read from, in order:
1. the `.ptx` beside it (same stem) when that file's first line records the sha256 of this very source:
   the PTX checked in with the source, so that nothing needs nvcc;
2. the user cache (`$GPUSIM_CACHE_DIR`, else `$XDG_CACHE_HOME/gpusim`, else `~/.cache/gpusim`), under
   `ptx/<sha256 of source and command>.ptx`;
3. nvcc, when it is on PATH (the result goes to the cache);
and is otherwise the one-line error that says which of these is missing.

`compile_cu` writes the PTX as nvcc prints it, with one change: `.file` paths are made relative to the
source's folder (nvcc writes them absolute), so that a checked-in PTX does not carry the path of the
machine it was made on. `write_checked_in_ptx` writes the `.ptx` beside a source with the header line
that step 1 reads."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from gpusim.errors import AssemblyError

NVCC_FLAGS = ("-ptx", "-arch=sm_80", "-lineinfo")
HEADER_PREFIX = "// gpusim: nvcc "
_HEADER_RE = re.compile(r"^// gpusim: nvcc .*\(source sha256 ([0-9a-f]{64})\)?\s*$")


def nvcc_command(source: str | Path) -> list[str]:
    """The nvcc command line that compiles `source` (a file name, run in its folder) to PTX on stdout."""
    return ["nvcc", *NVCC_FLAGS, Path(source).name, "-o", "-"]


def source_hash(source: str | Path) -> str:
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()


def cache_dir() -> Path:
    env = os.environ.get("GPUSIM_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gpusim"


def header_line(source: str | Path) -> str:
    return f"{HEADER_PREFIX}{' '.join(nvcc_command(source)[1:-2])} (source sha256 {source_hash(source)})"


def compile_cu(source: str | Path) -> str:
    """nvcc's PTX for `source` (nvcc must be on PATH), `.file` paths relative to the source's folder."""
    source = Path(source)
    if shutil.which("nvcc") is None:
        raise AssemblyError("nvcc is not on PATH: cannot compile CUDA C", file=str(source), line=0, col=0)
    # nvcc names a file's internal symbols after a hash of its absolute path, so the source is compiled
    # from one fixed folder: the same source gives the same PTX from any checkout. (A kernel that
    # #includes a header of its own folder is compiled where it is.)
    text = source.read_text()
    where = source.resolve().parent
    if not re.search(r'^\s*#\s*include\s*"', text, flags=re.M):
        where = Path(tempfile.gettempdir()) / "gpusim-nvcc"
        where.mkdir(exist_ok=True)
        (where / source.name).write_text(text)
    try:
        proc = subprocess.run(nvcc_command(source), cwd=where, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AssemblyError(f"nvcc failed: {exc}", file=str(source), line=0, col=0) from None
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:300])
        raise AssemblyError(f"nvcc failed: {first.strip()}", file=str(source), line=0, col=0)
    folder = str(where) + os.sep
    return re.sub(r'^(\s*\.file\s+\d+\s+")' + re.escape(folder), r"\1", proc.stdout, flags=re.M)


def checked_in_ptx(source: str | Path) -> Path:
    return Path(source).with_suffix(".ptx")


def write_checked_in_ptx(source: str | Path) -> Path:
    """Compile `source` and write its PTX beside it, headed by the command and the source's hash."""
    out = checked_in_ptx(source)
    out.write_text(header_line(source) + "\n" + compile_cu(source))
    return out


def is_current(source: str | Path, ptx: str | Path) -> bool:
    """Was `ptx` (a checked-in PTX) compiled from `source` as it is now?"""
    try:
        with open(ptx, encoding="utf-8", errors="replace") as f:
            m = _HEADER_RE.match(f.readline())
    except OSError:
        return False
    return bool(m) and m.group(1) == source_hash(source)


def ptx_for(source: str | Path) -> Path:
    """The PTX file to read for a CUDA source (see the module's docstring for the order)."""
    source = Path(source)
    try:
        digest = hashlib.sha256(source.read_bytes() + " ".join(NVCC_FLAGS).encode()).hexdigest()
    except OSError as exc:
        raise AssemblyError(f"cannot read CUDA source: {exc.strerror}", file=str(source), line=0, col=0) from None
    beside = checked_in_ptx(source)
    if beside.is_file() and is_current(source, beside):
        return beside
    cached = cache_dir() / "ptx" / f"{digest}.ptx"
    if cached.is_file():
        return cached
    if shutil.which("nvcc") is None:
        why = (f"{beside.name} beside it was made from another version of the source" if beside.is_file()
               else f"no {beside.name} is checked in beside it")
        raise AssemblyError(f"nvcc is not on PATH and {why}; install the CUDA toolkit, or check in the PTX "
                            f"(`{' '.join(nvcc_command(source)[:-2])} -o {beside.name}`)", file=str(source),
                            line=0, col=0)
    text = compile_cu(source)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(cached)
    return cached
