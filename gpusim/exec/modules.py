"""The kernels and device variables an application registers at start-up, and the PTX gpusim runs them from.

nvcc's generated code registers each fat binary (`__cudaRegisterFatBinary`), then every kernel's host stub
(`__cudaRegisterFunction`: the stub's address and the kernel's mangled name) and every `__device__` /
`__constant__` / `__managed__` variable (`__cudaRegisterVar`: the host shadow's address, the name, the
size). gpusim keeps the PTX of the fat binary that fits the config's architecture best (the highest
`compute_XX` not above it) and places each variable in device memory, its initial bytes from the PTX.

PTX that names a module-scope variable is rewritten before gpusim's PTX reader sees it: the name becomes
the variable's device address, `ld.const` becomes `ld.global` and `cvta.const` becomes `cvta.global`
(constant memory is timed as global memory under `gpusim exec`: docs/exec.md)."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

import numpy as np

from gpusim.exec.fatbin import ELF, PTX, Entry
from gpusim.isa.types import TYPES

_IDENT = r"[A-Za-z_$%][\w$]*"
_VAR_RE = re.compile(r"^[ \t]*((?:\.(?:visible|extern|weak|common)\s+)*)\.(global|const)\s+(?:\.align\s+(\d+)\s+)?"
                     rf"\.(\w+)\s+({_IDENT})\s*(?:\[\s*(\d*)\s*\])?\s*(?:=\s*([^;]*))?;", re.M)
_ENTRY_RE = re.compile(rf"\.entry\s+({_IDENT})\s*\(([^)]*)\)", re.S)
_PARAM_RE = re.compile(rf"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+({_IDENT})\s*(?:\[\s*(\d+)\s*\])?")
_VERSION_RE = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.M)


class ModuleError(ValueError):
    """A registered module gpusim cannot use (said in one line)."""


@dataclass(frozen=True, slots=True)
class Variable:
    """A module-scope variable of the PTX: its element type and count, initial bytes (None: zeros)."""

    name: str
    space: str  # "global" or "const"
    type: str
    count: int
    init: bytes | None
    extern: bool

    @property
    def size(self) -> int:
        return TYPES[self.type].bytes * self.count if self.type in TYPES else self.count


def _initial_bytes(typ: str, count: int, init: str | None) -> bytes | None:
    if init is None or typ not in TYPES:
        return None
    t = TYPES[typ]
    items = [v.strip() for v in init.strip().strip("{}").split(",") if v.strip()]
    arr = np.zeros(count, dtype=t.dtype)
    for k, tok in enumerate(items[:count]):
        hexf = re.fullmatch(r"0[fF]([0-9a-fA-F]{8})|0[dD]([0-9a-fA-F]{16})", tok)
        if hexf:
            raw = bytes.fromhex(hexf.group(1) or hexf.group(2))[::-1]
            arr[k] = np.frombuffer(raw, dtype=np.float32 if hexf.group(1) else np.float64)[0]
        elif t.is_float:
            arr[k] = float(tok)
        else:
            try:
                v = int(tok, 0)
            except ValueError:  # an address of another variable (generic(&x)): not modelled, zero
                continue
            arr[k] = np.array(v & ((1 << t.bits) - 1)).astype(t.dtype)
    return arr.tobytes()


def variables(ptx: str) -> dict[str, Variable]:
    """The module-scope `.global` and `.const` variables of a PTX module, by name."""
    out = {}
    depth_at = _depths(ptx)
    for m in _VAR_RE.finditer(ptx):
        if depth_at(m.start()):
            continue  # (inside a function: not module scope)
        linkage, space, _align, typ, name, count, init = m.groups()
        n = int(count) if count else 1
        out[name] = Variable(name, space, typ, n, _initial_bytes(typ, n, init), "extern" in linkage)
    return out


def _depths(text: str):
    opens = [m.start() for m in re.finditer(r"\{", text)]
    closes = [m.start() for m in re.finditer(r"\}", text)]

    def depth(pos: int) -> int:
        return bisect.bisect_left(opens, pos) - bisect.bisect_left(closes, pos)
    return depth


def param_sizes(ptx: str) -> dict[str, list[int]]:
    """Each kernel's parameter sizes in bytes, in order (what the application passes by value)."""
    out = {}
    for m in _ENTRY_RE.finditer(ptx):
        sizes = []
        for p in _PARAM_RE.finditer(m.group(2)):
            _align, typ, _name, count = p.groups()
            width = TYPES[typ].bytes if typ in TYPES else 1
            sizes.append(width * (int(count) if count else 1))
        out[m.group(1)] = sizes
    return out


def ptx_version(ptx: str) -> int:
    m = _VERSION_RE.search(ptx)
    return 10 * int(m.group(1)) + int(m.group(2)) if m else 0


def place_variables(ptx: str, addresses: dict[str, int]) -> str:
    """The PTX with its module-scope variables' declarations blanked (line numbers kept) and their names
    replaced by their device addresses; constant-space loads and conversions become global ones."""
    names = set(addresses)

    def blank(m: re.Match) -> str:
        return "\n" * m.group(0).count("\n") if m.group(5) in names else m.group(0)

    text = _VAR_RE.sub(blank, ptx)
    if names:
        pattern = re.compile(r"(?<![\w$%.])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True))
                             + r")(?![\w$])")
        text = pattern.sub(lambda m: str(addresses[m.group(1)]), text)
    text = re.sub(r"\bld\.const\b", "ld.global", text)
    return re.sub(r"\bcvta\.(to\.)?const\b", lambda m: f"cvta.{m.group(1) or ''}global", text)


@dataclass
class Module:
    """One registered fat binary: its PTX (the best fit for the device), kernels and variables."""

    id: int
    ptx: str | None
    arch: int
    archs: tuple[str, ...]  # what the fat binary holds, for errors: "sm_80", "compute_80"
    variables: dict[str, Variable] = field(default_factory=dict)
    params: dict[str, list[int]] = field(default_factory=dict)
    placed: str | None = None  # the PTX with variables at their addresses (made once all are registered)


def choose(entries: list[Entry], arch: int) -> tuple[str | None, int, tuple[str, ...]]:
    """The PTX to run on a device of `arch` (80 for sm_80): the highest compute_XX at most `arch`, and what
    the fat binary holds."""
    held = tuple(sorted({("sm_" if e.kind == ELF else "compute_") + str(e.arch) for e in entries}))
    fits = [e for e in entries if e.kind == PTX and e.arch <= arch]
    if not fits:
        return None, 0, held
    best = max(fits, key=lambda e: e.arch)
    return best.text, best.arch, held
