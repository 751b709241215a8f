"""The fat binary nvcc embeds in an application: its cubins (SASS for one architecture each) and PTX.

`__cudaRegisterFatBinary` receives a wrapper (magic 0x466243B1) pointing at a fat binary: a header (magic
0xBA55ED50, version u16, header size u16, payload size u64) and entries, each a header and its payload:

    offset  0  u16 kind (1 PTX, 2 ELF cubin)   2 u16 version   4 u32 header size   8 u64 payload size
           28  u32 architecture (80 for sm_80 / compute_80)    40 u64 flags   56 u64 uncompressed size

A payload may be compressed (flags 0x2000: LZ4, CUDA 11-12; 0x8000: Zstandard, CUDA 12.4 on, which nvcc 13
does to PTX by default); gpusim decompresses it with the system's libzstd / liblz4 (ctypes), else with the
`zstandard` or `lz4` module. These layouts are facts read from nvcc's output (tests/exec/test_fatbin.py
builds a binary and reads it back)."""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
from dataclasses import dataclass

FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1
PTX, ELF = 1, 2
FLAG_LZ4, FLAG_ZSTD = 0x2000, 0x8000
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class FatbinError(ValueError):
    """A fat binary gpusim cannot read (said in one line)."""


@dataclass(frozen=True, slots=True)
class Entry:
    kind: int  # PTX or ELF
    arch: int  # 80: sm_80 (ELF) or compute_80 (PTX)
    data: bytes  # decompressed

    @property
    def text(self) -> str:
        """A PTX entry's text (up to its terminating NUL)."""
        return self.data.split(b"\0", 1)[0].decode("utf-8", errors="replace")


def read_fatbin(blob: bytes) -> list[Entry]:
    """The entries of a fat binary (one, or several laid end to end, as a `.nv_fatbin` section holds)."""
    entries: list[Entry] = []
    base = 0
    while base + 16 <= len(blob):
        magic, _version, hsize, fsize = struct.unpack_from("<IHHQ", blob, base)
        if magic != FATBIN_MAGIC:
            if not entries:
                raise FatbinError(f"no fat binary at offset {base} (magic {magic:#x}, expected {FATBIN_MAGIC:#x})")
            break
        end = base + hsize + fsize
        if end > len(blob):
            raise FatbinError(f"a fat binary of {hsize + fsize} bytes at offset {base} is cut short at {len(blob)}")
        off = base + hsize
        while off + 16 <= end:
            kind, _ver, ehs, psz = struct.unpack_from("<HHIQ", blob, off)
            if ehs < 64 or off + ehs + psz > end:
                raise FatbinError(f"an entry at offset {off} of the fat binary has a bad header")
            arch = struct.unpack_from("<I", blob, off + 28)[0]
            flags = struct.unpack_from("<Q", blob, off + 40)[0]
            full = struct.unpack_from("<Q", blob, off + 56)[0]
            payload = blob[off + ehs: off + ehs + psz]
            if kind in (PTX, ELF):
                entries.append(Entry(kind, arch, _decompress(payload, flags, full)))
            off += ehs + psz
        base = -(-end // 8) * 8
    return entries


def _decompress(payload: bytes, flags: int, full: int) -> bytes:
    if payload[:4] == ZSTD_MAGIC or flags & FLAG_ZSTD:
        return zstd_decompress(payload, full)
    if flags & FLAG_LZ4:
        return lz4_decompress(payload, full)
    return payload


def _lib(name: str):
    path = ctypes.util.find_library(name)
    for cand in ([path] if path else []) + [f"lib{name}.so.1", f"lib{name}.so"]:
        try:
            return ctypes.CDLL(cand)
        except OSError:
            continue
    return None


def zstd_decompress(data: bytes, full: int) -> bytes:
    """A Zstandard frame, decompressed: libzstd (ctypes), else the `zstandard` module."""
    lib = _lib("zstd")
    if lib is not None:
        lib.ZSTD_decompress.restype = ctypes.c_size_t
        lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        # the frame may be followed by padding
        lib.ZSTD_findFrameCompressedSize.restype = ctypes.c_size_t
        lib.ZSTD_findFrameCompressedSize.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        end = lib.ZSTD_findFrameCompressedSize(data, len(data))
        if lib.ZSTD_isError(end):
            raise FatbinError("a compressed entry of the fat binary is not a Zstandard frame")
        out = ctypes.create_string_buffer(max(full, 1))
        n = lib.ZSTD_decompress(out, max(full, 1), data, end)
        if lib.ZSTD_isError(n):
            raise FatbinError("a Zstandard-compressed entry of the fat binary does not decompress")
        return out.raw[:n]
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        raise FatbinError("the fat binary's PTX is Zstandard-compressed and neither libzstd nor the zstandard "
                          "module is installed (apt install libzstd1, or pip install zstandard)") from None
    return zstandard.ZstdDecompressor().decompress(data, max_output_size=max(full, 1))


def lz4_decompress(data: bytes, full: int) -> bytes:
    """An LZ4 block (CUDA 11-12 fat binaries), decompressed: liblz4 (ctypes), else the `lz4` module."""
    lib = _lib("lz4")
    if lib is not None:
        lib.LZ4_decompress_safe.restype = ctypes.c_int
        lib.LZ4_decompress_safe.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        out = ctypes.create_string_buffer(max(full, 1))
        n = lib.LZ4_decompress_safe(data, out, len(data), max(full, 1))
        if n < 0:
            raise FatbinError("an LZ4-compressed entry of the fat binary does not decompress")
        return out.raw[:n]
    try:
        import lz4.block  # type: ignore[import-not-found]
    except ImportError:
        raise FatbinError("the fat binary is LZ4-compressed and neither liblz4 nor the lz4 module is installed") \
            from None
    return lz4.block.decompress(data, uncompressed_size=full)
