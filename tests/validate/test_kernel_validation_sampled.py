"""`gpusim validate --kernels` samples its large sizes through the sampler (`simulate_sampled`, issue 41)
and shows each estimate's bound: in the row, the terminal table and the Markdown. A 4-SM h200 makes a
small saxpy several waves, so the sampler samples it in a few seconds."""

from __future__ import annotations

import pytest

from gpusim.analysis.kernel_validation import KernelValidation, Pair, simulate_pair
from gpusim.analysis.sampling import simulate_sampled
from gpusim.config import load_config
from gpusim.stats.simulate import simulate

SMALL = {"chip.sm_count": 4}  # a wave: 64 blocks of 256 threads on an h200 SM
PARAMS = {"n": 1 << 19, "block": 256}  # 2,048 blocks: 32 waves


def test_a_sampled_size_carries_the_samplers_estimate_and_its_bound():
    cfg = load_config("h200", overrides=SMALL)
    pair = Pair("saxpy", "large", PARAMS, 100.0)
    row = simulate_pair(pair, "saxpy", "sasm", cfg, sample="on")
    s = simulate_sampled("saxpy", cfg, sample="on", **PARAMS)
    assert row.mode == "sampled" and s.sampled
    assert row.cycles == s.cycles and row.bound_pct == pytest.approx(100 * s.confidence, abs=0.005)
    assert row.verified is None and row.warp_instructions == s.warp_instructions_estimated
    assert row.kernel_us == pytest.approx(s.cycles / cfg.chip.clock_mhz, abs=1e-3)
    # the estimate is the sampler's for the kernel from a cold L2: the full run from one lies within its bound
    full = simulate("saxpy", cfg, verify=False, **PARAMS)
    assert abs(full.cycles - row.cycles) <= row.cycles * row.bound_pct / 100, (full.cycles, row.cycles, row.bound_pct)
    v = KernelValidation("h200", [row])
    assert f"sampled (+-{row.bound_pct:.1f} %)" in v.markdown()
    line = v.table().splitlines()[1].split()
    assert line[-2:] == [f"{row.bound_pct:.1f}", "sampled"]


def test_auto_runs_a_small_size_whole_and_shows_no_bound():
    cfg = load_config("h200", overrides=SMALL)
    row = simulate_pair(Pair("saxpy", "small", {"n": 1 << 14, "block": 256}, 10.0), "saxpy", "sasm", cfg)
    assert row.mode == "full" and row.bound_pct == 0.0 and row.verified is True
    assert KernelValidation("h200", [row]).table().splitlines()[1].split()[-2:] == ["-", "full"]


def test_auto_runs_a_medium_size_whole():
    """A medium pair is simulated whole under auto (no estimate whose bound could miss the full run); with
    --sample on it is sampled like a large one."""
    cfg = load_config("h200", overrides=SMALL)
    medium = simulate_pair(Pair("saxpy", "medium", PARAMS, 100.0), "saxpy", "sasm", cfg)
    assert medium.mode == "full" and medium.bound_pct == 0.0
    on = simulate_pair(Pair("saxpy", "medium", PARAMS, 100.0), "saxpy", "sasm", cfg, sample="on")
    assert on.mode == "sampled" and on.bound_pct > 0
