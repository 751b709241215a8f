"""A SASS listing (+ the cubin it came from) -> SassProgram: every instruction checked against the opcode
table, its guard, label and registers resolved, its reconvergence point found; the cubin gives the
parameters, registers per thread and memory sizes, and its code bytes must be the listing's encodings."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gpusim.errors import AssemblyError
from gpusim.isa.program import Param
from gpusim.isa.ptx import demangle
from gpusim.isa.sass.cubin import CubinKernel
from gpusim.isa.sass.layout import dst_width, n_sources
from gpusim.isa.sass.listing import Listing, RawInstruction, SassOperand, parse_listing
from gpusim.isa.sass.opcodes import SASS_OPCODES
from gpusim.isa.sass.program import (
    SHARED_RESERVED,
    SassInstruction,
    SassProgram,
    flat_index,
    register_file,
    with_reconvergence,
)

PARAM_BASE = {80: 0x160, 86: 0x160, 89: 0x160, 90: 0x210}  # constant bank 0 offset of the parameters
_TARGET_RE = re.compile(r"\.target\s+sm_(\d+)")
_PARAM_TYPES = {4: "b32", 8: "b64", 2: "b16", 1: "b8"}


def _err(msg, file, ins: RawInstruction | None = None, col=0, token=None) -> AssemblyError:
    return AssemblyError(msg, file=file, line=ins.line if ins else 0, col=col, token=token)


def _regs(op: SassOperand, width: int, nregs: int) -> list[int]:
    base = flat_index(op, nregs)
    if base < 0:
        return []
    return list(range(base, base + (width if op.kind in ("R", "UR") else 1)))


def choose(listings: list[Listing], entry: str | None, file: str) -> Listing:
    if entry is None:
        if len(listings) != 1:
            names = ", ".join(demangle(f.name) for f in listings)
            raise AssemblyError(f"the listing holds {len(listings)} kernels ({names}); name one", file=file)
        return listings[0]
    for f in listings:
        if entry in (f.name, demangle(f.name)):
            return f
    raise AssemblyError(f"no kernel named '{entry}' (the listing holds "
                        f"{', '.join(demangle(f.name) for f in listings) or 'none'})", file=file)


def build_program(text: str, file: str = "<sass>", entry: str | None = None,
                  cubin: CubinKernel | None = None) -> SassProgram:
    lst = choose(parse_listing(text, file), entry if cubin is None else cubin.name, file)
    raws = lst.instructions
    arch = cubin.arch if cubin is not None else int((_TARGET_RE.search(text) or [0, 90])[1])
    # registers per thread: the cubin's count, else the highest register the code names
    used = 0
    for r in raws:
        for op in r.operands:
            if op.kind == "R" and op.index != 255:
                used = max(used, op.index + 4)
    regcount = cubin.registers if cubin is not None and cubin.registers else used
    nregs = max(regcount, used)  # the simulated file: wide operands may name registers past the count's last
    if cubin is not None:
        _check_encodings(raws, cubin, file)
    by_addr = {r.addr: k for k, r in enumerate(raws)}
    instrs = []
    for k, r in enumerate(raws):
        spec = SASS_OPCODES.get(r.opcode)
        if spec is None:
            raise _err(f"unsupported SASS instruction '{r.opcode}'", file, r, 0, r.text)
        bad = [m for m in r.mods if m not in spec.mods]
        if bad:
            raise _err(f"unsupported modifier .{bad[0]} of {r.opcode}", file, r, 0, r.text)
        guard, gneg, gfalse = -1, False, False
        if r.guard is not None:
            if r.guard.index == 7:  # @PT / @!PT
                gfalse = r.guard.inv
            else:
                guard, gneg = flat_index(r.guard, nregs), r.guard.inv
        target = -1
        for op in r.operands:
            if op.kind == "label" or (r.opcode in ("BRA", "CALL") and op.kind == "imm"):
                addr = lst.labels.get(op.name) if op.kind == "label" else op.value
                if op.kind == "label" and addr is None and op.name == lst.name:
                    addr = 0
                if addr is None or addr not in by_addr:
                    raise _err(f"branch target '{op.name or hex(op.value)}' is no instruction of {lst.name}", file, r,
                               op.col, op.name or hex(op.value))
                if r.opcode != "RET":
                    target = by_addr[addr]
        nsrc = n_sources(r.opcode, r.mods, len(r.operands))
        if nsrc < 0 or nsrc > len(r.operands):
            raise _err(f"{r.opcode}: too few operands", file, r, 0, r.text)
        dsts, srcs = r.operands[:len(r.operands) - nsrc], r.operands[len(r.operands) - nsrc:]
        writes = [x for i, d in enumerate(dsts) for x in _regs(d, dst_width(r.opcode, r.mods) if i == len(dsts) - 1
                                                                  else 1, nregs)]
        reads = [x for s in srcs for x in _regs(s, s.wide, nregs)]
        reads += [flat_index(SassOperand("R", s.index), nregs) + j for s in srcs if s.kind == "mem" and s.index >= 0
                  and s.index != 255 for j in range(1, 1)]
        if guard >= 0:
            reads.append(guard)
        instrs.append(SassInstruction(
            pc=k, addr=r.addr, opcode=r.opcode, mods=r.mods, operands=r.operands, unit=spec.unit, guard=guard,
            guard_negate=gneg, guard_false=gfalse, target=target, control=r.control,
            reads=tuple(dict.fromkeys(reads)), writes=tuple(dict.fromkeys(writes)), line=r.line, text=r.text,
            loc=r.loc))
    instrs = with_reconvergence(tuple(instrs))
    if cubin is not None:
        names = [n for _, n in cubin.ptx_params]
        types = [t for t, _ in cubin.ptx_params]
        params = tuple(Param(names[i] if i < len(names) and len(names) == len(cubin.params) else f"param_{i}",
                             _param_type(types[i] if len(types) == len(cubin.params) else "", p.size), p.offset)
                       for i, p in enumerate(cubin.params))
        window, frame, base = cubin.shared_bytes, cubin.frame_bytes, cubin.param_base or PARAM_BASE.get(arch, 0x210)
    else:
        params, window, frame, base = (), 0, 0, PARAM_BASE.get(arch, 0x210)
    reserved = SHARED_RESERVED.get(arch, 0) if window else 0
    labels = tuple(sorted(((n, by_addr[a]) for n, a in lst.labels.items()
                           if a in by_addr and not n.startswith(".text")), key=lambda x: x[1]))
    return SassProgram(name=demangle(lst.name), params=params, registers=register_file(nregs), instructions=instrs,
                       labels=labels, arch=arch, nregs=nregs, param_base=base, shared_window=window,
                       shared_reserved=reserved, frame_bytes=frame, symbol=lst.name, maxnreg=regcount,
                       live_registers=regcount, source=file)


def _param_type(ptx_type: str, size: int) -> str:
    if ptx_type in ("f32", "f64", "u32", "s32", "u64", "s64", "u16", "s16", "u8", "s8", "b32", "b64"):
        return ptx_type
    return _PARAM_TYPES.get(size, "b32")


def _check_encodings(raws: list[RawInstruction], cubin: CubinKernel, file: str) -> None:
    """The listing must be this cubin's code: each instruction's 128-bit word equals the section's bytes."""
    code = cubin.code
    for r in raws:
        if r.encoding is None:
            continue
        word = int.from_bytes(code[r.addr:r.addr + 16], "little") if r.addr + 16 <= len(code) else None
        if word != r.encoding:
            raise _err(f"the listing's encoding at {r.addr:#06x} is not the cubin's ({cubin.name}): listing and cubin "
                       "come from different builds", file, r, 0, r.text)


def read_sass(text: str, file: str = "<sass>", entry: str | None = None, cubin=None) -> SassProgram:
    """A SassProgram from listing text (nvdisasm -c -hex -g or cuobjdump -sass), with the cubin's metadata when
    `cubin` (a CubinKernel or a path) is given."""
    from gpusim.isa.sass.cubin import read_cubin

    if cubin is not None and not isinstance(cubin, CubinKernel):
        kernels = read_cubin(cubin)
        if entry is None and len(kernels) == 1:
            cubin = next(iter(kernels.values()))
        else:
            pick = next((k for k in kernels.values() if entry in (k.name, demangle(k.name))), None)
            if pick is None:
                raise AssemblyError(f"no kernel named '{entry}' in the cubin ({', '.join(kernels)})", file=str(cubin))
            cubin = pick
    return build_program(text, file, entry, cubin)


def read_sass_file(path: str | Path, entry: str | None = None, cubin=None) -> SassProgram:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise AssemblyError(f"cannot read SASS listing: {exc.strerror}", file=str(path)) from None
    return read_sass(text, str(path), entry, cubin)


__all__ = ["read_sass", "read_sass_file", "replace"]
