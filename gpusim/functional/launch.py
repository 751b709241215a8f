"""A kernel launch: grid and block dimensions (the `<<<grid, block>>>` of CUDA), checked against the
hardware limits of a config."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpusim.errors import LaunchError
from gpusim.isa.program import Program
from gpusim.isa.types import TYPES

DEFAULT_MAX_BLOCK_DIMS = (1024, 1024, 64)
DEFAULT_MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
DEFAULT_MAX_THREADS_PER_BLOCK = 1024


def _dims(value, field: str) -> tuple[int, int, int]:
    if isinstance(value, int):
        value = (value,)
    try:
        dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise LaunchError(f"expected an integer or up to 3 integers, got {value!r}", field=field) from None
    if not 1 <= len(dims) <= 3 or any(int(v) != v for v in value):
        raise LaunchError(f"expected 1 to 3 integer dimensions, got {value!r}", field=field)
    return dims + (1,) * (3 - len(dims))


@dataclass(frozen=True, slots=True)
class Launch:
    """`Launch(grid, block)`: each an integer or up to three (x, y, z), stored as three."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    def __post_init__(self):
        object.__setattr__(self, "grid", _dims(self.grid, "grid"))
        object.__setattr__(self, "block", _dims(self.block, "block"))

    @classmethod
    def make(cls, grid, block) -> Launch:
        return cls(grid, block)

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def warps_per_block(self, warp_size: int = 32) -> int:
        return -(-self.threads_per_block // warp_size)

    def validate(self, cfg=None, shared_bytes: int = 0) -> None:
        """Raise LaunchError naming the field when the launch exceeds the hardware's limits."""
        max_block = tuple(cfg.sm.max_block_dims) if cfg else DEFAULT_MAX_BLOCK_DIMS
        max_grid = tuple(cfg.chip.max_grid_dims) if cfg else DEFAULT_MAX_GRID_DIMS
        max_threads = cfg.sm.max_threads_per_block if cfg else DEFAULT_MAX_THREADS_PER_BLOCK
        for name, dims, limits in (("grid", self.grid, max_grid), ("block", self.block, max_block)):
            for axis, v, lim in zip("xyz", dims, limits, strict=True):
                if v < 1:
                    raise LaunchError(f"{name}.{axis} is {v}; must be at least 1", field=name)
                if v > lim:
                    raise LaunchError(f"{name}.{axis} is {v}; the limit is {lim}", field=name)
        if self.threads_per_block > max_threads:
            raise LaunchError(f"{self.threads_per_block} threads per block; the limit is {max_threads}",
                              field="block")
        if cfg is not None and shared_bytes > cfg.sm.max_shared_memory_per_block_optin_bytes:
            raise LaunchError(f"{shared_bytes} bytes of shared memory per block; the limit is "
                              f"{cfg.sm.max_shared_memory_per_block_optin_bytes}", field="shared_memory")


def require_units(program, cfg) -> None:
    """A kernel whose instructions need a unit the config lacks cannot run there: an `mma` on a GPU without
    tensor cores (no `units.tensor`, the GTX 980) is a one-line LaunchError naming the config and the line."""
    if cfg is None or "tensor" in cfg.units:
        return
    ins = next((i for i in program.instructions if i.opcode == "mma"), None)
    if ins is not None:
        raise LaunchError(f"{cfg.name} has no tensor cores (no units.tensor in its config): {ins.mnemonic} at "
                          f"{program.source}:{ins.line} cannot run there", field="mma")


def _param_bytes(program: Program, params: dict) -> bytes:
    names = {p.name for p in program.params}
    for key in params:
        if key not in names:
            raise LaunchError(f"unknown kernel parameter '{key}'; {program.name} takes "
                              + (", ".join(p.name for p in program.params) or "none"), field=key)
    size = max((p.offset + TYPES[p.type].bytes for p in program.params), default=0)
    buf = bytearray(-(-size // 8) * 8)
    for p in program.params:
        if p.name not in params:
            raise LaunchError(f"missing value for .param .{p.type} {p.name}", field=p.name)
        t = TYPES[p.type]
        v = params[p.name]
        try:
            if t.is_float or (t.kind == "b" and isinstance(v, float | np.floating) and t.bits in (32, 64)
                              and getattr(program, "isa", "") == "sass"):
                # (a SASS kernel's parameter typed by its size only: a float is passed as its bits)
                t = TYPES[f"f{t.bits}"] if not t.is_float else t
                arr = np.asarray(float(v), dtype=t.dtype)
            else:
                iv = int(v)
                if iv != v:
                    raise ValueError
                if not -(1 << (t.bits - 1)) <= iv < (1 << t.bits):
                    raise LaunchError(f"{iv} does not fit .{p.type}", field=p.name)
                arr = np.asarray(iv & ((1 << t.bits) - 1), dtype=np.uint64).astype(np.dtype(f"u{t.bytes}"))
        except (TypeError, ValueError):
            raise LaunchError(f"expected a .{p.type} value, got {v!r}", field=p.name) from None
        buf[p.offset: p.offset + t.bytes] = arr.tobytes()
    return bytes(buf)
