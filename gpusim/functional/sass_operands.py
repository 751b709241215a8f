"""The operands of SASS instructions as the executor reads and writes them: a SASS program's constant bank
0, its special registers, and one reader or writer closure per operand over the batch's lane arrays (shared
by the decoders of `sass_ops.py`, `sass_arith.py` and `sass_memory.py`)."""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from gpusim.functional import sass_semantics as sem
from gpusim.functional.warps import _Batch

U32, U64, F32, F64 = np.uint32, np.uint64, np.float32, np.float64
M32 = np.uint64(0xFFFFFFFF)

# S2R's special registers that are one of the executor's precomputed lane arrays
SR_SPECIAL = {"SR_TID.X": "%tid.x", "SR_TID.Y": "%tid.y", "SR_TID.Z": "%tid.z", "SR_CTAID.X": "%ctaid.x",
              "SR_CTAID.Y": "%ctaid.y", "SR_CTAID.Z": "%ctaid.z", "SR_LANEID": "%laneid"}
SR_ZERO = frozenset({"SR_CgaCtaId", "SRZ", "SR_SWINHI"})  # 0 for a block outside any cluster
SR_LANEMASK = ("SR_LTMASK", "SR_LEMASK", "SR_GTMASK", "SR_GEMASK", "SR_EQMASK")
NOOPS = frozenset({"NOP", "YIELD", "NANOSLEEP", "BSSY", "BSYNC", "WARPSYNC", "MEMBAR", "ERRBAR", "CCTL"})
MEM_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}
CMPS = ("EQ", "NE", "LT", "LE", "GT", "GE", "EQU", "NEU", "LTU", "LEU", "GTU", "GEU", "NUM", "NAN", "F", "T")
ROUNDS = ("RN", "RZ", "RM", "RP")


class Unsupported(Exception):
    """A form of an instruction the executor does not implement (reported as a located fault)."""


def _mod(mods, choices, default):
    return next((m for m in mods if m in choices), default)


def _width(mods) -> int:
    return next((MEM_BYTES[m] for m in mods if m in MEM_BYTES), 4)




class SassOperands:
    """Readers, writers and the constant bank (mixed into the Executor)."""

    # ---- set-up ------------------------------------------------------------------------------------
    def _init_sass(self) -> None:
        prog, launch = self.program, self.launch
        used = set()
        for ins in prog.instructions:
            for o in ins.operands:
                if o.kind == "sr":
                    if o.name in SR_SPECIAL:
                        used.add(SR_SPECIAL[o.name])
                    elif o.name in SR_LANEMASK:
                        used.add("%laneid")
        self.used_specials = used
        size = -(-(prog.param_base + len(self.params)) // 8) * 8
        cb = bytearray(max(size, 0x40))
        struct.pack_into("<6I", cb, 0, *launch.block, *launch.grid)
        struct.pack_into("<I", cb, 0x28, prog.frame_bytes)  # the local stack's top (it grows down)
        cb[prog.param_base: prog.param_base + len(self.params)] = self.params
        self.cbank = np.frombuffer(bytes(cb), dtype=np.uint8)
        self.local_bytes = -(-prog.frame_bytes // 16) * 16

    # ---- operands ------------------------------------------------------------------------------------
    def _reg(self, b: _Batch, op) -> np.ndarray | None:
        """The lane array of an R/UR register operand (None for RZ/URZ)."""
        from gpusim.isa.sass.program import flat_index

        i = flat_index(op, self.program.nregs)
        return None if i < 0 else b.R[i]

    def _bits(self, op, b: _Batch, ins) -> Callable:
        """lanes -> the operand's 32 bits (uint32), no modifier applied."""
        k = op.kind
        if k in ("R", "UR"):
            arr = self._reg(b, op)
            if arr is None:
                return lambda lanes: U32(0)
            return lambda lanes: arr[lanes]
        if k == "imm":
            v = U32(int(op.value) & 0xFFFFFFFF)
            return lambda lanes: v
        if k == "fimm":
            if op.pair:
                v = sem.pack_f16(op.pair[1], op.pair[0])[()]
            else:
                v = np.float32(op.value).view(U32)
            return lambda lanes: v
        if k == "c":
            return self._cbank(op, b, ins, 4)
        if k == "sr":
            return self._special(op, b, ins)
        raise Unsupported(f"operand kind {k}")

    def _cbank(self, op, b: _Batch, ins, width: int) -> Callable:
        if op.bank != 0:
            raise Unsupported(f"constant bank {op.bank} (only bank 0: the launch and its parameters)")
        cb = self.cbank
        off = int(op.value)
        idx = self._reg(b, type(op)("R", op.index)) if op.index >= 0 else None
        uidx = self._reg(b, type(op)("UR", op.ureg)) if op.ureg >= 0 else None
        dt = {1: np.uint8, 2: np.uint16, 4: U32, 8: U64}[width]

        def at(o):
            o = np.asarray(o, dtype=np.int64)
            if (o < 0).any() or (o + width > cb.size).any():
                return np.zeros(o.shape, dtype=dt)  # (outside the bank: zeros, as an unwritten bank reads)
            return cb[o[..., None] + np.arange(width)].view(dt).reshape(o.shape)

        if idx is None and uidx is None:
            v = at(off)[()]
            return lambda lanes: v

        def read(lanes):
            o = np.int64(off)
            if idx is not None:
                o = o + idx[lanes].astype(np.int64)
            if uidx is not None:
                o = o + uidx[lanes].astype(np.int64)
            return at(o)
        return read

    def _special(self, op, b: _Batch, ins) -> Callable:
        name = op.name
        if name in SR_SPECIAL:
            arr = b.R[self.nregs + self._special_index(SR_SPECIAL[name])]
            return lambda lanes: arr[lanes]
        if name in SR_ZERO:
            return lambda lanes: U32(0)
        if name in SR_LANEMASK:
            lane = b.R[self.nregs + self._special_index("%laneid")]
            f = {"SR_LTMASK": lambda n: (U64(1) << n) - U64(1), "SR_LEMASK": lambda n: (U64(2) << n) - U64(1),
                 "SR_GTMASK": lambda n: ~((U64(2) << n) - U64(1)), "SR_GEMASK": lambda n: ~((U64(1) << n) - U64(1)),
                 "SR_EQMASK": lambda n: U64(1) << n}[name]
            return lambda lanes: (f(lane[lanes].astype(U64)) & M32).astype(U32)
        raise Unsupported(f"special register {name}")

    def _special_index(self, name: str) -> int:
        from gpusim.isa.program import SPECIAL_REGISTERS

        return SPECIAL_REGISTERS.index(name)

    def _int(self, op, b, ins) -> Callable:
        """lanes -> a 32-bit integer source with its -x (two's complement) or ~x applied."""
        f = self._bits(op, b, ins)
        if op.neg:
            return lambda lanes: (U32(0) - np.asarray(f(lanes), dtype=U32)).astype(U32)
        if op.inv:
            return lambda lanes: ~np.asarray(f(lanes), dtype=U32)
        if op.abs:
            return lambda lanes: np.abs(np.asarray(f(lanes), dtype=U32).view(np.int32)).view(U32)
        return f

    def _f32(self, op, b, ins, ftz: bool = False) -> Callable:
        """lanes -> an f32 source with |x| and -x applied (.FTZ: subnormals read as zero)."""
        if op.kind == "fimm" and not op.pair:
            v = F32(op.value)
            v = -abs(v) if op.neg and op.abs else abs(v) if op.abs else -v if op.neg else v
            return lambda lanes: v
        f = self._bits(op, b, ins)

        def read(lanes):
            x = np.asarray(f(lanes), dtype=U32).view(F32)
            if ftz:
                x = sem.ftz(x)
            if op.abs:
                x = np.abs(x)
            if op.neg:
                x = -x
            return x
        return read

    def _u64(self, op, b, ins) -> Callable:
        """lanes -> a 64-bit source (a register pair, a 64-bit constant or an immediate)."""
        if op.kind in ("R", "UR"):
            lo = self._reg(b, op)
            if lo is None:
                return lambda lanes: U64(0)
            hi = self._reg(b, type(op)(op.kind, op.index + 1))
            return lambda lanes: lo[lanes].astype(U64) | (hi[lanes].astype(U64) << U64(32))
        if op.kind == "c":
            return self._cbank(op, b, ins, 8)
        if op.kind == "imm":
            v = U64(int(op.value) & 0xFFFFFFFFFFFFFFFF)
            return lambda lanes: v
        if op.kind == "fimm":
            v = np.float64(op.value).view(U64)
            return lambda lanes: v
        raise Unsupported(f"64-bit operand kind {op.kind}")

    def _f64(self, op, b, ins) -> Callable:
        if op.kind == "fimm":
            v = F64(op.value)
            v = abs(v) if op.abs else v
            v = -v if op.neg else v
            return lambda lanes: v
        f = self._u64(op, b, ins)

        def read(lanes):
            x = np.asarray(f(lanes), dtype=U64).view(F64)
            if op.abs:
                x = np.abs(x)
            return -x if op.neg else x
        return read

    def _pred(self, op, b) -> Callable:
        if op.kind not in ("P", "UP"):
            raise Unsupported("a predicate operand expected")
        if op.index == 7:
            v = not op.inv
            return lambda lanes: v
        arr = self._reg(b, op)
        if op.inv:
            return lambda lanes: ~arr[lanes]
        return lambda lanes: arr[lanes]

    def _w32(self, op, b) -> Callable:
        if op.kind not in ("R", "UR"):
            raise Unsupported("a register destination expected")
        arr = self._reg(b, op)
        if arr is None:
            return lambda lanes, v: None

        def write(lanes, v):
            arr[lanes] = v
        return write

    def _wn(self, op, b, n: int) -> list[Callable]:
        """Writers of the n consecutive registers from `op` (RZ: discarded)."""
        if op.kind not in ("R", "UR"):
            raise Unsupported("a register destination expected")
        if self._reg(b, op) is None:
            return [lambda lanes, v: None] * n
        return [self._w32(type(op)(op.kind, op.index + k), b) for k in range(n)]

    def _wp(self, op, b) -> Callable:
        if op.kind not in ("P", "UP"):
            raise Unsupported("a predicate destination expected")
        arr = self._reg(b, op) if op.index != 7 else None
        if arr is None:
            return lambda lanes, v: None

        def write(lanes, v):
            arr[lanes] = v
        return write

    def _w64(self, op, b) -> Callable:
        lo, hi = self._wn(op, b, 2)

        def write(lanes, v):
            v = np.asarray(v, dtype=U64)
            lo(lanes, (v & M32).astype(U32))
            hi(lanes, (v >> U64(32)).astype(U32))
        return write
