"""TimingInfo for a SASS kernel: what `decode.py` gives the engine for PTX, read from the architecture's SASS
timing table (gpusim/data/sass/sm_XX.yaml: unit, latency) and each instruction's control codes, honoured as
the hardware does:

- the stall count: the warp's next instruction issues no earlier than `stall` cycles after this one (Nsight's
  `wait` state); fixed-latency results are guarded by nothing else, so real registers are not scoreboarded;
- the dependency barriers: an instruction with a write barrier SBk sets it until its result is written - a
  variable-latency ALU op (MUFU, S2R, LDC, conversions ...) after the table's latency, a memory op when the
  memory model returns its data; a read barrier guards its source registers until they are read, which in
  this model is at issue (the LSU, MIO and SFU take their operands with the instruction), so it is free at
  once - a load's read barrier does not wait for its data; an instruction waits for the barriers of its
  wait mask. The six barriers are scoreboard entries after the
  registers (`SassProgram.barrier_base`); several instructions on one barrier release it with the last;
- the yield bit: the warp scheduler turns to another warp after it (GTO drops it as its greedy warp);
- operand reuse: register-bank conflicts are not modelled, so the reuse flags change nothing.
The scheduler, caches and memory are those of every kernel."""

from __future__ import annotations

import math

from gpusim.config import Config
from gpusim.config.vocab import PORT, STATE
from gpusim.isa.sass.build import arch_of
from gpusim.isa.sass.table import load_table

S = STATE
_GLOBAL_LD = frozenset({"LDG", "LD"})
_GLOBAL_ST = frozenset({"STG", "ST"})
_GLOBAL_ATOM = frozenset({"ATOMG", "ATOM", "RED", "REDG"})
_SHARED = frozenset({"LDS", "STS", "ATOMS", "LDSM"})
_MEM_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def decode_sass(program, cfg: Config, kinds: dict, TimingInfo) -> list:  # noqa: N803 (decode.py's record type)
    """One TimingInfo per pc of a SassProgram (`kinds`: decode.py's kind numbers by name; `TimingInfo` its
    record, passed in so that this module does not import decode.py, which dispatches here)."""
    table = load_table(arch_of(cfg))
    warp = cfg.sm.warp_size
    sb0 = program.barrier_base
    out = []
    for ins in program.instructions:
        op, m = ins.opcode, set(ins.mods)
        t = table[op]
        unit = cfg.units[t.unit] if t.unit in cfg.units else None
        if unit is None:
            from gpusim.errors import LaunchError

            raise LaunchError(f"{cfg.name} has no {t.unit} unit for {ins.mnemonic} at {program.source}:{ins.line}",
                              field=op)
        lanes = t.lanes_per_subpartition or unit.lanes_per_subpartition
        ctrl = ins.control
        kind, dep, thr = kinds["alu"], S["wait"], S["math_pipe_throttle"]
        latency = t.latency_cycles
        width = next((_MEM_BYTES[x] for x in ins.mods if x in _MEM_BYTES), 4)
        held = 0
        if ins.guard_false:  # `@!PT`: issues and does nothing (ptxas's padding); no memory access
            pass
        elif op in _GLOBAL_LD or op == "LDGSTS":
            kind, dep, thr = kinds["global_ld"], S["long_scoreboard"], S["lg_throttle"]
        elif op in _GLOBAL_ST:
            kind, dep, thr = kinds["global_st"], S["long_scoreboard"], S["lg_throttle"]
        elif op in _GLOBAL_ATOM:
            kind, dep, thr = kinds["global_atom"], S["long_scoreboard"], S["lg_throttle"]
        elif op in _SHARED:
            kind, dep, thr = kinds["shared"], S["short_scoreboard"], S["mio_throttle"]
            if op == "LDSM":
                width = 16
        elif op == "SHFL":
            kind, dep, thr = kinds["shfl"], S["short_scoreboard"], S["mio_throttle"]
        elif op == "LDGDEPBAR":
            kind, dep = kinds["cp_commit"], S["long_scoreboard"]
        elif op == "DEPBAR":
            kind, dep = kinds["cp_wait"], S["long_scoreboard"]
        elif op in ("BRA", "CALL", "RET"):
            kind, dep, latency = kinds["branch"], S["branch_resolving"], max(1, ctrl.stall)
        elif op == "EXIT":
            kind, latency = kinds["exit"], max(1, ctrl.stall)
        elif op == "BAR":
            kind, dep = kinds["barrier"], S["barrier"]
        elif op in ("HMMA", "IMMA"):
            from gpusim.isa.opcodes import MMA_DIMS

            tensor = cfg.units["tensor"]
            shape = {"16816": "m16n8k16", "1688": "m16n8k8", "16832": "m16n8k32"}[ins.mods[0]]
            at = "s8" if op == "IMMA" else "bf16" if "BF16" in m else "tf32" if "TF32" in m else "f16"
            mm, nn, kk = MMA_DIMS[shape]
            held = math.ceil(mm * nn * kk / tensor.fma_per_cycle(at))
            latency = tensor.latency_cycles
        elif t.unit == "sfu" or op in ("S2R", "S2UR", "LDC", "ULDC") and ctrl.wbar >= 0:
            dep, thr = S["short_scoreboard"], S["mio_throttle"]
        interval = held or max(1, math.ceil(warp / lanes))
        # Only the write barrier waits for the result: the read barrier guards the source registers, which the
        # instruction has read once it issues here (docs/isa.md, "The control codes"), so it is free at issue.
        writes = [sb0 + ctrl.wbar] if ctrl.wbar >= 0 and op != "LDGSTS" and not ins.guard_false else []
        deps = tuple(sb0 + k for k in ctrl.waits)
        groups = 0
        if kind == kinds["cp_wait"]:
            groups = int(ins.operands[1].value)
        out.append(TimingInfo(kind, PORT[t.unit], interval, latency, deps, tuple(dict.fromkeys(writes)), dep, thr,
                              width, bool(writes) and op not in _GLOBAL_ST, op in _GLOBAL_ATOM or op == "ATOMS",
                              deps, ins.pc, writes[0] if len(writes) == 1 else -1, groups,
                              stall=max(1, ctrl.stall), yields=ctrl.yield_))
    return out
