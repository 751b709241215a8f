"""`gpusim asm KERNEL`: assemble a kernel and show the decoded program (`--sass`: the SASS ptxas made of a
CUDA C kernel, a cubin or a listing, with each instruction's unit, control codes and CUDA source line)."""

from __future__ import annotations

from pathlib import Path

import gpusim
from gpusim.cli.args import add_config
from gpusim.cli.commands import COMMANDS


def register(subparsers) -> None:
    p = subparsers.add_parser("asm", help=COMMANDS["asm"],
                              description="Assemble a .sasm file (or a workload's kernel) and print each "
                                          "instruction with its pc, unit class and reconvergence point. With "
                                          "--sass: the SASS of a .cu, .cubin or .sass listing (or of a CUDA C "
                                          "workload) for the config's architecture, with its control codes.")
    p.add_argument("kernel", help="a .sasm file or a workload name (--sass: also a .cu, .cubin or .sass file)")
    p.add_argument("--plain", action="store_true", help="print only the disassembly (re-assemblable)")
    p.add_argument("--ptxas", action="store_true",
                   help="print the kernel as the ptxas model compiles it for --config (moves folded, counted loops "
                        "unrolled, blocks scheduled: what timed runs execute; docs/isa.md, 'The ptxas model'), each "
                        "instruction with the source line it came from")
    p.add_argument("--sass", action="store_true", help="the machine code: SASS from nvcc (or the checked-in cubin)")
    add_config(p, help="--ptxas: the config it compiles for; --sass: the config whose architecture to show "
                       "(default a100: sm_80; h200: sm_90)")
    p.set_defaults(func=run)


def run(args) -> int:
    from gpusim.isa.disassembler import format_instruction
    from gpusim.isa.program import EXIT_PC

    if args.sass:
        return _sass(args)
    path = Path(args.kernel)
    prog = gpusim.assemble_file(path) if path.suffix == ".sasm" else gpusim.load_workload(args.kernel).program
    if args.ptxas:
        from gpusim.isa.ptxas import ptxas

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


def _sass(args) -> int:
    from gpusim.isa.program import EXIT_PC
    from gpusim.isa.sass import arch_of, load_sass

    cfg = gpusim.load_config(args.config)
    arch = arch_of(cfg)
    path = Path(args.kernel)
    if path.suffix.lower() in (".cu", ".cubin", ".sass"):
        prog = load_sass(path, arch)
    else:
        prog = gpusim.load_workload(args.kernel, isa="sass").program_for(cfg)
    if args.plain:
        for ins in prog.instructions:
            print(f"/*{ins.addr:04x}*/ {ins.text} ;")
        return 0
    print(f"kernel {prog.name} (sm_{prog.arch}, {prog.source}): {len(prog)} instructions, {prog.regs_per_thread} "
          f"registers/thread, {prog.shared_bytes} B shared memory, {prog.frame_bytes} B local memory")
    print("params: " + (", ".join(f".{p.type} {p.name} (c[0x0][{prog.param_base + p.offset:#x}])" for p in
                                  prog.params) or "none"))
    labels = {pc: name for name, pc in prog.labels}
    for ins in prog.instructions:
        if ins.pc in labels:
            print(f"{labels[ins.pc]}:")
        note = ""
        if ins.opcode == "BRA" and ins.guard >= 0:
            note = "  reconverge at " + ("exit" if ins.reconv == EXIT_PC else f"pc {ins.reconv}")
        where = f"{Path(ins.loc[0]).name}:{ins.loc[1]}" if ins.loc else f"line {ins.line}"
        print(f"  {ins.pc:4d} {ins.addr:05x}  {ins.unit.value:<6} {ins.control}  {ins.text:<48}// {where}{note}")
    return 0
