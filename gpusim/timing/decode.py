"""What the timing model needs of each instruction, decoded once per kernel: which sub-partition
port it issues to, how long that port is busy, when its result is usable, which registers it reads
and writes, and which Nsight Compute stall reason a warp waiting on it (or on its port) reports.
`code_arrays` lays the same facts out as arrays indexed by pc, for the compiled engine."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.config.vocab import KIND, PORT, PORTS, STATE, WARP_STATES  # noqa: F401 (re-exported)
from gpusim.functional.launch import require_units
from gpusim.isa import Program
from gpusim.isa.opcodes import MMA_DIMS, Unit
from gpusim.isa.types import TYPES
from gpusim.timing.jit import struct_type

ALU, GLOBAL_LD, GLOBAL_ST, GLOBAL_ATOM, SHARED, SHFL, BRANCH, BARRIER, EXIT, CP_COMMIT, CP_WAIT = (
    KIND[k] for k in ("alu", "global_ld", "global_st", "global_atom", "shared", "shfl", "branch", "barrier", "exit",
                      "cp_commit", "cp_wait"))
S = STATE


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
    groups: int = 0  # cp.async.wait_group N: N (the copy groups that may stay in flight); wait_all: -1
    stall: int = 1  # cycles before the warp's next instruction may issue (SASS: the control codes' stall count)
    yields: bool = False  # SASS: the yield bit (the scheduler turns to another warp after it)


def decode(program: Program, cfg: Config) -> list[TimingInfo]:
    """One TimingInfo per pc."""
    warp = cfg.sm.warp_size
    require_units(program, cfg)
    if getattr(program, "isa", "") == "sass":  # the machine code, timed by its control codes (decode_sass.py)
        from gpusim.timing.decode_sass import decode_sass

        return decode_sass(program, cfg, KIND, TimingInfo)
    out = []
    for ins in program.instructions:
        unit = ins.unit
        name = unit.value.lower()
        kind, dep, thr = ALU, S["wait"], S["math_pipe_throttle"]
        held = 0  # cycles an mma holds the tensor core (other units: from their lanes)
        # The config's `opcodes:` table where it lists the opcode, else the unit's figures.
        latency, lanes = cfg.opcode_timing(ins.opcode, name)
        width = (TYPES[ins.types[0]].bytes if ins.types else 4) * ins.vector  # .v2/.v4: all of a lane's bytes
        returns = bool(ins.regs_written())
        space = ins.space
        if ins.opcode in ("ld", "st", "atom", "red") and space == "param":
            # Kernel parameters live in the constant bank and reach the ALU as operands: a fixed-latency
            # integer-pipe move, not a trip through the LSU.
            name = "int"
            latency, lanes = cfg.units["int"].latency_cycles, cfg.units["int"].lanes_per_subpartition
        elif ins.opcode in ("ld", "st", "atom", "red"):
            if space == "shared":
                kind, dep, thr = SHARED, S["short_scoreboard"], S["mio_throttle"]
            else:
                kind = {"ld": GLOBAL_LD, "st": GLOBAL_ST}.get(ins.opcode, GLOBAL_ATOM)
                dep, thr = S["long_scoreboard"], S["lg_throttle"]
        elif ins.opcode == "mma":
            tensor = cfg.units["tensor"]
            m, n, k = MMA_DIMS[next(q for q in ins.quals if q in MMA_DIMS)]
            latency = tensor.latency_cycles
            # the tensor core is held until it has done the M*N*K multiply-adds at its rate for the inputs
            held = math.ceil(m * n * k / tensor.fma_per_cycle(ins.types[1]))
        elif ins.opcode == "ldmatrix":  # 8 rows of 16 bytes a matrix, through the shared-memory pipe
            kind, dep, thr = SHARED, S["short_scoreboard"], S["mio_throttle"]
            width = 16
        elif ins.opcode == "cp" and set(ins.quals) & {"ca", "cg"}:
            # cp.async: a global load through the L1 whose data goes to shared memory, no register
            kind, dep, thr = GLOBAL_LD, S["long_scoreboard"], S["lg_throttle"]
            width = int(ins.srcs[1].value)
        elif ins.opcode == "cp":
            # commit_group / wait_group: a wait for copies is a wait on the L1TEX (LSU) path: long scoreboard
            kind = CP_COMMIT if "commit_group" in ins.quals else CP_WAIT
            dep = S["long_scoreboard"]
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
        interval = held or max(1, math.ceil(warp / lanes))
        writes = ins.regs_written()
        # A store's or reduction's register operands are all reads; so are a branch's guard.
        reads = tuple(dict.fromkeys(ins.regs_read()))
        out.append(TimingInfo(kind, PORT[name], interval, latency, reads, writes, dep, thr, width, returns,
                              ins.opcode in ("atom", "red"), tuple(dict.fromkeys(reads + writes)), ins.pc,
                              writes[0] if len(writes) == 1 else -1,
                              int(ins.srcs[0].value) if kind == CP_WAIT and ins.srcs else -1 if kind == CP_WAIT else 0))
    return out


class Code(NamedTuple):
    """The decoded program as arrays indexed by pc (the compiled engine's view of `TimingInfo`);
    registers read/written as CSR lists: `deps[dep_off[pc]:dep_off[pc + 1]]`."""

    kind: np.ndarray
    port: np.ndarray
    interval: np.ndarray
    latency: np.ndarray
    dep_reason: np.ndarray
    throttle_reason: np.ndarray
    dep_off: np.ndarray
    deps: np.ndarray
    wr_off: np.ndarray
    writes: np.ndarray
    groups: np.ndarray
    atomic: np.ndarray  # atom or red (a shared one's passes are read-modify-writes)
    stall: np.ndarray  # cycles from its issue to the warp's next (1 but for SASS)
    yields: np.ndarray  # bool: the scheduler turns to another warp after it (SASS's yield bit)


struct_type(Code)


def code_arrays(info: list[TimingInfo]) -> Code:
    def csr(lists):
        off = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in lists], out=off[1:])
        flat = np.array([r for x in lists for r in x] or [0], dtype=np.int64)
        return off, flat

    def col(name):
        return np.array([getattr(ti, name) for ti in info] or [0], dtype=np.int64)

    dep_off, deps = csr([ti.deps for ti in info])
    wr_off, writes = csr([ti.writes for ti in info])
    return Code(col("kind"), col("port"), col("interval"), col("latency"), col("dep_reason"),
                col("throttle_reason"), dep_off, deps, wr_off, writes, col("groups"), col("opcode_is_atomic"),
                col("stall"), np.array([ti.yields for ti in info] or [False], dtype=np.bool_))
