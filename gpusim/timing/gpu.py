"""The builder: wires a GPU from its configuration — GigaThread engine, GPCs of SMs (each with its
sub-partitions, L1 and shared memory), the interconnect, the L2 slices and the memory controllers —
and runs one kernel's block streams through it. The structure of the machine reads here, top down."""

from __future__ import annotations

import gc
from collections.abc import Iterable

import simpy

from gpusim.config import Config
from gpusim.config.occupancy import occupancy
from gpusim.errors import LaunchError
from gpusim.isa import Program
from gpusim.timing.coalescer import Coalescer
from gpusim.timing.counters import KernelTiming
from gpusim.timing.decode import decode
from gpusim.timing.dispatcher import GigaThreadEngine
from gpusim.timing.dram import Dram
from gpusim.timing.feeder import UnitMix, block_handles
from gpusim.timing.gpc import GPC
from gpusim.timing.interconnect import Interconnect
from gpusim.timing.l1 import L1Cache
from gpusim.timing.l2 import L2Slice
from gpusim.timing.ldst import AddressStage
from gpusim.timing.sm import SM
from gpusim.timing.subpartition import NEVER
from gpusim.timing.watchdog import limit_error

# The longest kernel the timing model simulates, in cycles (about 0.76 s at 1.41 GHz).
HORIZON = NEVER - 1


class GPU:
    def __init__(self, cfg: Config):
        self.cfg = cfg

    def run(self, program: Program, launch, blocks: Iterable, *, regs_per_thread: int | None = None,
            smem_per_block: int | None = None, max_cycles: int | None = None,
            warm_l2: float | None = None) -> KernelTiming:
        """Simulate one kernel launch. `blocks` yields, in launch order, either the functional executor's
        batch sources (`Executor.stream_batches()`: streams pulled as the warps need them) or whole
        recorded BlockStreams (`gpusim.block_streams(...)`). Past `max_cycles`, and in any case at
        HORIZON (2^30 - 2 cycles), the run stops with a SimulationLimitError describing the warps still
        resident. `warm_l2` (a fraction in [0, 1]; None,
        the default: a cold, empty L2) starts the L2 full of lines the kernel never uses, that fraction
        of them dirty (`L2Slice.prefill_dirty`): the steady state of a long kernel whose data
        overflows the L2, where every allocation evicts a line (sampled simulation, docs/sampling.md).
        The timing's `l2` then holds `prefilled_dirty_bytes`, and `dirty_bytes_at_end` counts only the
        kernel's own lines."""
        cfg = self.cfg
        regs = regs_per_thread or program.regs_per_thread
        smem = program.shared_bytes if smem_per_block is None else smem_per_block
        occ = occupancy(cfg, launch.threads_per_block, regs, smem)
        if occ.active_blocks_per_sm == 0:
            raise LaunchError(f"the kernel cannot run on {cfg.name}: {occ.reason}", field="block")

        env = simpy.Environment()
        dram = Dram(cfg)
        slices = [L2Slice(cfg, dram) for _ in range(cfg.l2.slices)]
        prefilled = None
        if warm_l2 is not None:
            prefilled = sum(sl.prefill_dirty(warm_l2, i) for i, sl in enumerate(slices))
        noc = Interconnect(slices)
        info = decode(program, cfg)
        nregs = max(1, len(program.registers))

        gpcs = [GPC(g) for g in range(cfg.chip.gpcs)]
        sms: list[SM] = []
        engine: list[GigaThreadEngine] = []

        def block_done(sm, block, start, end):
            engine[0].block_done(sm, block, start, end)

        l1_bytes = l1_size(cfg, occ)
        for i in range(cfg.chip.sm_count):
            gpc = gpcs[i % len(gpcs)]
            sm = SM(env, i, gpc.index, cfg, info, nregs, L1Cache(cfg, noc, l1_bytes), block_done)
            gpc.sms.append(sm)
            sms.append(sm)
        stage = AddressStage(info, Coalescer(cfg.l1.line_size_bytes, cfg.l1.sector_size_bytes), sms[0].smem)
        mix = UnitMix(info, len(sms) * cfg.sm.subpartitions)
        engine.append(GigaThreadEngine(env, sms, block_handles(blocks, stage, mix), occ.active_blocks_per_sm,
                                       cfg.launch.block_dispatch_cycles))
        # The model allocates many short-lived objects and keeps no reference cycles alive; collect
        # the young generation less often while it runs.
        threshold = gc.get_threshold()
        gc.set_threshold(max(threshold[0], 50_000), *threshold[1:])
        done = engine[0].process
        # (cycles are kept below NEVER, the sub-partitions' "nothing to do": a longer kernel stops there)
        limit = HORIZON if max_cycles is None else min(max_cycles, HORIZON)
        until = env.any_of([done, env.timeout(limit)])
        try:
            env.run(until=until)
        finally:
            gc.set_threshold(*threshold)
        if not done.triggered:
            raise limit_error(sms, program, int(env.now), limit, horizon=limit == HORIZON)
        timing = KernelTiming.collect(cfg, occ, engine[0], sms, slices, dram, mix)
        if prefilled is not None:
            timing.l2["prefilled_dirty_bytes"] = prefilled
        return timing


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
