"""CUDA C -> cubin -> SASS listing, and where gpusim finds them.

A `.cu` kernel runs as SASS for an architecture (sm_80 for the A100, sm_90 for the H200: the config's
compute capability) from, in order:
1. the cubin and listing checked in beside it, `<stem>.sm_XX.cubin` and `<stem>.sm_XX.sass`, when the
   listing's first line records the sha256 of this very source (so that nothing needs nvcc or nvdisasm);
2. the user cache (`$GPUSIM_CACHE_DIR`, ...: gpusim.isa.cuda.cache_dir) under `sass/<hash>.sm_XX.*`;
3. nvcc (`nvcc -cubin -arch=sm_XX -O3 -lineinfo`) and nvdisasm (`nvdisasm -c -hex -g`), found on PATH or
   in the Python environment (the `gpusim[sass]` extra installs the nvidia-cuda-nvdisasm and
   nvidia-cuda-cuobjdump wheels there);
and is otherwise the one-line error that says which of these is missing.

A source whose static shared memory passes ptxas's 48 KB limit for static allocations (gemm_mma_cu) is
compiled from its PTX with its `.shared` arrays made one dynamic (`.extern .shared`) array — the same
kernel, its tiles at the same offsets — and its listing's header says so."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from gpusim.errors import AssemblyError
from gpusim.isa.cuda import cache_dir, source_hash

NVCC_FLAGS = ("-cubin", "-O3", "-lineinfo")
DISASM_FLAGS = ("-c", "-hex", "-g")
HEADER_PREFIX = "// gpusim: sass "
_HEADER_RE = re.compile(r"^// gpusim: sass .*\(source sha256 ([0-9a-f]{64})\)\s*$")
ARCHS = (80, 90)


def arch_of(cfg) -> int:
    """The SASS architecture of a config: its compute capability "9.0" -> 90."""
    cc = str(getattr(cfg.chip, "compute_capability", "") or "")
    m = re.fullmatch(r"(\d+)\.(\d+)", cc)
    if not m:
        raise AssemblyError(f"config {cfg.name} has no compute capability to pick SASS for (chip.compute_capability)",
                            file=str(cfg.source or cfg.name))
    return int(m.group(1)) * 10 + int(m.group(2))


def tool(name: str) -> str | None:
    """A CUDA binary utility on PATH, or in this Python environment's nvidia wheels (gpusim[sass])."""
    found = shutil.which(name)
    if found:
        return found
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], str(Path(sys.prefix) / "bin")}
    for root in roots:
        found = sorted(Path(root).glob(f"nvidia/*/bin/{name}")) + sorted(Path(root).glob(f"nvidia/cuda_*/bin/{name}"))
        for cand in found:
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return None


def checked_in(source: str | Path, arch: int) -> tuple[Path, Path]:
    source = Path(source)
    stem = source.with_suffix("")
    return Path(f"{stem}.sm_{arch}.cubin"), Path(f"{stem}.sm_{arch}.sass")


def header_line(source: str | Path, arch: int, how: str) -> str:
    return f"{HEADER_PREFIX}{how} (source sha256 {source_hash(source)})"


def is_current(source: str | Path, listing: str | Path) -> bool:
    try:
        with open(listing, encoding="utf-8", errors="replace") as f:
            m = _HEADER_RE.match(f.readline())
    except OSError:
        return False
    return bool(m) and m.group(1) == source_hash(source)


def _run(cmd: list[str], cwd: Path, source: Path, what: str) -> str:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AssemblyError(f"{what} failed: {exc}", file=str(source)) from None
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln.lower()), proc.stderr.strip()[:300])
        raise AssemblyError(f"{what} failed: {first.strip()}", file=str(source))
    return proc.stdout


def _dynamic_shared_ptx(ptx: str) -> tuple[str, int]:
    """The module with its static `.shared` arrays laid out in one `.extern .shared` array, each at the offset
    ptxas would give it: (new PTX, dynamic bytes)."""
    decl = re.compile(r"^(\s*)\.shared\s+\.align\s+(\d+)\s+\.b8\s+([\w$]+)\[(\d+)\];\s*$", re.M)
    offset, names = 0, {}
    for m in decl.finditer(ptx):
        align, size = int(m.group(2)), int(m.group(4))
        offset = -(-offset // align) * align
        names[m.group(3)] = offset
        offset += size
    text = decl.sub("", ptx)
    text = re.sub(r"(\.visible\s+\.entry)", ".extern .shared .align 128 .b8 gpusim_dynamic_smem[];\n\\1", text, count=1)
    for name, off in names.items():
        text = re.sub(rf"\b{re.escape(name)}\b", f"gpusim_dynamic_smem+{off}" if off else "gpusim_dynamic_smem", text)
    return text, offset


def compile_sass(source: str | Path, arch: int, out_dir: Path) -> tuple[Path, Path]:
    """nvcc's cubin for `source` on sm_`arch` and nvdisasm's listing of it (headed by the recipe and the
    source's hash), written to `out_dir` as <stem>.sm_XX.cubin / .sass."""
    source = Path(source)
    nvcc, nvdisasm = tool("nvcc"), tool("nvdisasm")
    if nvcc is None:
        raise AssemblyError("nvcc is not on PATH: cannot compile CUDA C to SASS", file=str(source))
    if nvdisasm is None:
        raise AssemblyError("nvdisasm is not on PATH nor in this environment: pip install 'gpusim[sass]'",
                            file=str(source))
    out_dir.mkdir(parents=True, exist_ok=True)
    cubin, listing = checked_in(out_dir / source.name, arch)
    text = source.read_text()
    # nvcc records the folder it compiles in (the line tables): one fixed folder makes the same cubin anywhere
    where = Path(tempfile.gettempdir()) / "gpusim-sass" / f"sm_{arch}"
    where.mkdir(parents=True, exist_ok=True)
    if True:
        local = where / source.name
        local.write_text(text)
        os.utime(local, (0, 0))  # (and the source's modification time: a fixed one)
        flags = [*NVCC_FLAGS, f"-arch=sm_{arch}"]
        how = f"nvcc {' '.join(flags)}; nvdisasm {' '.join(DISASM_FLAGS)}"
        try:
            _run([nvcc, *flags, source.name, "-o", cubin.name], where, source, "nvcc")
        except AssemblyError as exc:
            if "too much shared data" not in str(exc):
                raise
            ptx = _run([nvcc, "-ptx", f"-arch=sm_{arch}", "-lineinfo", source.name, "-o", "-"], where, source, "nvcc")
            ptx, dyn = _dynamic_shared_ptx(ptx)
            (where / "k.ptx").write_text(ptx)
            _run([nvcc, *flags, "k.ptx", "-o", cubin.name], where, source, "ptxas")
            how += f"; static shared arrays as one dynamic array of {dyn} bytes (dynamic shared {dyn})"
        body = _run([nvdisasm, *DISASM_FLAGS, cubin.name], where, source, "nvdisasm")
        body = body.replace(str(where) + os.sep, "")
        shutil.copyfile(where / cubin.name, cubin)
    listing.write_text(header_line(source, arch, how) + "\n" + body)
    return cubin, listing


def dynamic_shared(listing: str | Path) -> int:
    """The dynamic shared memory a listing's recipe gives its kernel (0: none)."""
    try:
        with open(listing, encoding="utf-8", errors="replace") as f:
            m = re.search(r"\(dynamic shared (\d+)\)", f.readline())
    except OSError:
        return 0
    return int(m.group(1)) if m else 0


def sass_for(source: str | Path, arch: int) -> tuple[Path, Path]:
    """The (cubin, listing) to read for a CUDA source on sm_`arch` (see the module's docstring for the order)."""
    source = Path(source)
    try:
        digest = hashlib.sha256(source.read_bytes() + " ".join(NVCC_FLAGS).encode()).hexdigest()
    except OSError as exc:
        raise AssemblyError(f"cannot read CUDA source: {exc.strerror}", file=str(source)) from None
    cubin, listing = checked_in(source, arch)
    if cubin.is_file() and listing.is_file() and is_current(source, listing):
        return cubin, listing
    cached = cache_dir() / "sass" / digest
    c_cubin, c_listing = checked_in(cached / source.name, arch)
    if c_cubin.is_file() and c_listing.is_file():
        return c_cubin, c_listing
    if tool("nvcc") is None or tool("nvdisasm") is None:
        why = (f"{listing.name} beside it was made from another version of the source" if listing.is_file()
               else f"no {cubin.name} and {listing.name} are checked in beside it")
        missing = "nvcc" if tool("nvcc") is None else "nvdisasm"
        raise AssemblyError(f"{missing} is not available and {why}; install the CUDA toolkit and gpusim[sass], or "
                            "check them in (gpusim.isa.sass.build.write_checked_in)", file=str(source))
    return compile_sass(source, arch, cached)


def write_checked_in(source: str | Path, arch: int) -> tuple[Path, Path]:
    """Compile `source` for sm_`arch` and write its cubin and listing beside it."""
    source = Path(source)
    return compile_sass(source, arch, source.resolve().parent)
