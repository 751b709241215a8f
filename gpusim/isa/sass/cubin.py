"""What a cubin (an NVIDIA ELF) says about a kernel beyond its instructions, read with the standard library:
the architecture (e_flags), the code bytes (`.text.NAME`), the kernel parameters' offsets and sizes in the
constant bank (`.nv.info.NAME`: EIATTR_KPARAM_INFO, EIATTR_PARAM_CBANK), registers per thread
(`.nv.info`: EIATTR_REGCOUNT), the local-memory frame (EIATTR_FRAME_SIZE), static shared memory
(`.nv.shared.NAME`'s size) and, when compiled with -lineinfo, the PTX it came from (`.nv_debug_ptx_txt`),
whose `.param` lines give the parameters' types and names.

The attribute records (`.nv.info*`) are a sequence of (format byte, attribute byte, 16-bit value or size)
headers; a format-4 record carries that many bytes of data. Attribute numbers (facts, from the public
CuAssembler notes and `cuobjdump -elf`): 0x0a PARAM_CBANK, 0x11 FRAME_SIZE, 0x17 KPARAM_INFO, 0x2f REGCOUNT."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from gpusim.errors import AssemblyError

EIATTR_PARAM_CBANK, EIATTR_FRAME_SIZE, EIATTR_KPARAM_INFO, EIATTR_REGCOUNT = 0x0A, 0x11, 0x17, 0x2F
ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190


@dataclass(frozen=True, slots=True)
class CubinParam:
    ordinal: int
    offset: int  # within the parameter block
    size: int


@dataclass(frozen=True, slots=True)
class CubinKernel:
    name: str
    arch: int  # 80, 90, ...
    code: bytes
    registers: int
    frame_bytes: int
    shared_bytes: int  # the .nv.shared section's size (on sm_90 its first 1 KB is the reserved area)
    param_base: int  # byte offset of the parameters in constant bank 0
    params: tuple[CubinParam, ...]
    ptx_params: tuple[tuple[str, str], ...]  # (type, name) from the embedded PTX, in order; () if none


def _bad(path: str, msg: str) -> AssemblyError:
    return AssemblyError(f"not a readable cubin: {msg}", file=path, line=0, col=0)


def _records(data: bytes):
    """(attribute, value or data bytes) of an .nv.info section."""
    i = 0
    while i + 4 <= len(data):
        fmt, attr, val = data[i], data[i + 1], struct.unpack_from("<H", data, i + 2)[0]
        i += 4
        if fmt == 4:
            yield attr, data[i:i + val]
            i += val
        else:
            yield attr, val


def _ptx_params(text: str, name: str) -> tuple[tuple[str, str], ...]:
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", text, flags=re.S)
    if not m:
        return ()
    return tuple(re.findall(r"\.param\s+\.(\w+)\s+(?:\.ptr[^\n,]*?\s+)?([\w$]+)", m.group(1)))


def read_cubin(path: str | Path) -> dict[str, CubinKernel]:
    """Every kernel of a cubin by (mangled) name."""
    path = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise AssemblyError(f"cannot read cubin: {exc.strerror}", file=path, line=0, col=0) from None
    if len(data) < 64 or data[:4] != ELF_MAGIC or data[4] != 2:
        raise _bad(path, "no 64-bit ELF header")
    try:
        (e_type, e_machine, _v, _entry, _phoff, shoff, flags, _eh, _phes, _phn, shes, shn,
         shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        if e_machine != EM_CUDA:
            raise _bad(path, f"machine {e_machine} is not CUDA ({EM_CUDA})")
        secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shes) for k in range(shn)]
        strtab = secs[shstrndx]

        def sname(off):
            b = data[strtab[4] + off:]
            return b[:b.index(0)].decode()

        sections = {sname(s[0]): s for s in secs}

        def body(s):
            return data[s[4]:s[4] + s[5]] if s[1] != 8 else b""  # (NOBITS has no bytes)

        symtab = next((s for s in secs if s[1] == 2), None)
        syms = []
        if symtab is not None:
            stn = secs[symtab[6]]
            for k in range(symtab[5] // 24):
                st_name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab[4] + 24 * k)
                b = data[stn[4] + st_name:]
                syms.append((b[:b.index(0)].decode(), shndx))
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        raise _bad(path, "truncated or malformed sections") from None
    arch = (flags >> 8) & 0xFF
    regs: dict[str, int] = {}
    frames: dict[str, int] = {}
    info = sections.get(".nv.info")
    if info is not None:
        for attr, val in _records(body(info)):
            if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and isinstance(val, bytes) and len(val) >= 8:
                sym, n = struct.unpack_from("<II", val)
                if sym < len(syms):
                    (regs if attr == EIATTR_REGCOUNT else frames)[syms[sym][0]] = n
    ptx = ""
    dbg = sections.get(".nv_debug_ptx_txt")
    if dbg is not None:
        ptx = body(dbg).replace(b"\x00", b"\n").decode("utf-8", "replace")
    out = {}
    for sec_name, s in sections.items():
        if not sec_name.startswith(".text."):
            continue
        name = sec_name[len(".text."):]
        params, base = [], 0
        nvi = sections.get(".nv.info." + name)
        if nvi is not None:
            for attr, val in _records(body(nvi)):
                if attr == EIATTR_KPARAM_INFO and isinstance(val, bytes) and len(val) >= 12:
                    _index, ordinal, offset, bits = struct.unpack_from("<IHHI", val)
                    params.append(CubinParam(ordinal, offset, (bits >> 18) & 0x3FFF))
                elif attr == EIATTR_PARAM_CBANK and isinstance(val, bytes) and len(val) >= 8:
                    base = struct.unpack_from("<IHH", val)[1]
        shared = sections.get(".nv.shared." + name)
        out[name] = CubinKernel(name, arch, body(s), regs.get(name, 0), frames.get(name, 0),
                                shared[5] if shared is not None else 0, base,
                                tuple(sorted(params, key=lambda p: p.ordinal)), _ptx_params(ptx, name))
    if not out:
        raise _bad(path, "no .text section (no kernel)")
    return out
