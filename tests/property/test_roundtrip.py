"""Property: random valid kernels (every opcode of the table, every operand form) assemble, and
assemble(disassemble(p)) decodes to the same records and prints the same text."""

from __future__ import annotations

import dataclasses
import struct

from hypothesis import given

from gpusim.isa import assemble, disassemble
from gpusim.isa.program import Operand, Program

from .profiles import budget
from .sasm_gen import kernels


def _value_key(op: Operand):
    """An operand with its value as bits: NaN equals itself and -0.0 differs from 0.0."""
    if isinstance(op.value, float):
        return dataclasses.replace(op, value=struct.pack(">d", op.value))
    return op


def records(p: Program) -> tuple:
    """Everything `Program.__eq__` compares, with float immediates compared bit for bit."""
    instrs = tuple(dataclasses.replace(i, dsts=tuple(map(_value_key, i.dsts)), srcs=tuple(map(_value_key, i.srcs)))
                   for i in p.instructions)
    return (p.name, p.params, p.registers, p.shared, instrs, p.labels, p.maxnreg)


@budget(200)
@given(kernels())
def test_disassembly_reassembles_to_the_same_program(src):
    first = assemble(src, "gen.sasm")
    text = disassemble(first)
    second = assemble(text, "disassembled.sasm")
    assert records(second) == records(first)
    assert disassemble(second) == text
    assert second.live_registers == first.live_registers
