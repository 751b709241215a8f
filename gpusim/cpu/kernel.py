"""What the CPU model needs to know of a kernel's instructions before it runs: each pc's pipe class,
memory space and element size, which branches are conditional, and which loads form a serial chain.

A load is *serial* when its address depends, through registers, on the value of a load that in turn
depends on it (a cycle of loads: the pointer chase `cur = next[cur]`). Such loads cannot overlap in
the out-of-order window, whatever its size: each pays its whole latency. The analysis is flow-
insensitive (a register's sources anywhere in the kernel), which can only find more chains, not fewer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.isa.program import Program
from gpusim.isa.types import TYPES

# pipe classes of the core (what an instruction occupies)
FP, FP64, INT, SFU, MEM, NONE = range(6)
CLASSES = 6
_BY_UNIT = {"FP32": FP, "FP64": FP64, "INT": INT, "BRANCH": INT, "SFU": SFU, "LDST": MEM, "SYNC": NONE}
# memory spaces
NOMEM, GLOBAL, LOCAL = 0, 1, 2  # LOCAL: shared memory and parameters, which live in the core's L1


@dataclass(frozen=True)
class KernelInfo:
    """Per-pc tables (numpy arrays indexed by pc)."""

    cls: np.ndarray  # pipe class
    space: np.ndarray  # NOMEM, GLOBAL, LOCAL
    loads: np.ndarray  # bool: reads memory (ld, atom)
    stores: np.ndarray  # bool: writes memory (st, atom, red)
    elem_bytes: np.ndarray  # bytes per lane of a memory access
    barrier: np.ndarray  # bool: bar.sync (ends a region of the block's SIMD-group loop)
    cond_branch: np.ndarray  # bool: a guarded bra (predicted)
    target: np.ndarray  # branch target pc (-1: none)
    serial: np.ndarray  # bool: a global load in a chain of dependent loads


def analyse(program: Program) -> KernelInfo:
    ins = program.instructions
    n = len(ins)
    cls = np.array([_BY_UNIT[str(i.unit)] for i in ins], dtype=np.int64)
    space = np.zeros(n, dtype=np.int64)
    loads, stores = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    elem = np.ones(n, dtype=np.int64)
    for i in ins:
        if i.opcode in ("ld", "st", "atom", "red"):
            space[i.pc] = GLOBAL if i.space == "global" else LOCAL
            loads[i.pc] = i.opcode in ("ld", "atom")
            stores[i.pc] = i.opcode != "ld"
            elem[i.pc] = TYPES[i.type].bytes if i.type in TYPES else 4
    barrier = np.array([i.opcode == "bar" for i in ins], dtype=bool)
    cond = np.array([i.opcode == "bra" and i.guard >= 0 for i in ins], dtype=bool)
    target = np.array([i.target if i.opcode == "bra" else -1 for i in ins], dtype=np.int64)
    return KernelInfo(cls, space, loads, stores, elem, barrier, cond, target, _serial_loads(program, space, loads))


def _serial_loads(program: Program, space: np.ndarray, loads: np.ndarray) -> np.ndarray:
    ins = program.instructions
    global_loads = [i.pc for i in ins if loads[i.pc] and space[i.pc] == GLOBAL]
    # dep[r]: the global loads whose values flow into register r (to a fixed point)
    dep: dict[int, set[int]] = {}
    changed = True
    while changed:
        changed = False
        for i in ins:
            if i.pc in global_loads:
                srcs = {i.pc}
            else:
                srcs = set().union(*(dep.get(r, set()) for r in i.regs_read()))
            for r in i.regs_written():
                if not srcs <= dep.setdefault(r, set()):
                    dep[r] |= srcs
                    changed = True
    # feeds[p]: the loads whose values p's address is computed from
    feeds = {p: set().union(*(dep.get(o.reg, set()) for o in ins[p].srcs if o.kind == "addr" and o.reg >= 0))
             for p in global_loads}
    serial = np.zeros(len(ins), dtype=bool)
    for p in global_loads:  # p is serial if it reaches itself through feeds
        seen, todo = set(), list(feeds[p])
        while todo:
            q = todo.pop()
            if q == p:
                serial[p] = True
                break
            if q not in seen:
                seen.add(q)
                todo += feeds.get(q, ())
    return serial
