"""Moves and constants folded into operands, as ptxas does (its SASS has almost no MOV: registers are
coalesced, immediates and constant-bank values are operands, address arithmetic by a constant is an
address offset).

1. `WARP_SZ` becomes the config's `sm.warp_size` (an immediate: SASS has no warp-size register).
2. Copy propagation: where `mov r, X` (or `cvta.to.global r, s`, an identity here and absent from SASS)
   is *available* at a use of `r` (on every path from the kernel's entry the copy ran and neither `r`
   nor `X` has been written since), the use reads X instead, if the operand can hold it: a register of
   the same width anywhere a register is read (sources, addresses, guards); an immediate, a shared
   symbol's address or a launch constant (`%ntid.*`, `%nctaid.*`: constant-bank operands in SASS) as
   an ALU source; an immediate or symbol as a shared address. `mov r, %tid.x` and the other per-thread
   special registers stay: they are SASS's S2R. `add r, a, C` (C an immediate or a shared symbol)
   folds into the addresses that use r: `[r+4]` -> `[a+C+4]`.
3. A `mul.lo` by a power-of-two immediate (what the folded WARP_SZ leaves) becomes a shift (SASS: SHF,
   or LEA where an add follows). A division or remainder does not: ptxas (CUDA 13.0, sm_90) divides by
   WARP_SZ, and even by a literal `div.u32 %r3, %r2, 32` in PTX, with its generic unsigned division
   (I2F.U32.RP, MUFU.RCP, F2I, IMAD.HI and two corrections); nvcc turns divisions by constants into
   shifts before PTX, so a `div` in PTX is a division.
4. Dead code: an ALU instruction (or `ld.param`) whose results nothing reads is removed.
Repeated until nothing changes."""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from gpusim.isa.program import Instruction, Operand, Program
from gpusim.isa.ptxas.code import Code, Label
from gpusim.isa.ptxas.dataflow import available, liveness, writes
from gpusim.isa.types import TYPES, compatible

# opcodes the functional executor does not evaluate as `dst = f(sources)` (semantics.alu)
NOT_ALU = frozenset({"ld", "st", "atom", "red", "shfl", "mma", "ldmatrix", "cp", "vote", "bar", "bra", "exit",
                     "membar", "fence"})
MEMORY = frozenset({"ld", "st", "atom", "red"})
# special registers that are launch constants (SASS reads them from the constant bank as operands);
# WARP_SZ is folded to an immediate before propagation when the config is known
LAUNCH_CONSTANTS = frozenset({"%ntid.x", "%ntid.y", "%ntid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "WARP_SZ"})
MAX_ROUNDS = 16


def is_alu(ins: Instruction) -> bool:
    """Does the executor compute this instruction as `dst = f(sources)` (so any source may be an immediate)?"""
    return ins.opcode not in NOT_ALU and not (ins.opcode == "mov" and len(ins.dsts) + len(ins.srcs) == 3)


def is_pure(ins: Instruction) -> bool:
    """No effect but its register results: an ALU instruction or a kernel-parameter load."""
    return is_alu(ins) or (ins.opcode == "ld" and ins.space == "param")


def _bits(t: str) -> int:
    return TYPES[t].bits


@dataclass(frozen=True, slots=True)
class Copy:
    """`dst` holds `src` (+ `offset`, with the address of shared symbol `sym` when named): a register, an
    immediate of type `type`, a launch constant or a shared symbol's address."""

    pc: int
    dst: int
    src: Operand
    type: str
    offset: int = 0  # nonzero (or sym set) only for `add dst, reg, C`: usable in addresses only
    sym: str = ""

    @property
    def src_reg(self) -> int:
        return self.src.reg if self.src.kind == "reg" else -1

    @property
    def plain(self) -> bool:
        return self.offset == 0 and not self.sym


def _copy_of(ins: Instruction, prog: Program) -> Copy | None:
    if ins.guard >= 0 or len(ins.dsts) != 1 or ins.dsts[0].kind != "reg":
        return None
    d = ins.dsts[0].reg
    dtype = prog.registers[d].type
    if ins.opcode in ("mov", "cvta") and len(ins.srcs) == 1:
        s = ins.srcs[0]
        if s.kind == "reg":
            stype = prog.registers[s.reg].type
            if s.reg != d and _bits(stype) == _bits(dtype) and (stype == "pred") == (dtype == "pred"):
                return Copy(ins.pc, d, s, ins.type)
        elif s.kind == "imm" and dtype != "pred" and _bits(dtype) >= 32:
            return Copy(ins.pc, d, s, ins.type)
        elif (s.kind == "special" and s.name in LAUNCH_CONSTANTS) or s.kind == "sym":
            return Copy(ins.pc, d, s, ins.type)
        return None
    t = TYPES[ins.type] if ins.types else None
    if ins.opcode in ("add", "sub") and t is not None and t.is_int and t.bits >= 32 and "sat" not in ins.quals:
        a, c = ins.srcs
        if ins.opcode == "add" and a.kind != "reg":
            a, c = c, a
        if a.kind != "reg" or a.reg == d or _bits(prog.registers[a.reg].type) != _bits(dtype):
            return None
        if c.kind == "imm":
            w = t.bits
            v = int(c.value) & ((1 << w) - 1)
            v = v - (1 << w) if v >= 1 << (w - 1) else v  # the constant as a signed offset
            return Copy(ins.pc, d, a, ins.type, -v if ins.opcode == "sub" else v)
        if c.kind == "sym" and ins.opcode == "add":
            return Copy(ins.pc, d, a, ins.type, int(c.value), c.name)
    return None


def convert_immediate(value: int | float, from_type: str, to_type: str) -> int | float | None:
    """`value`, an immediate of `from_type`, read as `to_type` (the same bits); None if the widths differ."""
    ft, tt = TYPES[from_type], TYPES[to_type]
    if ft.bits != tt.bits or ft.bits not in (32, 64) or tt.kind == "pred":
        return None
    fmt = {32: ("<f", "<I"), 64: ("<d", "<Q")}[ft.bits]
    bits = (struct.unpack(fmt[1], struct.pack(fmt[0], float(value)))[0] if ft.is_float
            else int(value) & ((1 << ft.bits) - 1))
    if tt.is_float:
        return struct.unpack(fmt[0], struct.pack(fmt[1], bits))[0]
    if tt.kind == "s" and bits >= 1 << (tt.bits - 1):
        return bits - (1 << tt.bits)
    return bits


def _source(op: Operand, c: Copy, ins: Instruction, k: int, prog: Program) -> Operand | None:
    """The source operand `op` (reading c.dst) rewritten to read what c copied, or None if it cannot."""
    if not c.plain:
        return None
    rtype = prog.registers[c.dst].type
    if c.src.kind == "reg":
        if ins.opcode in ("mma", "ldmatrix", "cp") or not is_alu(ins) and ins.opcode == "mov":
            return None
        # the operand's type must take the register as PTX does (`add.f32` a .b32 register, not a .u32 one)
        if not compatible(TYPES[op.type], TYPES[prog.registers[c.src.reg].type]):
            return None
        return replace(op, reg=c.src.reg)
    if op.type == "pred" or rtype == "pred":
        return None
    alu = is_alu(ins)
    if not (alu or (ins.opcode == "shfl" and k >= 1)):
        return None
    if c.src.kind == "imm":
        v = convert_immediate(c.src.value, c.type, op.type)
        return None if v is None else Operand("imm", op.type, value=v)
    if not (TYPES[op.type].is_int and TYPES[op.type].bits >= 32):
        return None
    if c.src.kind == "special":
        if TYPES[op.type].bits != 32 or not alu:
            return None
        return Operand("special", op.type, name=c.src.name)
    if c.src.kind == "sym":
        return Operand("sym", op.type, value=c.src.value, name=c.src.name)
    return None


def _address(op: Operand, c: Copy, ins: Instruction, prog: Program) -> Operand | None:
    """The address operand `op` (base register c.dst) rewritten to use what c copied, or None."""
    if ins.opcode not in MEMORY:
        return None
    if c.src.kind == "reg":
        if not TYPES[prog.registers[c.src.reg].type].is_int:
            return None
        if c.sym and op.name:
            return None
        return replace(op, reg=c.src.reg, value=op.value + c.offset, name=c.sym or op.name)
    if ins.space != "shared":
        return None
    if c.src.kind == "imm" and TYPES[c.type].is_int:
        return replace(op, reg=-1, value=op.value + int(c.src.value))
    if c.src.kind == "sym" and not op.name:
        return replace(op, reg=-1, value=op.value + int(c.src.value), name=c.src.name)
    return None


def propagate(prog: Program) -> Program:
    """One round of copy propagation (2. above) over the whole kernel."""
    instrs = prog.instructions
    copies: list[Copy] = []
    gen = [0] * len(instrs)
    for ins in instrs:
        c = _copy_of(ins, prog)
        if c is not None:
            gen[ins.pc] = 1 << len(copies)
            copies.append(c)
    if not copies:
        return prog
    by_dst: dict[int, int] = {}
    mentions: dict[int, int] = {}
    for k, c in enumerate(copies):
        by_dst[c.dst] = by_dst.get(c.dst, 0) | 1 << k
        for r in (c.dst, c.src_reg):
            if r >= 0:
                mentions[r] = mentions.get(r, 0) | 1 << k
    kill = []
    for ins in instrs:
        m = 0
        for r in ins.regs_written():
            m |= mentions.get(r, 0)
        kill.append(m)
    avail = available(prog, gen, kill)

    def copy_for(pc: int, r: int) -> Copy | None:
        bits = avail[pc] & by_dst.get(r, 0)
        return copies[bits.bit_length() - 1] if bits else None

    out = list(instrs)
    changed = False
    for ins in instrs:
        if not avail[ins.pc]:
            continue
        srcs, dsts, guard = list(ins.srcs), list(ins.dsts), ins.guard
        touched = False
        for ops in (srcs, dsts):
            for k, op in enumerate(ops):
                if op.kind == "reg" and ops is srcs and (c := copy_for(ins.pc, op.reg)) is not None:
                    new = _source(op, c, ins, k, prog)
                elif op.kind == "addr" and op.reg >= 0 and (c := copy_for(ins.pc, op.reg)) is not None:
                    new = _address(op, c, ins, prog)
                else:
                    continue
                if new is not None and new != op:
                    ops[k], touched = new, True
        if guard >= 0 and (c := copy_for(ins.pc, guard)) is not None and c.plain and c.src.kind == "reg":
            guard, touched = c.src.reg, True
        if touched:
            out[ins.pc] = replace(ins, srcs=tuple(srcs), dsts=tuple(dsts), guard=guard)
            changed = True
    return replace(prog, instructions=tuple(out)) if changed else prog


def fold_warp_size(prog: Program, warp_size: int) -> Program:
    """WARP_SZ as an immediate wherever an ALU source reads it (1. above)."""
    out, changed = [], False
    for ins in prog.instructions:
        if is_alu(ins) and any(o.kind == "special" and o.name == "WARP_SZ" for o in ins.srcs):
            ins = replace(ins, srcs=tuple(Operand("imm", o.type, value=warp_size)
                                          if o.kind == "special" and o.name == "WARP_SZ" else o for o in ins.srcs))
            changed = True
        out.append(ins)
    return replace(prog, instructions=tuple(out)) if changed else prog


def _power_of_two(op: Operand) -> int | None:
    if op.kind != "imm" or not TYPES[op.type].is_int:
        return None
    v = int(op.value) & ((1 << TYPES[op.type].bits) - 1)
    return v.bit_length() - 1 if v and not v & (v - 1) else None


def strength_reduce(prog: Program) -> Program:
    """Integer mul.lo by a power-of-two immediate as a shift (3. above)."""
    out, changed = [], False
    for ins in prog.instructions:
        new = _reduced(ins)
        if new is not None:
            ins, changed = new, True
        out.append(ins)
    return replace(prog, instructions=tuple(out)) if changed else prog


def _reduced(ins: Instruction) -> Instruction | None:
    if ins.opcode != "mul" or not ins.types or not TYPES[ins.type].is_int or set(ins.quals) & {"hi", "wide"}:
        return None
    pairs = [(a, k) for a, b in (ins.srcs, ins.srcs[::-1]) if (k := _power_of_two(b)) is not None]
    if not pairs:
        return None
    a, k = pairs[0]
    if k == 0:
        return replace(ins, opcode="mov", quals=(), srcs=(a,))
    return replace(ins, opcode="shl", quals=(), srcs=(a, Operand("imm", "u32", value=k)))


def remove_dead(prog: Program) -> Program:
    """Pure instructions whose results no later instruction reads are removed (4. above)."""
    _, live_out = liveness(prog)
    dead = [ins.pc for ins in prog.instructions if is_pure(ins) and ins.dsts and not writes(ins) & live_out[ins.pc]]
    if not dead:
        return prog
    drop = set(dead)
    code = Code.of(prog)
    code.items = [it for it in code.items if isinstance(it, Label) or it.pc not in drop]
    return code.build()


def fold(prog: Program, warp_size: int | None) -> Program:
    """All of the above, repeated until the kernel stops changing."""
    if warp_size is not None:
        prog = fold_warp_size(prog, warp_size)
    for _ in range(MAX_ROUNDS):
        new = remove_dead(strength_reduce(propagate(prog)))
        if new == prog:
            break
        prog = new
    return prog
