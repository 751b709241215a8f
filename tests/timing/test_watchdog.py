"""The cycle limit: a kernel still running at `max_cycles` stops with a diagnosis of its resident warps;
a limit the kernel stays under changes nothing."""

from __future__ import annotations

import re

import pytest

import gpusim
from gpusim.cli.main import main
from gpusim.errors import SimulationLimitError

PARAMS = {"n": 1 << 16}


def test_limit_stops_the_kernel_and_names_the_stuck_warps():
    with pytest.raises(SimulationLimitError) as info:
        gpusim.simulate("reduce_sum", "a100", max_cycles=800, **PARAMS)
    err = info.value
    assert err.cycle == 800
    program = gpusim.load_workload("reduce_sum").program
    assert err.stuck and all(0 <= s["pc"] < len(program.instructions) for s in err.stuck)
    states = {s["state"] for s in err.stuck}
    assert "barrier" in states  # the tree reduction's bar.sync holds warps of a block
    first = err.stuck[0]
    assert f"SM {first['sm']} block {first['block']} warp {first['warp']}: pc {first['pc']} (line {first['line']}:" \
        in str(err)
    assert re.search(r"did not finish within max_cycles=800 .*\d+ warps still resident on \d+ SMs", str(err))


def test_a_limit_above_the_run_changes_nothing():
    free = gpusim.simulate("reduce_sum", "a100", **PARAMS).kernel["cycles"]
    assert gpusim.simulate("reduce_sum", "a100", max_cycles=free + 1, **PARAMS).kernel["cycles"] == free


def test_cli_reports_the_limit(capsys):
    assert main(["run", "reduce_sum", "--set", "n=65536", "--max-cycles", "800"]) == 2
    err = capsys.readouterr().err
    assert "did not finish within max_cycles=800" in err and "raise max_cycles" in err


def test_cycles_are_64_bit_integers_no_kernel_is_cut_short():
    # A pointer chase whose every step (an L2 access: L1 not caching) takes 100,000 cycles runs past
    # 2^31 cycles (the old engine stopped every kernel at 2^30 - 2); the engine's "no event" is 2^62.
    from gpusim.timing.jit import NEVER

    assert NEVER == 1 << 62
    r = gpusim.simulate("pointer_chase", "a100", steps=22_000, max_steps_per_warp=1 << 20,
                        overrides={"dram.latency_cycles": 100_000, "l2.hit_latency_cycles": 100_000,
                                   "l1.caches_global_loads": False})
    assert r.timing.cycles > 2**31
    assert r.timing.cycles == pytest.approx(22_000 * 100_000, rel=0.01)
