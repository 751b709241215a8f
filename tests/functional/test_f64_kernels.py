"""Double-precision applications through `gpusim.launch` (issue 40): a matrix multiply, a Jacobi stencil and
PolyBench's correlation (sqrt, division) from nvcc's PTX (tests/isa/ptx_fixtures/f64_apps.cu) match numpy,
and their cycles are the FP64 unit's at each config's FP64 rate.

The rate, from the configs: a100 `units.fp64.lanes_per_subpartition: 8` x 4 sub-partitions = 32 FP64
results a clock per SM (the A100 whitepaper's 32 FP64 cores per SM); gtx980 `1` x 4 = 4 (GM204's 4 FP64
units per SMM, 1/32 of its 128 FP32 lanes). So 8x per SM per clock; a warp instruction holds a
sub-partition's FP64 unit ceil(32 / 8) = 4 cycles on a100 and ceil(32 / 1) = 32 on gtx980. (The 16x
often quoted is the ratio of the two chips' FP64:FP32 rates, 1/2 against 1/32: the GTX 980 also has twice
the A100's FP32 lanes per SM.)"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import gpusim
from gpusim.config import load_config
from gpusim.isa.opcodes import Unit
from tests.isa.cu_sources import WAYS, ptx_of

CU = Path(__file__).parents[1] / "isa" / "ptx_fixtures" / "f64_apps.cu"


@pytest.fixture(scope="module", params=WAYS)
def apps(request, tmp_path_factory) -> Path:
    return ptx_of(CU, request.param, tmp_path_factory)


def launch(ptx: Path, kernel: str, grid, block, args: list, **kw):
    return gpusim.launch(ptx, grid, block, args, kernel_name=kernel, **{"mode": "functional", **kw})


def test_dgemm_matches_numpy(apps):
    n = 48
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal((n, n))
    alpha, beta = 1.5, -0.75
    out = c.copy()
    launch(apps, "dgemm", (3, 3), (16, 16), [n, alpha, beta, a, b, out])
    want = alpha * (a @ b) + beta * c
    # the dot product accumulates with fma.rn.f64 in k order, numpy's matmul blocks its own way: both are
    # within the usual bound of n roundings of the sum of |products|
    bound = (n + 2) * np.finfo(np.float64).eps * (alpha * (np.abs(a) @ np.abs(b)) + abs(beta) * np.abs(c))
    assert (np.abs(out - want) <= bound).all()
    assert np.abs(out - want).max() < 1e-13


def test_jacobi_stencil_is_numpy_bit_for_bit(apps):
    n = 40
    a = np.random.default_rng(2).standard_normal((n, n))
    out = np.zeros((n, n))
    launch(apps, "jacobi2d", (3, 3), (16, 16), [n, a, out])
    want = np.zeros((n, n))
    inner = (slice(1, -1), slice(1, -1))
    # the kernel's order: ((((centre + left) + right) + below) + above), then x 0.2 (no multiply to fuse)
    want[inner] = 0.2 * ((((a[1:-1, 1:-1] + a[1:-1, :-2]) + a[1:-1, 2:]) + a[2:, 1:-1]) + a[:-2, 1:-1])
    assert (out.view(np.uint64) == want.view(np.uint64)).all()


def test_correlation_matches_numpy(apps):
    m, n = 40, 70  # columns, rows
    rng = np.random.default_rng(3)
    data = rng.standard_normal((n, m)) * rng.uniform(0.5, 4, m) + rng.uniform(-3, 3, m)
    data[:, 7] = 2.5  # a constant column: its deviation is 0 <= EPS, replaced by 1.0
    work = data.copy()
    mean, std, sym = np.zeros(m), np.zeros(m), np.zeros((m, m))
    fn = float(n)
    launch(apps, "corr_mean", 2, 32, [m, n, fn, work, mean])
    launch(apps, "corr_std", 2, 32, [m, n, fn, work, mean, std])
    launch(apps, "corr_reduce", (2, 5), (32, 16), [m, n, fn, work, mean, std])
    launch(apps, "corr_corr", 2, 32, [m, n, work, sym])
    sym[m - 1, m - 1] = 1.0  # (PolyBench sets the last diagonal element on the host)
    col_sum = np.zeros(m)
    for row in data:  # the kernel's order of additions: bit for bit
        col_sum = col_sum + row
    assert (mean == col_sum / fn).all()
    want_std = np.sqrt(((data - mean) ** 2).sum(axis=0) / fn)
    want_std[want_std <= 0.005] = 1.0
    assert std[7] == 1.0 and np.allclose(std, want_std, rtol=1e-14, atol=0)
    with np.errstate(invalid="ignore"):
        want = np.corrcoef(data, rowvar=False)
    want[7, :] = want[:, 7] = 0.0  # numpy: NaN for the constant column; PolyBench: 0 (its data is all 0)
    want[7, 7] = 1.0
    assert np.abs(sym - want).max() < 1e-13


def fp64_busy(result) -> int:
    return sum(s.unit_busy.get("fp64", 0) for s in result.timing.sms)


@pytest.mark.parametrize("cfg", ["a100", "gtx980"])
def test_f64_instructions_run_on_the_fp64_unit_at_its_rate(apps, cfg):
    n = 32
    rng = np.random.default_rng(4)
    a, b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n)), np.zeros((n, n))
    r = launch(apps, "dgemm", (2, 2), (16, 16), [n, 1.0, 0.0, a, b, c], mode="timing", config=cfg)
    assert np.abs(c - a @ b).max() < 1e-13
    by_unit = r.run.result.stats.by_unit
    assert by_unit[Unit.FP64] >= n * n * n // 32  # one fma.rn.f64 a k a thread, at least
    assert by_unit.get(Unit.FP32, 0) == 0 and by_unit.get(Unit.SFU, 0) == 0
    lanes = load_config(cfg).units["fp64"].lanes_per_subpartition
    # every FP64 warp instruction held its sub-partition's FP64 unit ceil(32 / lanes) cycles
    assert fp64_busy(r) == by_unit[Unit.FP64] * math.ceil(32 / lanes)


def test_fp64_rate_a100_over_gtx980_in_cycles(apps):
    """A block of 16 warps (4 a sub-partition) of eight independent fma.rn.f64 chains each: the FP64 units are
    the bound on both chips (a warp waiting on its loop branch leaves the unit to the other three). 64 more
    trips are 512 more fma.rn.f64 a warp, 4 x 512 = 2,048 more warp instructions a sub-partition: 2,048 x 4 =
    8,192 more cycles on a100 and 2,048 x 32 = 65,536 on gtx980, 8x."""

    def cycles(cfg: str, iters: int) -> int:
        out = np.zeros(512)
        return launch(apps, "dfma_chains", 1, 512, [out, iters], mode="timing", config=cfg).timing.cycles

    delta = {cfg: cycles(cfg, 128) - cycles(cfg, 64) for cfg in ("a100", "gtx980")}
    assert delta["a100"] == pytest.approx(2048 * 4, rel=0.03), delta
    assert delta["gtx980"] == pytest.approx(2048 * 32, rel=0.03), delta
    assert delta["gtx980"] / delta["a100"] == pytest.approx(8, rel=0.03)
