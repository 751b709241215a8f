"""A list scheduler over each basic block, as ptxas orders SASS: long-latency instructions (global and
shared loads, SFU) issued as early as their dependences allow, so that independent work hides their
latency instead of a consumer waiting right behind its load.

Dependences inside a block: register RAW (weighted by the producer's latency), WAR and WAW; a memory
operation (ld/st/atom/red/cp.async/ldmatrix) never moves across a store, atomic, barrier, fence or
warp-synchronous operation (shfl, vote, mma, ldmatrix, bar), and those keep their order among
themselves; loads may pass loads. A block's closing branch or exit stays last, and nothing crosses a
guarded `exit` (lanes leave there). Latencies come from the config: each unit's (or the `opcodes:`
table's) latency, l2.hit_latency_cycles for a global load, shared_memory.latency_cycles for a shared one.

The schedule is cycle-driven, one instruction a cycle: at each step the instruction whose operands are
ready and whose latency-weighted path to the block's end is longest goes next (ties: source order);
when none is ready, time jumps to the earliest."""

from __future__ import annotations

from gpusim.isa.program import Instruction, Program
from gpusim.isa.ptxas.code import Code, Label

MEMORY = frozenset({"ld", "st", "atom", "red", "cp", "ldmatrix"})
ORDERING = frozenset({"st", "atom", "red", "cp", "bar", "membar", "fence", "shfl", "vote", "mma", "ldmatrix"})


class Latencies:
    """Cycles from an instruction's issue until its result may be used, by the config."""

    def __init__(self, cfg):
        self.cfg = cfg
        self._cache: dict[tuple, int] = {}

    def __call__(self, ins: Instruction) -> int:
        key = (ins.opcode, ins.unit, ins.space)
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = self._latency(ins)
        return v

    def _latency(self, ins: Instruction) -> int:
        cfg = self.cfg
        if ins.opcode in ("ld", "atom", "ldmatrix") or (ins.opcode == "cp" and ins.space):
            if ins.space == "shared" or ins.opcode == "ldmatrix":
                return cfg.shared_memory.latency_cycles
            if ins.space == "param":
                return cfg.units["int"].latency_cycles
            return cfg.l2.hit_latency_cycles
        name = ins.unit.value.lower()
        if name not in cfg.units:
            return 1
        return cfg.opcode_timing(ins.opcode, name)[0]


def _is_mem(ins: Instruction) -> bool:
    return ins.opcode in MEMORY and ins.space != "param"


def _is_ordering(ins: Instruction) -> bool:
    return ins.opcode in ORDERING


def schedule_region(region: list[Instruction], latency: Latencies) -> list[Instruction]:
    """`region` (no branch, no exit) in the list scheduler's order."""
    n = len(region)
    if n < 2:
        return region
    lat = [latency(i) for i in region]
    preds: list[dict[int, int]] = [{} for _ in range(n)]  # j -> {i: edge latency}
    last_write: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    last_order = -1
    mem_since: list[int] = []
    for j, ins in enumerate(region):
        p = preds[j]

        def edge(i: int, w: int, p=p) -> None:
            if p.get(i, -1) < w:
                p[i] = w

        for r in ins.regs_read():
            if r in last_write:
                edge(last_write[r], lat[last_write[r]])
        for r in ins.regs_written():
            if r in last_write:
                edge(last_write[r], 0)
            for i in readers.get(r, ()):
                if i != j:
                    edge(i, 0)
        if _is_ordering(ins):
            if last_order >= 0:
                edge(last_order, 0)
            for i in mem_since:
                edge(i, 0)
            last_order, mem_since = j, []
        elif _is_mem(ins):
            if last_order >= 0:
                edge(last_order, 0)
            mem_since.append(j)
        for r in ins.regs_written():
            last_write[r] = j
            readers[r] = []
        for r in ins.regs_read():
            readers.setdefault(r, []).append(j)
    succs: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for j in range(n):
        for i, w in preds[j].items():
            succs[i].append((j, w))
    path = [0] * n  # latency-weighted longest path to the region's end
    for i in range(n - 1, -1, -1):
        path[i] = max([lat[i]] + [w + path[j] for j, w in succs[i]])
    waiting = [len(preds[j]) for j in range(n)]
    ready_at = [0] * n
    candidates = [j for j in range(n) if not waiting[j]]
    order: list[int] = []
    now = 0
    while candidates:
        ready = [j for j in candidates if ready_at[j] <= now]
        if not ready:
            now = min(ready_at[j] for j in candidates)
            continue
        j = max(ready, key=lambda j: (path[j], -j))
        candidates.remove(j)
        order.append(j)
        for s, w in succs[j]:
            ready_at[s] = max(ready_at[s], now + w)
            waiting[s] -= 1
            if not waiting[s]:
                candidates.append(s)
        now += 1
    return [region[j] for j in order]


def schedule(prog: Program, cfg) -> Program:
    latency = Latencies(cfg)
    code = Code.of(prog)
    items: list = []
    region: list[Instruction] = []

    def flush() -> None:
        items.extend(schedule_region(region, latency))
        region.clear()

    for it in code.items:
        if isinstance(it, Label) or it.opcode in ("bra", "exit"):
            flush()
            items.append(it)
        else:
            region.append(it)
    flush()
    new = [it for it in items if not isinstance(it, Label)]
    if all(a is b for a, b in zip(new, prog.instructions, strict=True)):
        return prog
    code.items = items
    return code.build()
