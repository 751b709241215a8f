"""The builder: makes every unit of a GPU from its configuration — the GigaThread engine, the SMs
(their sub-partitions with schedulers and execution units, warp slots, L1 and shared memory), the
crossbar, the L2 slices and the memory controllers — and runs one kernel's block streams through
them. The structure of the machine reads here, top down; each unit's state and behaviour is in its
own file, and the compiled event loop (engine.py) drives them."""

from __future__ import annotations

import gc
import math
import subprocess
import sys
from collections.abc import Iterable

from gpusim.config import Config
from gpusim.config.occupancy import occupancy
from gpusim.errors import DeadlockError, LaunchError
from gpusim.isa import Program
from gpusim.timing import engine
from gpusim.timing.coalescer import Coalescer
from gpusim.timing.counters import KernelTiming
from gpusim.timing.decode import code_arrays, decode
from gpusim.timing.dispatcher import make_dispatcher
from gpusim.timing.dram import make_dram
from gpusim.timing.feeder import Feeder
from gpusim.timing.interconnect import make_interconnect
from gpusim.timing.jit import NEVER, engine_type, is_cached, to_struct, watch_compile
from gpusim.timing.l1 import make_l1
from gpusim.timing.l2 import make_l2, prefill_dirty
from gpusim.timing.ldst import AddressStage
from gpusim.timing.shared_memory import BankMap, make_shared_memory
from gpusim.timing.sm import E_BARRIER, Machine, make_sms
from gpusim.timing.subpartition import make_subpartitions
from gpusim.timing.warp import make_warps
from gpusim.timing.watchdog import limit_error


class GPU:
    def __init__(self, cfg: Config):
        self.cfg = cfg

    def build(self, program: Program, launch, *, regs_per_thread: int | None = None,
              smem_per_block: int | None = None, per_pc: bool = False,
              issue_log: int = 0) -> tuple[Machine, AddressStage, object]:
        """Every unit of the chip, sized for this kernel's launch (its occupancy sets the warp and
        block slots per SM and, on unified L1/shared designs, the L1's size). Returns the machine, the
        LD/ST units' address stage (which plans accesses before the engine runs) and the occupancy."""
        cfg = self.cfg
        regs = regs_per_thread or program.regs_per_thread
        smem = program.shared_bytes if smem_per_block is None else smem_per_block
        occ = occupancy(cfg, launch.threads_per_block, regs, smem)
        if occ.active_blocks_per_sm == 0:
            raise LaunchError(f"the kernel cannot run on {cfg.name}: {occ.reason}", field="block")
        sms = cfg.chip.sm_count
        nsp = cfg.sm.subpartitions
        blocks = occ.active_blocks_per_sm
        wpb = math.ceil(launch.threads_per_block / cfg.sm.warp_size)
        max_warps = blocks * wpb
        info = decode(program, cfg)
        code = code_arrays(info)
        stage = AddressStage(info, Coalescer(cfg.l1.line_size_bytes, cfg.l1.sector_size_bytes), BankMap(cfg))
        machine = Machine(
            code=code,
            W=make_warps(sms * max_warps, max(1, len(program.registers))),
            P=make_subpartitions(cfg, sms * nsp, max_warps, len(program) if per_pc else 0, (0, 1), issue_log),
            sms=make_sms(sms, nsp, blocks, max_warps, wpb, cfg.units["sync"].latency_cycles,
                         cfg.units["branch"].divergence_cycles or 0),
            l1=make_l1(cfg, sms, l1_size(cfg, occ)),
            smem=make_shared_memory(cfg, sms),
            noc=make_interconnect(cfg),
            l2=make_l2(cfg),
            dram=make_dram(cfg),
            streams=None,
            gte=make_dispatcher(sms * blocks + 4 * blocks + 16, cfg.launch.block_dispatch_cycles, blocks),
        )
        return machine, stage, occ

    def begin(self, M: Machine, stage: AddressStage, blocks: Iterable, limit: int = NEVER, *,
              compile_engine: bool = True) -> tuple:
        """Cycle 0 of a kernel on machine `M` (from `build`): the feeder stages its first blocks and the
        GigaThread engine places them. Returns the machine with its stream pool, the engine's views of it
        and of the events (`Ms`, `E`), the events, the feeder and the views' memo, ready for the engine's
        loop. On a first run the loop is compiled first (`_announce_compile`), unless `compile_engine` is
        off (the second process of a first run, which compiles everything else, `compile_aside`)."""
        feeder = Feeder(blocks, stage, M.code)
        events = engine.make_events(self.cfg.chip.sm_count, limit)
        if compile_engine:
            _announce_compile(M._replace(streams=feeder.st), events)
        E = to_struct(events)  # (its arrays live as long as `events`)
        gte = feeder.refill(M.gte, self.cfg.chip.sm_count * M.gte.blocks_per_sm + M.sms.refill_below)
        M = M._replace(streams=feeder.st, gte=gte)
        views: dict = {}  # each unit's engine view, reused while the unit is not replaced
        Ms = to_struct(M, views)  # the engine's view: the same arrays (kept alive by M), passed by reference
        engine.start(Ms, E)
        return M, Ms, E, events, feeder, views

    def run(self, program: Program, launch, blocks: Iterable, *, regs_per_thread: int | None = None,
            smem_per_block: int | None = None, max_cycles: int | None = None,
            warm_l2: float | None = None, per_pc: bool = False, issue_log: int = 0,
            snapshots: tuple[int, ...] = ()) -> KernelTiming:
        """Simulate one kernel launch. `blocks` yields, in launch order, either the functional executor's
        batch sources (`Executor.stream_batches()`: streams pulled as the warps need them) or whole
        recorded BlockStreams (`gpusim.block_streams(...)`). Past `max_cycles` the run stops with a
        SimulationLimitError describing the warps still resident. `warm_l2` (a fraction in [0, 1];
        None, the default: a cold, empty L2) starts the L2 full of lines the kernel never uses, that
        fraction of them dirty (`l2.prefill_dirty`): the steady state of a long kernel whose data
        overflows the L2, where every allocation evicts a line (sampled simulation, docs/sampling.md).
        The timing's `l2` then holds `prefilled_dirty_bytes`, and `dirty_bytes_at_end` counts only the
        kernel's own lines. `per_pc` also charges every warp state to an instruction (the timing's
        `pc_states`, Nsight's source view; docs/stats.md). `issue_log` N keeps SM 0's issue log, up to N
        entries (the timing's `issue_log`; `gpusim.stats.schedule`). `snapshots` (block counts) also
        keeps, for each k, the counters as they stood once k blocks had retired (the first time the engine
        stopped for the feeder after that; the timing's `snapshots`, KernelTimings in the same order, None
        where the kernel ended first): a sampled run's steady rates (docs/sampling.md)."""
        cfg = self.cfg
        M, stage, occ = self.build(program, launch, regs_per_thread=regs_per_thread, smem_per_block=smem_per_block,
                                   per_pc=per_pc, issue_log=issue_log)
        prefilled = prefill_dirty(M.l2, warm_l2) if warm_l2 is not None else None
        limit = NEVER if max_cycles is None else max_cycles
        M, Ms, E, events, feeder, views = self.begin(M, stage, blocks, limit)
        want = M.sms.refill_below
        # the functional executor and the feeder allocate many short-lived objects and keep no
        # reference cycles alive: collect the young generation less often while the kernel runs
        threshold = gc.get_threshold()
        gc.set_threshold(max(threshold[0], 50_000), *threshold[1:])
        taken: list = [None] * len(snapshots)

        def snap(M) -> None:
            done = int(M.gte.ntimeline[0])
            for i, k in enumerate(snapshots):
                if taken[i] is None and done >= k:
                    taken[i] = KernelTiming.collect(cfg, occ, M)

        try:
            M = _drive(program, feeder, M, Ms, E, limit, want, views, snap if snapshots else None)
        finally:
            gc.set_threshold(*threshold)
        timing = KernelTiming.collect(cfg, occ, M)
        if snapshots:
            timing.snapshots = taken
        if prefilled is not None:
            timing.l2["prefilled_dirty_bytes"] = prefilled
        return timing



def _drive(program, feeder, M, Ms, E, limit, want, views, on_refill=None):
    """Run the engine to the kernel's end, stopping for the feeder whenever it asks (and calling
    `on_refill(M)` then); returns the machine (its stream pool may have been replaced on the way)."""
    while True:
        r = engine.run(Ms, E)
        if r == engine.DONE:
            return M
        if r == engine.REFILL:
            if on_refill is not None:
                on_refill(M)
            gte = feeder.refill(M.gte, 2 * want)
            if feeder.st is not M.streams or gte is not M.gte:  # arrays moved or grew
                M = M._replace(streams=feeder.st, gte=gte)
                Ms = to_struct(M, views)
                units = {id(u) for u in M}
                for k in [k for k in views if k not in units]:  # (replaced units are let go)
                    del views[k]
        elif r == engine.LIMIT:
            raise limit_error(M, program, int(M.sms.now[0]), limit)
        elif r == engine.ERROR and M.sms.error[0] == E_BARRIER:
            raise DeadlockError(f"block {int(M.sms.error[1])}: warps wait at a barrier no live warp will reach",
                                kernel=program.name)
        else:
            raise RuntimeError(f"timing engine stopped unexpectedly (status {r}, error {M.sms.error.tolist()})")


_compiled = False


def _announce_compile(M, events) -> None:
    """Say once, on stderr, that the engine is being compiled, when Numba has no cached machine code
    for it yet (the first run after installing or upgrading gpusim), and compile its loop now, for
    machine `M`'s and `events`' types, while a second process compiles everything else a run calls
    (`compile_aside`: the LD/ST address stage, the feeder's stream pool, the engine's views of the units
    and its start, 11 s of compile) into the same cache on the other core; this one then loads them."""
    global _compiled
    if _compiled:
        return
    _compiled = True
    if getattr(engine.run, "signatures", None):
        return  # compiled in this process already
    if not is_cached(engine.run):
        print("gpusim: compiling the timing engine (first run only; cached afterwards) ...", file=sys.stderr,
              flush=True)
        watch_compile(engine.run, sys.stderr)
        aside = _compile_aside()
        engine.run.compile((engine_type(M), engine_type(events)))
        if aside is not None:
            try:
                aside.wait(timeout=60)
            except subprocess.TimeoutExpired:  # (this process compiles what is left itself, when needed)
                aside.kill()


def _compile_aside():
    """A second process running `gpusim.timing.compile_aside` into the same cache, or None when what it
    compiles is cached already or it cannot be started."""
    from gpusim.timing import feeder, jit, ldst

    if all(is_cached(f) for f in (ldst._plan, feeder._append_steps, jit._make, engine.start)):
        return None
    try:
        return subprocess.Popen([sys.executable, "-c", "from gpusim.timing import compile_aside; compile_aside()"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def l1_size(cfg: Config, occ) -> int:
    """The L1 data cache a kernel gets. Where L1 and shared memory share one array
    (`sm.l1_shared_combined_bytes` > 0), the driver sets the smallest shared-memory carve-out that
    holds the resident blocks' shared memory, and L1 is the rest; elsewhere it is `l1.size_bytes`."""
    combined = cfg.sm.l1_shared_combined_bytes
    if not combined:
        return cfg.l1.size_bytes
    need = occ.active_blocks_per_sm * occ.smem_allocated_per_block
    carveouts = cfg.sm.shared_memory_carveouts_bytes
    carve = next((c for c in carveouts if c >= need), carveouts[-1])
    return max(0, combined - carve)
