"""The SIMT ISA: types, the opcode table, assembler, PTX reader, disassembler, control-flow graph."""

from gpusim.isa.assembler import assemble, assemble_file
from gpusim.isa.disassembler import disassemble
from gpusim.isa.kernel import load_kernel
from gpusim.isa.opcodes import OPCODES, Unit
from gpusim.isa.program import Instruction, Operand, Program
from gpusim.isa.ptx import read_ptx, read_ptx_file

__all__ = ["OPCODES", "Instruction", "Operand", "Program", "Unit", "assemble", "assemble_file", "disassemble",
           "load_kernel", "read_ptx", "read_ptx_file"]
