"""A kernel from a file of any kind gpusim reads: `.sasm` (gpusim's assembly), `.ptx` (nvcc's output) or
`.cu` (CUDA C, through gpusim.isa.cuda), or PTX given as text."""

from __future__ import annotations

from pathlib import Path

from gpusim.errors import AssemblyError
from gpusim.isa.assembler import assemble_file
from gpusim.isa.cuda import ptx_for
from gpusim.isa.program import Program
from gpusim.isa.ptx import read_ptx, read_ptx_file

KERNEL_SUFFIXES = (".sasm", ".ptx", ".cu")


def load_kernel(kernel: str | Path, entry: str | None = None, *, local_threads: int | None = None) -> Program:
    """The Program of `kernel`: a .sasm, .ptx or .cu path, or PTX text (anything holding `.entry`).
    `entry` picks a kernel of a PTX/CUDA module (mangled or demangled name); a .sasm file holds one.
    `local_threads`: the block size PTX `.local` frames are laid out for (gpusim.isa.read_ptx)."""
    if isinstance(kernel, str) and ".entry" in kernel and "\n" in kernel:
        return read_ptx(kernel, "<ptx>", entry, local_threads=local_threads)
    path = Path(kernel)
    suffix = path.suffix.lower()
    if suffix not in KERNEL_SUFFIXES:
        raise AssemblyError(f"unknown kind of kernel file '{path.suffix}'; expected one of "
                            + ", ".join(KERNEL_SUFFIXES), file=str(path), line=0, col=0)
    if suffix == ".sasm":
        prog = assemble_file(path)
        if entry is not None and entry != prog.name:
            raise AssemblyError(f"no kernel named '{entry}': the file holds {prog.name}", file=str(path), line=0,
                                col=0)
        return prog
    if suffix == ".ptx":
        return read_ptx_file(path, entry, local_threads=local_threads)
    if not path.is_file():
        raise AssemblyError("cannot read CUDA source: no such file", file=str(path), line=0, col=0)
    return read_ptx_file(ptx_for(path), entry, source_dir=path.resolve().parent, local_threads=local_threads)
