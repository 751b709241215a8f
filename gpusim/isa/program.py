"""An assembled kernel: decoded instructions whose operands are already resolved (register indices,
immediates as numbers, branch targets and reconvergence points as pcs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusim.isa.opcodes import Unit

SPECIAL_REGISTERS = (
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
    "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z",
    "%laneid", "%warpid", "%nwarpid", "WARP_SZ",
)

EXIT_PC = -1  # reconvergence at the kernel's end: lanes only leave through `exit`


@dataclass(frozen=True, slots=True)
class Register:
    name: str
    type: str
    index: int


@dataclass(frozen=True, slots=True)
class Operand:
    """kind: 'reg' (index), 'imm' (value), 'special' (name), 'addr' (reg base or -1, value offset,
    name symbol), 'label' (name, value = pc), 'sym' (shared symbol used as a value)."""

    kind: str
    type: str = ""
    reg: int = -1
    value: int | float = 0
    name: str = ""
    negate: bool = False


@dataclass(frozen=True, slots=True)
class Instruction:
    pc: int
    opcode: str
    quals: tuple[str, ...]
    types: tuple[str, ...]
    dsts: tuple[Operand, ...]
    srcs: tuple[Operand, ...]
    unit: Unit
    guard: int = -1
    guard_negate: bool = False
    target: int = -1  # branch target pc
    reconv: int = EXIT_PC  # reconvergence pc of a guarded (possibly divergent) branch
    line: int = field(default=0, compare=False)  # the line in the kernel's own file (.sasm or .ptx)
    text: str = field(default="", compare=False)
    # (CUDA source file, line) from the PTX `.loc` in force at this instruction; None for .sasm or without
    # line info
    loc: tuple[str, int] | None = field(default=None, compare=False)

    @property
    def type(self) -> str:
        return self.types[0] if self.types else ""

    @property
    def space(self) -> str:
        for q in self.quals:
            if q in ("global", "shared", "param"):
                return q
        return ""

    @property
    def vector(self) -> int:
        """Elements per lane of a `.v2`/`.v4` load or store; 1 otherwise."""
        return 4 if "v4" in self.quals else 2 if "v2" in self.quals else 1

    @property
    def mnemonic(self) -> str:
        return ".".join((self.opcode, *self.quals, *self.types))

    def regs_read(self) -> tuple[int, ...]:
        regs = [o.reg for o in self.srcs if o.kind in ("reg", "addr") and o.reg >= 0]
        regs += [o.reg for o in self.dsts if o.kind == "addr" and o.reg >= 0]
        if self.guard >= 0:
            regs.append(self.guard)
        return tuple(regs)

    def regs_written(self) -> tuple[int, ...]:
        return tuple(o.reg for o in self.dsts if o.kind == "reg")


@dataclass(frozen=True, slots=True)
class SharedVar:
    name: str
    type: str
    count: int
    align: int
    offset: int
    dynamic: bool = False  # a PTX `.extern .shared` array: `count` bytes given at launch


    @property
    def size(self) -> int:
        from gpusim.isa.types import TYPES

        return TYPES[self.type].bytes * self.count


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    type: str
    offset: int


@dataclass(frozen=True, slots=True)
class Program:
    name: str
    params: tuple[Param, ...]
    registers: tuple[Register, ...]
    shared: tuple[SharedVar, ...]
    instructions: tuple[Instruction, ...]
    labels: tuple[tuple[str, int], ...]  # (name, pc), in source order
    maxnreg: int = 0  # `.maxnreg N`: the register count the kernel was compiled to (0: not given)
    live_registers: int = field(default=0, compare=False)  # peak live 32-bit register slots
    # source lines of the instructions that begin a loop PTX marks `.pragma "nounroll"` (nvcc writes it on
    # the remainder loops of the loops it unrolled); ptxas, and gpusim's model of it, leave those loops alone
    nounroll: frozenset[int] = field(default=frozenset(), compare=False)
    source: str = field(default="<string>", compare=False)

    @property
    def shared_bytes(self) -> int:
        """Static shared memory per block, from the `.shared` declarations."""
        if not self.shared:
            return 0
        return max(v.offset + v.size for v in self.shared)

    @property
    def regs_per_thread(self) -> int:
        """Registers per thread for occupancy: `.maxnreg` if declared, else the peak number of live
        32-bit register slots (a 64-bit register takes two; predicates have their own file)."""
        return self.maxnreg or max(1, self.live_registers)

    def register(self, name: str) -> Register:
        for r in self.registers:
            if r.name == name:
                return r
        raise KeyError(name)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def __len__(self) -> int:
        return len(self.instructions)

    def with_param_names(self, names: tuple[str, ...] | list[str]) -> Program:
        """The program with its parameters renamed, in order (and its `ld.param` operands with them): PTX
        names them `_Z6vecaddPKfS0_Pfj_param_0`, ...; a workload's `args:` gives the names its inputs use."""
        from dataclasses import replace

        new = dict(zip((p.name for p in self.params), names, strict=True))

        def ren(o: Operand) -> Operand:
            return replace(o, name=new[o.name]) if o.kind == "addr" and o.name in new else o

        instrs = tuple(replace(i, srcs=tuple(map(ren, i.srcs))) if i.space == "param" else i
                       for i in self.instructions)
        return replace(self, params=tuple(replace(p, name=new[p.name]) for p in self.params), instructions=instrs)
