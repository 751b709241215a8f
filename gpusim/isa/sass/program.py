"""A SASS kernel as gpusim runs it: decoded instructions (operands resolved to flat register indices,
branch targets and reconvergence points as instruction indices, control codes) and the cubin's facts
(parameters, registers per thread, shared and local memory). It offers the attributes the functional
executor's scheduler, the timing model and the reports read of a PTX Program (`name`, `params`,
`registers`, `instructions`, `shared_bytes`, `regs_per_thread`, ...), so both run through one executor.

Register file (flat indices, `SassProgram.registers`): R0..R{n-1}, then P0..P6, UR0..UR62, UP0..UP6, and
the six dependency barriers SB0..SB5 (the timing model's scoreboard entries for them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpusim.isa.cfg import BasicBlock, immediate_postdominators
from gpusim.isa.opcodes import Unit
from gpusim.isa.program import EXIT_PC, Param, Register
from gpusim.isa.sass.control import Control
from gpusim.isa.sass.listing import PT, RZ, UPT, URZ, SassOperand

NPRED, NUREG = 7, 63  # P0..P6 (PT is 7), UR0..UR62 (URZ is 63)
SHARED_RESERVED = {90: 1024}  # sm_90 reserves the first 1 KB of a block's shared window (.nv.shared starts with it)


@dataclass(frozen=True, slots=True)
class SassInstruction:
    pc: int  # index in the kernel
    addr: int  # byte offset (pc * 16)
    opcode: str  # "IMAD"
    mods: tuple[str, ...]  # ("WIDE", "U32")
    operands: tuple[SassOperand, ...]
    unit: Unit
    guard: int = -1  # flat index of the guard predicate (-1: none, or @PT)
    guard_negate: bool = False
    guard_false: bool = False  # @!PT: never executes
    target: int = -1  # BRA/CALL/BSSY: the label's pc
    reconv: int = EXIT_PC  # a guarded BRA: where its lanes reconverge
    control: Control = field(default_factory=Control)
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    line: int = field(default=0, compare=False)  # line in the listing
    text: str = field(default="", compare=False)
    loc: tuple[str, int] | None = field(default=None, compare=False)  # (CUDA file, line)

    # the attributes of gpusim.isa.Instruction that the scheduler and the reports read
    @property
    def quals(self) -> tuple[str, ...]:
        return self.mods

    @property
    def types(self) -> tuple[str, ...]:
        return ()

    @property
    def type(self) -> str:
        return ""

    @property
    def srcs(self) -> tuple:
        return ()

    @property
    def dsts(self) -> tuple:
        return ()

    @property
    def vector(self) -> int:
        return 1

    @property
    def space(self) -> str:
        op = self.opcode
        if op in ("LDG", "STG", "ATOMG", "RED", "REDG", "LDGSTS", "LD", "ST", "ATOM"):
            return "global"
        if op in ("LDS", "STS", "ATOMS", "LDSM"):
            return "shared"
        if op in ("LDL", "STL"):
            return "local"
        return ""

    @property
    def mnemonic(self) -> str:
        return ".".join((self.opcode, *self.mods))

    def regs_read(self) -> tuple[int, ...]:
        return self.reads

    def regs_written(self) -> tuple[int, ...]:
        return self.writes


@dataclass(frozen=True, slots=True)
class SassProgram:
    name: str  # the demangled name (the mangled one: `symbol`)
    params: tuple[Param, ...]
    registers: tuple[Register, ...]
    instructions: tuple[SassInstruction, ...]
    labels: tuple[tuple[str, int], ...]
    arch: int  # 80, 90
    nregs: int  # R registers per thread (the cubin's REGCOUNT)
    param_base: int  # the parameters' byte offset in constant bank 0
    shared_window: int  # bytes of a block's shared window the code addresses (reserved area included)
    shared_reserved: int  # of which the reserved area at its start
    frame_bytes: int = 0  # local memory per thread
    symbol: str = ""
    shared: tuple = ()
    maxnreg: int = 0
    live_registers: int = field(default=0, compare=False)
    source: str = field(default="<sass>", compare=False)
    isa: str = "sass"

    @property
    def shared_bytes(self) -> int:
        """Static shared memory per block as the occupancy calculator counts it (without the reserved area,
        which the config's reserved_shared_memory_per_block_bytes adds)."""
        return max(0, self.shared_window - self.shared_reserved)

    @property
    def regs_per_thread(self) -> int:
        """The cubin's register count (EIATTR_REGCOUNT), what occupancy is computed from."""
        return max(1, self.maxnreg or self.nregs)

    @property
    def pred_base(self) -> int:
        return self.nregs

    @property
    def ureg_base(self) -> int:
        return self.nregs + NPRED

    @property
    def upred_base(self) -> int:
        return self.nregs + NPRED + NUREG

    @property
    def barrier_base(self) -> int:
        return self.nregs + NPRED + NUREG + NPRED

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

    def with_param_names(self, names) -> SassProgram:
        names = tuple(names)
        if len(names) != len(self.params):
            raise ValueError("one name per parameter")
        return replace(self, params=tuple(replace(p, name=n) for p, n in zip(self.params, names, strict=True)))


def register_file(nregs: int) -> tuple[Register, ...]:
    regs = [Register(f"R{i}", "b32", i) for i in range(nregs)]
    regs += [Register(f"P{i}", "pred", nregs + i) for i in range(NPRED)]
    regs += [Register(f"UR{i}", "b32", nregs + NPRED + i) for i in range(NUREG)]
    regs += [Register(f"UP{i}", "pred", nregs + NPRED + NUREG + i) for i in range(NPRED)]
    regs += [Register(f"SB{i}", "pred", nregs + 2 * NPRED + NUREG + i) for i in range(6)]
    return tuple(regs)


def flat_index(op: SassOperand, nregs: int) -> int:
    """The flat register index of a register or predicate operand (-1 for RZ, URZ, PT, UPT)."""
    if op.kind == "R":
        return -1 if op.index == RZ else op.index
    if op.kind == "P":
        return -1 if op.index == PT else nregs + op.index
    if op.kind == "UR":
        return -1 if op.index == URZ else nregs + NPRED + op.index
    if op.kind == "UP":
        return -1 if op.index == UPT else nregs + NPRED + NUREG + op.index
    return -1


# ---- control flow ----------------------------------------------------------------------------------

def _ends_block(ins: SassInstruction) -> bool:
    return ((ins.opcode in ("BRA", "EXIT", "RET", "BRX", "JMP", "JMX", "KILL") or _guarded_call(ins))
            and not ins.guard_false)


def _guarded_call(ins: SassInstruction) -> bool:
    """A guarded CALL (ptxas jumps to a kernel's tail this way): for control flow, a guarded branch."""
    return ins.opcode == "CALL" and ins.guard >= 0


def _successors(ins: SassInstruction, n: int) -> tuple[int, ...]:
    nxt = (ins.pc + 1,) if ins.pc + 1 < n else (EXIT_PC,)
    op = ins.opcode
    if op in ("EXIT", "RET", "KILL") and not ins.guard_false:
        return (EXIT_PC,) + (nxt if ins.guard >= 0 else ())
    if (op == "BRA" or _guarded_call(ins)) and not ins.guard_false:
        return (ins.target,) if ins.guard < 0 else tuple(dict.fromkeys(nxt + (ins.target,)))
    return nxt


def basic_blocks(instrs: tuple[SassInstruction, ...]) -> list[BasicBlock]:
    n = len(instrs)
    leaders = {0}
    for ins in instrs:
        if ins.target >= 0 and ins.opcode in ("BRA", "CALL", "BSSY"):
            leaders.add(ins.target)
        if _ends_block(ins) and ins.pc + 1 < n:
            leaders.add(ins.pc + 1)
    starts = sorted(s for s in leaders if 0 <= s < n)
    block_of, spans = {}, []
    for i, s in enumerate(starts):
        spans.append((s, (starts[i + 1] if i + 1 < len(starts) else n) - 1))
        block_of[s] = i
    return [BasicBlock(i, s, e, tuple(dict.fromkeys(block_of.get(p, -1) if p != EXIT_PC else -1
                                                   for p in _successors(instrs[e], n))))
            for i, (s, e) in enumerate(spans)]


def with_reconvergence(instrs: tuple[SassInstruction, ...]) -> tuple[SassInstruction, ...]:
    """Each guarded BRA with the pc where its lanes reconverge: the immediate post-dominator of its block
    (ptxas brackets divergent regions with BSSY/BSYNC, whose BSYNC stands at that point)."""
    blocks = basic_blocks(instrs)
    ipdom = immediate_postdominators(blocks)
    out = list(instrs)
    for b in blocks:
        ins = instrs[b.end]
        if (ins.opcode == "BRA" or _guarded_call(ins)) and ins.guard >= 0:
            out[b.end] = replace(ins, reconv=blocks[ipdom[b.index]].start if ipdom[b.index] >= 0 else EXIT_PC)
    return tuple(out)
