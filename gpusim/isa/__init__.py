"""The SIMT ISA: types, the opcode table, assembler, disassembler, control-flow graph."""

from gpusim.isa.assembler import assemble, assemble_file
from gpusim.isa.disassembler import disassemble
from gpusim.isa.opcodes import OPCODES, Unit
from gpusim.isa.program import Instruction, Operand, Program

__all__ = ["OPCODES", "Instruction", "Operand", "Program", "Unit", "assemble", "assemble_file", "disassemble"]
