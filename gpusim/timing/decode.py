"""What the timing model needs of each instruction, decoded once per kernel: which sub-partition
port it issues to, how long that port is busy, when its result is usable, which registers it reads
and writes, and which Nsight Compute stall reason a warp waiting on it (or on its port) reports."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusim.config import Config
from gpusim.isa import Program
from gpusim.isa.opcodes import Unit
from gpusim.isa.types import TYPES

# Instruction kinds the SM treats differently (small ints: SM.issue tests ALU, BRANCH and EXIT with `is`).
ALU, GLOBAL_LD, GLOBAL_ST, GLOBAL_ATOM, SHARED, SHFL, BRANCH, BARRIER, EXIT = range(9)

# Issue ports of a sub-partition, one per unit class in the config.
PORTS = ("fp32", "int", "fp64", "sfu", "ldst", "branch", "sync", "tensor")
PORT = {name: i for i, name in enumerate(PORTS)}

# Warp states, in Nsight Compute's names (smsp__pcsamp_warps_issue_stalled_*).
WARP_STATES = ("selected", "not_selected", "long_scoreboard", "short_scoreboard", "wait",
               "math_pipe_throttle", "mio_throttle", "lg_throttle", "barrier", "branch_resolving",
               "no_instruction", "drain")
S = {name: i for i, name in enumerate(WARP_STATES)}


@dataclass(frozen=True, slots=True)
class TimingInfo:
    kind: int
    port: int
    interval: int  # cycles the port is busy: ceil(warp_size / lanes)
    latency: int  # cycles until a dependent instruction may issue (fixed-latency kinds)
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    dep_reason: int  # state of a warp waiting on this instruction's result
    throttle_reason: int  # state of a warp waiting for this instruction's port
    width: int  # bytes per lane of a memory access
    returns: bool  # a memory instruction that writes a register (ld, atom)
    opcode_is_atomic: bool  # atom or red: same-address lanes serialise
    deps: tuple[int, ...]  # registers whose pending writes it waits for: sources (RAW), destinations (WAW)
    pc: int
    write1: int = -1  # the register it writes, if it writes exactly one (the common case on the issue path)


def decode(program: Program, cfg: Config) -> list[TimingInfo]:
    """One TimingInfo per pc."""
    warp = cfg.sm.warp_size
    out = []
    for ins in program.instructions:
        unit = ins.unit
        name = unit.value.lower()
        spec = cfg.units[name]
        kind, dep, thr = ALU, S["wait"], S["math_pipe_throttle"]
        latency = spec.latency_cycles
        width = TYPES[ins.types[0]].bytes if ins.types else 4
        returns = bool(ins.regs_written())
        space = ins.space
        if ins.opcode in ("ld", "st", "atom", "red") and space == "param":
            # Kernel parameters live in the constant bank and reach the ALU as operands: a fixed-latency
            # integer-pipe move, not a trip through the LSU.
            name, spec = "int", cfg.units["int"]
            latency = spec.latency_cycles
        elif ins.opcode in ("ld", "st", "atom", "red"):
            if space == "shared":
                kind, dep, thr = SHARED, S["short_scoreboard"], S["mio_throttle"]
            else:
                kind = {"ld": GLOBAL_LD, "st": GLOBAL_ST}.get(ins.opcode, GLOBAL_ATOM)
                dep, thr = S["long_scoreboard"], S["lg_throttle"]
        elif ins.opcode == "shfl":
            kind, dep, thr = SHFL, S["short_scoreboard"], S["mio_throttle"]
        elif unit == Unit.SFU:
            dep, thr = S["short_scoreboard"], S["mio_throttle"]
        elif ins.opcode == "bra":
            kind, dep = BRANCH, S["branch_resolving"]
        elif ins.opcode == "exit":
            kind = EXIT
        elif ins.opcode == "bar":
            kind, dep = BARRIER, S["barrier"]
        interval = max(1, math.ceil(warp / spec.lanes_per_subpartition))
        writes = ins.regs_written()
        # A store's or reduction's register operands are all reads; so are a branch's guard.
        reads = tuple(dict.fromkeys(ins.regs_read()))
        out.append(TimingInfo(kind, PORT[name], interval, latency, reads, writes, dep, thr, width, returns,
                              ins.opcode in ("atom", "red"), tuple(dict.fromkeys(reads + writes)), ins.pc,
                              writes[0] if len(writes) == 1 else -1))
    return out
