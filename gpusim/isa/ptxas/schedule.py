"""A list scheduler over each basic block, as ptxas orders SASS: long-latency instructions (global and
shared loads, SFU) issued as early as their dependences allow, so that independent work hides their
latency instead of a consumer waiting right behind its load.

Dependences inside a block: register RAW (weighted by the producer's latency), WAR and WAW; a memory
operation (ld/st/atom/red/cp.async/ldmatrix) never moves across a store, atomic, barrier, fence or
warp-synchronous operation (shfl, vote, mma, ldmatrix, bar), and those keep their order among
themselves; loads may pass loads, and a global and a shared access (each naming its space: the two
never alias) may pass each other. A block's closing branch or exit stays last, and nothing crosses a
guarded `exit` (lanes leave there) or a `bar.sync` (as in SASS, where the FFMAs that use a tile's loads
stay ahead of the barrier that frees the tile). Latencies come from the config: each unit's (or the `opcodes:`
table's) latency, l2.hit_latency_cycles for a global load, shared_memory.latency_cycles for a shared one.

The schedule is cycle-driven, one instruction a cycle: at each step the instruction whose operands are
ready and whose latency-weighted path to the block's end is longest goes next (ties: source order);
when none is ready, time jumps to the earliest. It watches register pressure, as ptxas's does: an
instruction that would raise the values live (32-bit slots, as `Program.regs_per_thread` counts them)
above the budget waits while another ready one does not. The budget is the most a thread may hold with
the SM full (`sm.registers_per_sm / sm.max_threads_per_sm`: 32 on every shipped GPU), or the block's
own peak before scheduling where that is higher (the real sm_90 matmul_tiled uses 32 registers: its
LDS run ahead of the FFMAs about 14 deep, not all 32 of the tile's loads at once)."""

from __future__ import annotations

from gpusim.isa.program import Instruction, Program
from gpusim.isa.ptxas.code import Code, Label
from gpusim.isa.ptxas.dataflow import liveness
from gpusim.isa.types import TYPES

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


ANY = "*"
DISJOINT = frozenset({"ld", "st", "atom", "red"})  # with an explicit space, they touch only that space


def _space_of(ins: Instruction) -> str:
    """The state space a memory operation may touch: `global` or `shared` when the instruction names it
    (the two never alias, so a global load may pass a shared store, as ptxas hoists a tile's second load
    above the first one's st.shared), else ANY (a generic address, cp.async's two spaces, a barrier)."""
    if ins.opcode in DISJOINT and ins.space in ("global", "shared"):
        return ins.space
    return ANY


def _may_alias(a: str, b: str) -> bool:
    """Whether accesses to spaces `a` and `b` (as `_space_of` names them) may touch the same memory."""
    return a == ANY or b == ANY or a == b


class Pressure:
    """Live 32-bit register slots while a region is scheduled: each value (a register's write in the region,
    or its value on entry) is live from its write until its last reader in the region has issued, or to
    the end when it is live after the region."""

    def __init__(self, region: list[Instruction], slots: list[int], live_in: int, live_out: int):
        self.slots = slots
        current: dict[int, int] = {}  # register -> the value a read of it now gets
        self.values: list[tuple[int, bool]] = []  # value -> (register, live after the region)
        self.readers: list[int] = []  # value -> readers not yet scheduled
        self.reads: list[list[int]] = []  # instruction -> values it reads
        self.defines: list[list[int]] = []  # instruction -> values it writes

        def value(r: int, out: bool) -> int:
            self.values.append((r, out))
            self.readers.append(0)
            return len(self.values) - 1

        for r in range(live_in.bit_length()):
            if live_in >> r & 1:
                current[r] = value(r, bool(live_out >> r & 1))
        self.live = sum(slots[self.values[v][0]] for v in current.values())
        for ins in region:
            rs = set(ins.regs_read()) | (set(ins.regs_written()) if ins.guard >= 0 else set())
            got = [current[r] for r in rs if r in current]
            for v in got:
                self.readers[v] += 1
            self.reads.append(got)
            made = []
            for r in ins.regs_written():
                if r in current:  # an earlier value of r is not live after the region once r is written again
                    old = current[r]
                    self.values[old] = (r, False)
                current[r] = v = value(r, bool(live_out >> r & 1))
                made.append(v)
            self.defines.append(made)

    def _alive(self, v: int) -> bool:
        return self.readers[v] > 0 or self.values[v][1]

    def delta(self, j: int) -> int:
        """How the live slots change when instruction j issues."""
        up = sum(self.slots[self.values[v][0]] for v in self.defines[j] if self._alive(v))
        down = sum(self.slots[self.values[v][0]] for v in self.reads[j]
                   if self.readers[v] == 1 and not self.values[v][1])
        return up - down

    def issue(self, j: int) -> None:
        self.live += self.delta(j)
        for v in self.reads[j]:
            self.readers[v] -= 1


def schedule_region(region: list[Instruction], latency: Latencies, pressure: Pressure | None = None,
                    budget: int = 0) -> list[Instruction]:
    """`region` (no branch, no exit) in the list scheduler's order; with `pressure`, keeping the live slots
    within `budget` where a ready instruction allows it."""
    n = len(region)
    if n < 2:
        return region
    lat = [latency(i) for i in region]
    preds: list[dict[int, int]] = [{} for _ in range(n)]  # j -> {i: edge latency}
    last_write: dict[int, int] = {}
    readers: dict[int, list[int]] = {}
    last_order: dict[str, int] = {}  # state space -> its latest ordering operation (ANY: every space's)
    mem_since: dict[str, list[int]] = {}  # state space -> its memory operations since that
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
        k = _space_of(ins)
        if _is_ordering(ins):
            # after every ordering operation of the spaces it may touch, and every memory operation since
            for key, i in last_order.items():
                if _may_alias(k, key):
                    edge(i, 0)
            for key, since in mem_since.items():
                if _may_alias(k, key):
                    for i in since:
                        edge(i, 0)
            if k == ANY:
                last_order, mem_since = {ANY: j}, {}
            else:
                last_order[k], mem_since[k] = j, []
        elif _is_mem(ins):
            for key, i in last_order.items():
                if _may_alias(k, key):
                    edge(i, 0)
            mem_since.setdefault(k, []).append(j)
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
        if pressure is not None:
            # over the budget, only what keeps within it may go; wait for one if none is ready
            within = [j for j in candidates if pressure.live + pressure.delta(j) <= budget]
            if within and all(pressure.live + pressure.delta(j) > budget for j in candidates if ready_at[j] <= now):
                now = max(now, min(ready_at[j] for j in within))
        ready = [j for j in candidates if ready_at[j] <= now]
        if not ready:
            now = min(ready_at[j] for j in candidates)
            continue
        if pressure is None:
            j = max(ready, key=lambda j: (path[j], -j))
        else:
            j = max(ready, key=lambda j: (pressure.live + pressure.delta(j) <= budget, path[j], -j))
            pressure.issue(j)
        candidates.remove(j)
        order.append(j)
        for s, w in succs[j]:
            ready_at[s] = max(ready_at[s], now + w)
            waiting[s] -= 1
            if not waiting[s]:
                candidates.append(s)
        now += 1
    return [region[j] for j in order]


def _peak(pressure: Pressure) -> int:
    """The live slots' peak over the region in its own order (and leaves `pressure` as it found it)."""
    readers = list(pressure.readers)
    live, peak = pressure.live, pressure.live
    for j in range(len(pressure.reads)):
        pressure.issue(j)
        peak = max(peak, pressure.live)
    pressure.readers, pressure.live = readers, live
    return peak


def schedule(prog: Program, cfg) -> Program:
    latency = Latencies(cfg)
    live_in, live_out = liveness(prog)
    slots = [0 if r.type == "pred" else max(1, TYPES[r.type].bits // 32) for r in prog.registers]
    budget = cfg.sm.registers_per_sm // cfg.sm.max_threads_per_sm
    code = Code.of(prog)
    items: list = []
    region: list[Instruction] = []

    def flush() -> None:
        if len(region) > 1:
            pressure = Pressure(region, slots, live_in[region[0].pc], live_out[region[-1].pc])
            items.extend(schedule_region(region, latency, pressure, max(budget, _peak(pressure))))
        else:
            items.extend(region)
        region.clear()

    for it in code.items:
        if isinstance(it, Label) or it.opcode in ("bra", "exit", "bar"):
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
