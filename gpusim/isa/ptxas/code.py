"""The passes' working form of a kernel: its instructions as a list with label markers between them
(branches name their targets, so instructions can be inserted, removed and moved freely), its
registers (new ones appended with fresh names), and the way back to a Program: pcs renumbered, branch
targets, reconvergence points and live registers recomputed as the assembler computes them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpusim.isa.cfg import peak_live_registers, reconvergence_points
from gpusim.isa.opcodes import OPCODES, Unit
from gpusim.isa.program import EXIT_PC, Instruction, Operand, Program, Register
from gpusim.isa.types import TYPES


@dataclass(frozen=True, slots=True)
class Label:
    name: str


Item = Instruction | Label


@dataclass
class Code:
    """A kernel being rewritten: `items` in order (Instructions and Labels), `registers` by index."""

    program: Program
    items: list[Item]
    registers: list[Register]
    _names: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def of(cls, program: Program) -> Code:
        labels_at: dict[int, list[str]] = {}
        for name, pc in program.labels:
            labels_at.setdefault(pc, []).append(name)
        items: list[Item] = []
        for ins in program.instructions:
            items.extend(Label(n) for n in labels_at.get(ins.pc, ()))
            items.append(ins)
        code = cls(program, items, list(program.registers))
        code._names = {r.name for r in program.registers} | {n for n, _ in program.labels}
        # a branch whose target has no label (a Program built by hand): give it one
        named = {pc for _, pc in program.labels}
        missing = sorted({i.target for i in program.instructions if i.opcode == "bra" and i.target not in named})
        if missing:
            at = {pc: code.fresh_label(f"pc{pc}") for pc in missing}
            items = []
            for ins in program.instructions:
                if ins.pc in at:
                    items.append(Label(at[ins.pc]))
                items.extend(Label(n) for n in labels_at.get(ins.pc, ()))
                items.append(retarget(ins, at[ins.target]) if ins.opcode == "bra" and ins.target in at else ins)
            code.items = items
        return code

    # ---- names ------------------------------------------------------------------------------------
    def _fresh(self, base: str) -> str:
        k = 1
        while f"{base}{k}" in self._names:
            k += 1
        self._names.add(f"{base}{k}")
        return f"{base}{k}"

    def fresh_label(self, hint: str) -> str:
        """A new label name, `$ptxas_<hint>N` (`$` keeps it apart from the names of a .sasm source)."""
        return self._fresh(f"$ptxas_{hint.lstrip('$%')}_")

    def fresh_register(self, type_name: str, hint: str) -> int:
        """A new register of `type_name`, named after `hint` (`%r3` -> `%r3_p1`, `%r3_p2`, ...)."""
        base = hint if hint.startswith("%") else "%" + hint
        self.registers.append(Register(self._fresh(base + "_p"), type_name, len(self.registers)))
        return len(self.registers) - 1

    # ---- back to a Program ------------------------------------------------------------------------
    def build(self) -> Program:
        items = self.items
        pcs: dict[str, int] = {}
        n = 0
        order: list[tuple[str, int]] = []
        for it in items:
            if isinstance(it, Label):
                pcs[it.name] = n
                order.append((it.name, n))
            else:
                n += 1
        instrs: list[Instruction] = []
        for it in items:
            if isinstance(it, Label):
                continue
            pc = len(instrs)
            if it.opcode == "bra":
                name = target_name(it)
                tgt = pcs[name]
                srcs = tuple(replace(o, value=tgt) if o.kind == "label" else o for o in it.srcs)
                instrs.append(replace(it, pc=pc, target=tgt, srcs=srcs, reconv=EXIT_PC))
            else:
                instrs.append(replace(it, pc=pc, reconv=EXIT_PC))
        if not instrs or not (instrs[-1].opcode in ("exit", "bra") and instrs[-1].guard < 0):
            last = instrs[-1] if instrs else None
            instrs.append(Instruction(len(instrs), "exit", (), (), (), (), Unit.BRANCH,
                                      line=last.line if last else 0, text="exit (implicit, at the end of the kernel)",
                                      loc=last.loc if last else None))
        labels = tuple((name, pc) for name, pc in order if pc < len(instrs))
        t = tuple(instrs)
        reconv = reconvergence_points(t)
        t = tuple(replace(i, reconv=reconv[i.pc]) if i.pc in reconv else i for i in t)
        regs = tuple(self.registers)
        return replace(self.program, registers=regs, instructions=t, labels=labels,
                       live_registers=peak_live_registers(t, [r.type for r in regs]))


def basic_blocks(code: Code) -> list[list[int]]:
    """The pcs of each basic block of `code`, in order: a block ends before a label and after a branch or
    an exit (a guarded exit too: lanes leave there)."""
    blocks: list[list[int]] = [[]]
    for it in code.items:
        if isinstance(it, Label):
            blocks.append([])
            continue
        blocks[-1].append(it.pc)
        if it.opcode in ("bra", "exit"):
            blocks.append([])
    return [b for b in blocks if b]


def target_name(ins: Instruction) -> str:
    return next(o.name for o in ins.srcs if o.kind == "label")


def retarget(ins: Instruction, label: str) -> Instruction:
    return replace(ins, srcs=tuple(replace(o, name=label) if o.kind == "label" else o for o in ins.srcs))


def make(opcode: str, types: tuple[str, ...], dsts: tuple[Operand, ...], srcs: tuple[Operand, ...], *,
         quals: tuple[str, ...] = (), like: Instruction, guard: int = -1, guard_negate: bool = False) -> Instruction:
    """A new instruction placed where `like` stands in the source (its line, text and CUDA location)."""
    unit = OPCODES[opcode].unit_for(types[0] if types else None)
    return Instruction(-1, opcode, quals, types, dsts, srcs, unit, guard, guard_negate, line=like.line,
                       text=like.text, loc=like.loc)


def branch(label: str, *, like: Instruction, guard: int = -1, negate: bool = False) -> Instruction:
    return replace(make("bra", (), (), (Operand("label", "", -1, -1, label),), like=like, guard=guard,
                        guard_negate=negate), target=-1)


def reg(index: int, type_name: str) -> Operand:
    return Operand("reg", type_name, index)


def imm(value: int | float, type_name: str) -> Operand:
    return Operand("imm", type_name, value=value)


def width(type_name: str) -> int:
    return TYPES[type_name].bits
