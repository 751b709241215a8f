"""The cycles of a float32 GEMM (m x k by k x n) on a GPU, from the timing model running `gemm_tiled`
(matmul_tiled with three sizes: 16 x 16 output tiles, one block each, ceil(k / 16) tile steps).

A GEMM too big to simulate in seconds is simulated small and carried up by two straight lines, each
checked against full simulations on a100 (docs/system.md):

- in the tile steps s = ceil(k / 16): a block's work grows by one step's loads and 16 FMAs per step, so
  cycles(s) is the line through the kernel at one and at two steps (within 3% at 8 steps);
- in the waves w = blocks / (blocks resident at once): a GEMM of more than one wave is timed on a
  calibration grid of exactly one wave, and each further wave adds r times the first one's cycles, r
  measured between one and two waves of one step (within 2% at 1.5 waves; proportional scaling would
  be 18% high at two waves, as the first wave also pays the pipeline's fill and drain).

So a GEMM of at most one wave costs two simulations of its own grid; every larger one shares three
calibration simulations per GPU (one wave at one and two steps, two waves at one step)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gpusim.analysis.kernel_cost import blocks_per_wave, extrapolate, kernel_run
from gpusim.config.schema import Config
from gpusim.workloads import load_workload
from gpusim.workloads.loader import Workload

TILE = 16


@functools.cache
def gemm_workload() -> Workload:
    return load_workload("gemm_tiled")


@dataclass(frozen=True, slots=True)
class GemmCost:
    """The cycles of one GEMM and whether they were extrapolated from smaller simulations."""

    m: int
    k: int
    n: int
    cycles: float
    extrapolated: bool


def _grid(blocks: int) -> tuple[int, int]:
    """rows x cols of tiles with rows * cols == blocks, as square as divisors allow."""
    rows = max(d for d in range(1, math.isqrt(blocks) + 1) if blocks % d == 0)
    return rows, blocks // rows


def _cycles(cfg: Config, m: int, k: int, n: int) -> float:
    return kernel_run(gemm_workload(), cfg, m=m, k=k, n=n).cycles


def _in_steps(cfg: Config, m: int, steps: int, n: int) -> float:
    """cycles of an m x n grid at `steps` tile steps: simulated up to two steps, a line beyond."""
    if steps <= 2:
        return _cycles(cfg, m, TILE * steps, n)
    return extrapolate(steps, 1, _cycles(cfg, m, TILE, n), 2, _cycles(cfg, m, 2 * TILE, n))


def gemm_cost(cfg: Config, m: int, k: int, n: int) -> GemmCost:
    """Cycles of C (m x n) = A (m x k) @ B (k x n) on `cfg`'s GPU (module docstring)."""
    wl = gemm_workload()
    steps = -(-k // TILE)
    blocks = -(-m // TILE) * -(-n // TILE)
    wave = blocks_per_wave(wl, cfg, m=m, k=k, n=n)
    if blocks <= wave:
        return GemmCost(m, k, n, _in_steps(cfg, m, steps, n), steps > 2)
    rows, cols = _grid(wave)
    one = _in_steps(cfg, TILE * rows, steps, TILE * cols)
    growth = _cycles(cfg, TILE * rows, TILE, 2 * TILE * cols) / _cycles(cfg, TILE * rows, TILE, TILE * cols) - 1
    return GemmCost(m, k, n, one * (1 + growth * (blocks / wave - 1)), True)
