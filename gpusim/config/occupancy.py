"""Theoretical occupancy, following the CUDA Occupancy Calculator (`cuda_occupancy.h`) step by step.

For a block of `block_size` threads using `regs_per_thread` registers and `smem_per_block` bytes of
shared memory, four limits bound the blocks resident on one SM:

- warps:          floor(max_warps_per_sm / ceil(block_size / warp_size)); 0 if the block is larger
                  than max_threads_per_block;
- blocks:         max_blocks_per_sm;
- registers:      a warp is allocated ceil(regs_per_thread * warp_size, register_allocation_unit_size)
                  registers inside one sub-partition's bank of registers_per_sm / subpartitions, so
                  floor(floor(registers_per_sm / subpartitions) / regs_per_warp) * subpartitions warps
                  fit, and floor(that / warps_per_block) blocks. 0 if regs_per_thread exceeds
                  max_registers_per_thread, or the block's registers exceed max_registers_per_block
                  (the hardware check also rounds the warp count up to a multiple of subpartitions);
                  regs_per_thread 0 means no register limit;
- shared memory:  a block is allocated ceil(smem_per_block + reserved_shared_memory_per_block_bytes,
                  shared_memory_allocation_unit_bytes); floor(carve-out / that) blocks fit. 0 if it is
                  more than the per-block opt-in limit (plus the reservation). The carve-out is the
                  largest one (shared_memory_per_sm_bytes) unless `carveout_bytes` is given; a request
                  is rounded up to the next supported carve-out, and, where the requested carve-out
                  cannot hold even one block, the smallest carve-out that can is used (Volta and later).

Active blocks are the minimum of the four; the limiter is the limit that reaches that minimum, ties
broken in the order warps, registers, shared_memory, blocks (the bit order of cuda_occupancy.h's
limiting factors); all tied limits are in `limiters`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from gpusim.config.schema import Config
from gpusim.errors import LaunchError

LIMIT_ORDER = ("warps", "registers", "shared_memory", "blocks")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


@dataclass(frozen=True, slots=True)
class Occupancy:
    """One occupancy calculation. `limits` maps each limit to the blocks per SM it allows (None:
    that resource does not limit at all, as for 0 registers or 0 bytes of shared memory)."""

    block_size: int
    regs_per_thread: int
    smem_per_block: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    limiter: str
    limiters: tuple[str, ...]
    limits: dict[str, int | None] = field(hash=False)
    warps_per_block: int
    regs_per_warp: int
    regs_per_block: int
    smem_allocated_per_block: int
    shared_memory_per_sm_bytes: int
    reason: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["limiters"] = list(self.limiters)
        return d


def occupancy(cfg: Config, block_size: int, regs_per_thread: int, smem_per_block: int = 0,
              carveout_bytes: int | None = None) -> Occupancy:
    """Theoretical occupancy of a kernel on one SM of `cfg` (see the module docstring for the rules).

    Impossible requests (a block too large, too many registers per thread, too much shared memory
    per block) give 0 active blocks with `limiter` naming the cause, not an exception; only
    nonsensical arguments (block_size < 1, negative counts, an unsupported carve-out) raise
    `LaunchError`."""
    sm = cfg.sm
    if block_size < 1:
        raise LaunchError(f"block size must be at least 1, got {block_size}", field="block_size")
    if regs_per_thread < 0:
        raise LaunchError(f"registers per thread must be >= 0, got {regs_per_thread}",
                          field="regs_per_thread")
    if smem_per_block < 0:
        raise LaunchError(f"shared memory per block must be >= 0, got {smem_per_block}",
                          field="smem_per_block")

    warps_per_block = _ceil_div(block_size, sm.warp_size)
    regs_per_warp = _round_up(regs_per_thread * sm.warp_size, sm.register_allocation_unit_size)
    regs_per_block = regs_per_warp * warps_per_block
    smem_alloc = _round_up(smem_per_block + sm.reserved_shared_memory_per_block_bytes,
                           sm.shared_memory_allocation_unit_bytes)
    smem_per_sm = _carveout(cfg, smem_alloc, carveout_bytes)

    limits: dict[str, int | None] = {}
    reason = ""

    # warps
    if block_size > sm.max_threads_per_block:
        limits["warps"] = 0
        reason = (f"block size {block_size} exceeds max_threads_per_block {sm.max_threads_per_block}")
        cause = "block_size"
    else:
        limits["warps"] = sm.max_warps_per_sm // warps_per_block
        cause = ""

    # registers
    regs_assumed = regs_per_warp * _round_up(warps_per_block, sm.subpartitions)
    if regs_per_thread > sm.max_registers_per_thread:
        limits["registers"] = 0
        cause = cause or "registers_per_thread"
        reason = reason or (f"{regs_per_thread} registers per thread exceed max_registers_per_thread "
                            f"{sm.max_registers_per_thread}")
    elif regs_per_block > sm.max_registers_per_block or regs_assumed > sm.max_registers_per_block:
        limits["registers"] = 0
        cause = cause or "registers"
        reason = reason or (f"the block needs {max(regs_per_block, regs_assumed)} registers "
                            f"({regs_per_warp} per warp x {warps_per_block} warps, rounded up to a "
                            f"multiple of {sm.subpartitions} warps for the hardware check), more than "
                            f"max_registers_per_block {sm.max_registers_per_block}")
    elif regs_per_warp == 0:
        limits["registers"] = None
    else:
        warps_per_subpartition = (sm.registers_per_sm // sm.subpartitions) // regs_per_warp
        limits["registers"] = warps_per_subpartition * sm.subpartitions // warps_per_block

    # shared memory
    smem_block_limit = sm.max_shared_memory_per_block_optin_bytes + sm.reserved_shared_memory_per_block_bytes
    if smem_alloc > smem_block_limit:
        limits["shared_memory"] = 0
        cause = cause or "shared_memory_per_block"
        reason = reason or (f"{smem_per_block} bytes of shared memory per block (allocated "
                            f"{smem_alloc}) exceed the opt-in limit "
                            f"{sm.max_shared_memory_per_block_optin_bytes}"
                            + (f" + {sm.reserved_shared_memory_per_block_bytes} reserved"
                               if sm.reserved_shared_memory_per_block_bytes else ""))
    elif smem_alloc == 0:
        limits["shared_memory"] = None
    else:
        limits["shared_memory"] = smem_per_sm // smem_alloc

    limits["blocks"] = sm.max_blocks_per_sm

    finite = {k: v for k, v in limits.items() if v is not None}
    active = min(finite.values())
    limiters = tuple(k for k in LIMIT_ORDER if limits.get(k) == active)
    if active == 0:
        limiter = cause or limiters[0]
        if not reason:
            reason = f"no block fits: limited by {limiter}"
    else:
        limiter = limiters[0]
    active_warps = active * warps_per_block
    return Occupancy(
        block_size=block_size, regs_per_thread=regs_per_thread, smem_per_block=smem_per_block,
        active_blocks_per_sm=active, active_warps_per_sm=active_warps,
        max_warps_per_sm=sm.max_warps_per_sm, occupancy=active_warps / sm.max_warps_per_sm,
        limiter=limiter, limiters=limiters, limits={k: limits[k] for k in LIMIT_ORDER},
        warps_per_block=warps_per_block, regs_per_warp=regs_per_warp, regs_per_block=regs_per_block,
        smem_allocated_per_block=smem_alloc, shared_memory_per_sm_bytes=smem_per_sm, reason=reason,
    )


def _carveout(cfg: Config, smem_alloc: int, requested: int | None) -> int:
    """The shared memory an SM sets aside for blocks: the largest carve-out by default; a requested
    size rounds up to the next supported carve-out; if that cannot hold one block, the smallest
    carve-out that can (or the largest, where none can)."""
    carveouts = cfg.sm.shared_memory_carveouts_bytes
    if requested is None:
        return cfg.sm.shared_memory_per_sm_bytes
    if requested < 0 or requested > carveouts[-1]:
        raise LaunchError(f"carve-out {requested} bytes is outside 0..{carveouts[-1]} "
                          f"(supported: {', '.join(map(str, carveouts))})", field="carveout_bytes")
    chosen = next(c for c in carveouts if c >= requested)
    if chosen < smem_alloc:
        chosen = next((c for c in carveouts if c >= smem_alloc), carveouts[-1])
    return chosen
