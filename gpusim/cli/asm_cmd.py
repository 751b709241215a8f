"""`gpusim asm KERNEL`: assemble a kernel and show the decoded program."""

from __future__ import annotations

from pathlib import Path

import gpusim
from gpusim.cli.args import add_config
from gpusim.isa.disassembler import format_instruction
from gpusim.isa.program import EXIT_PC
from gpusim.isa.ptxas import ptxas


def register(subparsers) -> None:
    p = subparsers.add_parser("asm", help="assemble a kernel and print it decoded",
                              description="Assemble a .sasm file (or a workload's kernel) and print each "
                                          "instruction with its pc, unit class and reconvergence point.")
    p.add_argument("kernel", help="a .sasm file or a workload name")
    p.add_argument("--plain", action="store_true", help="print only the disassembly (re-assemblable)")
    p.add_argument("--ptxas", action="store_true",
                   help="print the kernel as the ptxas model compiles it for --config (moves folded, counted loops "
                        "unrolled, blocks scheduled: what timed runs execute; docs/isa.md, 'The ptxas model'), each "
                        "instruction with the source line it came from")
    add_config(p, help="with --ptxas: the built-in config name or YAML path it compiles for (default a100)")
    p.set_defaults(func=run)


def run(args) -> int:
    path = Path(args.kernel)
    prog = gpusim.assemble_file(path) if path.suffix == ".sasm" else gpusim.load_workload(args.kernel).program
    if args.ptxas:
        prog = ptxas(prog, gpusim.load_config(args.config))
    if args.plain:
        print(gpusim.disassemble(prog), end="")
        return 0
    print(f"kernel {prog.name}: {len(prog)} instructions, {prog.regs_per_thread} registers/thread "
          f"({prog.live_registers} live at peak), {prog.shared_bytes} B shared memory")
    print("params: " + (", ".join(f".{p.type} {p.name}" for p in prog.params) or "none"))
    labels = {pc: name for name, pc in prog.labels}
    for ins in prog.instructions:
        if ins.pc in labels:
            print(f"{labels[ins.pc]}:")
        note = ""
        if ins.opcode == "bra" and ins.guard >= 0:
            note = "  reconverge at " + ("exit" if ins.reconv == EXIT_PC else f"pc {ins.reconv}")
        print(f"  {ins.pc:4d}  {ins.unit.value:<6}  {format_instruction(ins, prog):<44}// line {ins.line}{note}")
    return 0
