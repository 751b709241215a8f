"""SASS, the machine code the GPU runs: read a cubin and its listing (nvdisasm/cuobjdump text), decode every
instruction with its operands, predicates, modifiers and control codes, into a SassProgram that the
functional executor and the timing model run (docs/isa.md, "SASS")."""

from gpusim.isa.sass.build import arch_of, sass_for, tool, write_checked_in
from gpusim.isa.sass.control import Control
from gpusim.isa.sass.cubin import read_cubin
from gpusim.isa.sass.load import read_sass, read_sass_file
from gpusim.isa.sass.program import SassInstruction, SassProgram

__all__ = ["Control", "SassInstruction", "SassProgram", "arch_of", "load_sass", "read_cubin", "read_sass",
           "read_sass_file", "sass_for", "tool", "write_checked_in"]


def load_sass(kernel, arch: int = 90, entry: str | None = None) -> SassProgram:
    """The SassProgram of `kernel` on sm_`arch`: a `.cu` source (its checked-in cubin and listing, the cache,
    or nvcc + nvdisasm), a `.cubin` (disassembled with nvdisasm, or read with the `.sass` listing beside it),
    or a `.sass` listing (with the `.cubin` of the same stem beside it, when there is one)."""
    from dataclasses import replace
    from pathlib import Path

    from gpusim.errors import AssemblyError
    from gpusim.isa.sass.build import dynamic_shared

    path = Path(kernel)
    suffix = path.suffix.lower()
    if suffix == ".cu":
        cubin, listing = sass_for(path, arch)
    elif suffix == ".cubin":
        cubin, listing = path, path.with_suffix(".sass")
        if not listing.is_file():
            nvdisasm = tool("nvdisasm")
            if nvdisasm is None:
                raise AssemblyError("nvdisasm is not available to disassemble the cubin (pip install 'gpusim[sass]'), "
                                    f"and no {listing.name} is beside it", file=str(path))
            import subprocess

            proc = subprocess.run([nvdisasm, "-c", "-hex", "-g", str(path)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise AssemblyError(f"nvdisasm failed: {proc.stderr.strip()[:200]}", file=str(path))
            prog = read_sass(proc.stdout, str(path), entry, cubin=path)
            return prog
    elif suffix == ".sass":
        listing, cubin = path, path.with_suffix(".cubin")
        if not cubin.is_file():
            cubin = None
    else:
        raise AssemblyError(f"not a SASS kernel file '{path.suffix}': expected .cu, .cubin or .sass", file=str(path))
    prog = read_sass_file(listing, entry, cubin=cubin)
    dyn = dynamic_shared(listing)
    if dyn:
        prog = replace(prog, shared_window=prog.shared_window + dyn)
    return prog
