"""What `gpusim exec` checks of a program before running it: an ELF executable that uses the CUDA runtime
as a shared library (`nvcc -cudart shared`). Read from the file's own headers (no binutils needed):
its section names (`.nv_fatbin`: kernels nvcc embedded), its dynamic section's NEEDED libraries and
whether its symbol tables name `__cudaRegisterFatBinary` (a runtime linked in statically)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
SHT_SYMTAB, SHT_DYNAMIC, SHT_DYNSYM = 2, 6, 11
DT_NEEDED = 1


@dataclass(frozen=True, slots=True)
class Binary:
    path: str
    needed: tuple[str, ...]
    sections: tuple[str, ...]
    defines_cudart: bool  # its own symbol tables define the runtime's registration entry points

    @property
    def has_kernels(self) -> bool:
        return ".nv_fatbin" in self.sections or "__nv_relfatbin" in self.sections

    @property
    def shared_cudart(self) -> str | None:
        return next((n for n in self.needed if n.startswith("libcudart.so")), None)


class NotAProgram(ValueError):
    """The file is not an executable `gpusim exec` can run (said in one line)."""


def read_binary(path: str | Path) -> Binary:
    """The parts of an ELF file `gpusim exec` looks at. NotAProgram when it is no 64-bit little-endian ELF."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise NotAProgram(f"{path}: cannot read: {exc.strerror or exc}") from None
    if data[:4] != ELF_MAGIC:
        first = data[:2]
        what = "a script" if first == b"#!" else "not an ELF executable"
        raise NotAProgram(f"{path}: {what}; gpusim exec runs programs built by nvcc")
    if data[4] != 2 or data[5] != 1:
        raise NotAProgram(f"{path}: not a 64-bit little-endian ELF file")
    try:
        return _parse(str(path), data)
    except struct.error:
        raise NotAProgram(f"{path}: a truncated or malformed ELF file") from None


def _parse(path: str, data: bytes) -> Binary:
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((name, typ, off, size, link, entsize))
    if not sections:
        return Binary(path, (), (), False)
    strtab_off = sections[shstrndx][2]

    def cstr(off: int) -> str:
        end = data.index(b"\0", off)
        return data[off:end].decode(errors="replace")

    names = tuple(cstr(strtab_off + s[0]) for s in sections)
    needed, defines = [], False
    for _name, typ, off, size, link, entsize in sections:
        if typ == SHT_DYNAMIC:
            strs = sections[link][2]
            for k in range(0, size, 16):
                tag, val = struct.unpack_from("<qQ", data, off + k)
                if tag == DT_NEEDED:
                    needed.append(cstr(strs + val))
        if typ in (SHT_SYMTAB, SHT_DYNSYM) and entsize:
            strs = sections[link][2]
            for k in range(0, size, entsize):
                st_name, _info, _other, shndx = struct.unpack_from("<IBBH", data, off + k)
                if shndx and st_name and cstr(strs + st_name) == "__cudaRegisterFatBinary":
                    defines = True
    return Binary(path, tuple(needed), names, defines)
