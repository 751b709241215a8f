"""The emitter every template writes its kernel with: declarations, instructions one a line, fresh
registers and labels, global loads and stores of f32, f16, bf16, i8 or i32 tensors (computing in f32:
every conversion a `cvt`, narrowing ones to nearest even, to i8 saturated), and, as it
goes, the kernel's dynamic work per thread for the cost models: each instruction is weighted by how
many times a thread runs it (loops have trip counts known when the kernel is generated); a *round
trip* is counted whenever an instruction needs a value an earlier global (or shared) load has not yet
delivered (the loads issued before it overlap; the thread then waits one memory latency); and each
global access adds the bytes a warp's request moves between L1 and L2 (whole 32-byte sectors; by
default 32 lanes reading contiguous elements)."""

from __future__ import annotations

import re
import struct
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from gpusim.isa import Program, assemble

REG_PREFIX = {"f32": "f", "f16": "h", "bf16": "bh", "u32": "r", "s32": "q", "u64": "rd", "pred": "p"}
WIDTH = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i32": 4, "u32": 4, "u64": 8, "b16": 2, "s8": 1, "s32": 4}
# a tensor dtype's memory width in ld/st, the register that holds it, and its cvt type
_HELD = {"f16": ("f16", "f16", "f16"), "bf16": ("b16", "bf16", "bf16"), "i8": ("s8", "s32", "s8"),
         "i32": ("s32", "s32", "s32")}
SECTOR = 32  # bytes
WARP = 32
_REG = re.compile(r"%[A-Za-z_]\w*(?![\w.])")  # registers, not %tid.x


def fimm(value: float) -> str:
    """An f32 immediate written as its exact bit pattern (`0f3F800000` for 1.0)."""
    bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    return f"0f{bits:08X}"


class Asm:
    """One kernel's source, built instruction by instruction."""

    def __init__(self, name: str):
        self.name = name
        self._decls: list[str] = []
        self._regs: dict[str, int] = {}
        self._body: list[tuple[str, float]] = []  # (line, times a thread runs it)
        self._weight = 1.0
        self._pending: dict[str, set[str]] = {"global": set(), "shared": set()}
        self._labels = 0
        self._pointers: dict[str, str] = {}
        self.round_trips = {"global": 0.0, "shared": 0.0}
        self.barriers = 0.0
        self.load_bytes = 0.0  # global bytes one warp's loads move between L1 and L2
        self.store_bytes = 0.0

    @property
    def weight(self) -> float:
        """How many times a thread runs the instruction emitted next (the trip counts of the loops around it)."""
        return self._weight

    # --- declarations ---------------------------------------------------------------------------

    def param(self, name: str, type_: str = "u64") -> None:
        self._decls.append(f".param .{type_} {name}")

    def shared(self, name: str, count: int, type_: str = "f32") -> str:
        self._decls.append(f".shared .align 16 .{type_} {name}[{count}]")
        return name

    def reg(self, type_: str) -> str:
        """A fresh register of `type_` (f32, f16, u32, u64, pred)."""
        n = self._regs.get(type_, 0)
        self._regs[type_] = n + 1
        return f"%{REG_PREFIX[type_]}{n}"

    def label(self, prefix: str) -> str:
        self._labels += 1
        return f"{prefix}_{self._labels}"

    # --- instructions ---------------------------------------------------------------------------

    def __call__(self, opcode: str, *operands: str, guard: str | None = None, sectors: int | None = None) -> None:
        """Emit `[@guard] opcode operands` (st/bar have no destination); `sectors`: the 32-byte sectors a
        warp's global access touches (default: 32 contiguous elements)."""
        has_dst = not opcode.startswith(("st.", "bar.", "bra", "red."))
        sources = operands[1:] if has_dst else operands
        read = {r for o in sources for r in _REG.findall(o)} | ({guard.lstrip("!")} if guard else set())
        for space, pending in self._pending.items():
            if read & pending:
                self.round_trips[space] += self._weight
                pending.clear()
        kind = opcode.split(".")[:2]
        if kind[0] in ("ld", "st") and kind[1] == "global":
            moved = SECTOR * (sectors or -(-WARP * WIDTH[opcode.rsplit(".", 1)[1]] // SECTOR))
            if kind[0] == "ld":
                self.load_bytes += self._weight * moved
            else:
                self.store_bytes += self._weight * moved
        if kind[0] == "ld" and kind[1] in self._pending:
            self._pending[kind[1]].add(operands[0])
        elif kind[0] == "bar":
            self.barriers += self._weight
        prefix = f"@{guard} " if guard else ""
        self._body.append((f"    {prefix}{opcode} {', '.join(operands)};".replace(" ;", ";"), self._weight))

    def value(self, opcode: str, type_: str, *sources: str, guard: str | None = None) -> str:
        """Emit `opcode d, sources` into a fresh register `d` of `type_` and return `d`."""
        dst = self.reg(type_)
        self(opcode, dst, *sources, guard=guard)
        return dst

    def both(self, p: str | None, q: str | None) -> str | None:
        """The predicate p and q, where None stands for always true."""
        if p is None or q is None:
            return p or q
        return self.value("and.pred", "pred", p, q)

    def place(self, label: str) -> None:
        self._body.append((f"{label}:", 0.0))

    @contextmanager
    def loop(self, trips: int) -> Iterator[str]:
        """A loop whose body (the `with` block) runs `trips` times; yields the iteration's number (a u32
        register, or "0" when trips is 1: then there is no loop code)."""
        if trips <= 1:
            yield "0"
            return
        counter, top = self.reg("u32"), self.label("LOOP")
        self("mov.u32", counter, "0")
        self.place(top)
        outer = self._weight
        self._weight = outer * trips
        yield counter
        self("add.u32", counter, counter, "1")
        more = self.value("setp.lt.u32", "pred", counter, str(trips))
        self("bra", top, guard=more)
        self._weight = outer

    # --- memory ---------------------------------------------------------------------------------

    def pointer(self, param: str) -> str:
        """The u64 address held by pointer parameter `param` (loaded once)."""
        if param not in self._pointers:
            self._pointers[param] = self.value("ld.param.u64", "u64", f"[{param}]")
        return self._pointers[param]

    def rebase(self, param: str, index: str, dtype: str) -> None:
        """From here on, pointer parameter `param` points `index` elements (u32 register) of `dtype` further
        (a batched kernel's block moving to its batch's matrices)."""
        offset = self.value("mul.wide.u32", "u64", index, str(WIDTH[dtype]))
        self._pointers[param] = self.value("add.u64", "u64", self.pointer(param), offset)

    def address(self, param: str, index: str, dtype: str) -> str:
        """&param[index] for a tensor of `dtype` (`index` a u32 register or immediate)."""
        base = self.pointer(param)
        if index == "0":
            return base
        offset = self.value("mul.wide.u32", "u64", index, str(WIDTH[dtype]))
        return self.value("add.u64", "u64", base, offset)

    def load(self, address: str, dtype: str, guard: str | None = None, offset: int = 0,
             fill: float | None = None, sectors: int | None = None) -> str:
        """Load an element of `dtype` at `address` (+ `offset` elements) as an f32 register; where
        `guard` is false nothing is read and the value is `fill` (None: undefined)."""
        at = f"[{address}+{offset * WIDTH[dtype]}]" if offset else f"[{address}]"
        if dtype == "f32":
            held = self.reg("f32")
            if guard is not None and fill is not None:  # a guarded load leaves the register as it was
                self("mov.f32", held, str(float(fill)))
            self("ld.global.f32", held, at, guard=guard, sectors=sectors)
            return held
        width, reg, cvt = _HELD[dtype]
        held = self.reg(reg)
        if guard is not None and fill is not None and reg == "s32":
            self("mov.s32", held, str(int(fill)))
        elif guard is not None and fill is not None:
            self(f"cvt.rn.{cvt}.f32", held, fimm(fill))
        self(f"ld.global.{width}", held, at, guard=guard, sectors=sectors)
        return self.value(f"cvt.{'rn.' if reg == 's32' else ''}f32.{cvt}", "f32", held)

    def store(self, address: str, value: str, dtype: str, guard: str | None = None, offset: int = 0,
              sectors: int | None = None) -> None:
        """Store f32 register `value` as `dtype` (rounded to nearest even; to i8 saturated) at `address`
        (+ `offset` elements)."""
        at = f"[{address}+{offset * WIDTH[dtype]}]" if offset else f"[{address}]"
        width = "f32"
        if dtype != "f32":
            width, reg, cvt = _HELD[dtype]
            rounding = "rni.sat" if dtype == "i8" else "rni" if dtype == "i32" else "rn"
            value = self.value(f"cvt.{rounding}.{cvt}.f32", reg, value)
        self(f"st.global.{width}", at, value, guard=guard, sectors=sectors)

    def rounded(self, value: str, dtype: str) -> str:
        """f32 register `value` rounded to `dtype` (f16, bf16: nearest even; i8: nearest even, saturated)
        and held in f32 again: a cast inside a fused chain."""
        width, reg, cvt = _HELD[dtype]
        narrow = self.value(f"cvt.{'rni.sat' if dtype == 'i8' else 'rn'}.{cvt}.f32", reg, value)
        return self.value(f"cvt.{'rn.' if dtype == 'i8' else ''}f32.{cvt}", "f32", narrow)

    # --- the result -----------------------------------------------------------------------------

    def source(self) -> str:
        """The kernel's `.sasm` text so far."""
        regs = [f".reg .{t} %{REG_PREFIX[t]}<{n}>" for t, n in self._regs.items()]
        return "\n".join([f".kernel {self.name}", *self._decls, *regs, *(line for line, _ in self._body)]) + "\n"

    def assemble(self) -> tuple[str, Program, dict[str, float]]:
        """The source (ending in `exit`), its Program, and the instructions a thread runs per unit class."""
        if not self._body or not self._body[-1][0].endswith("exit;"):
            self("exit")
        text = self.source()
        program = assemble(text, f"{self.name}.sasm")
        first = text.count("\n") - len(self._body) + 1  # line number of the first body line
        weights = [w for _, w in self._body]
        counts: Counter[str] = Counter()
        for ins in program.instructions:
            counts[str(ins.unit)] += weights[ins.line - first]
        return text, program, dict(counts)
