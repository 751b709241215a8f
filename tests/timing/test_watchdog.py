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


def test_a_kernel_past_the_timing_models_horizon_is_an_error_not_a_hang(monkeypatch):
    # The sub-partitions mark "nothing to do" with the int NEVER, so cycles must stay below it: shrink it
    # (and the horizon GPU.run derives from it) below reduce_sum's 1,604 cycles.
    from gpusim.timing import gpu, sm, subpartition

    for module in (sm, subpartition):
        monkeypatch.setattr(module, "NEVER", 1000)
    monkeypatch.setattr(gpu, "HORIZON", 999)
    with pytest.raises(SimulationLimitError) as info:
        gpusim.simulate("reduce_sum", "a100", **PARAMS)
    text = str(info.value)
    assert info.value.cycle == 999 and "did not finish within the 999 cycles the timing model simulates" in text
    assert "if the workload can be sampled" in text and "raise max_cycles" not in text
    with pytest.raises(SimulationLimitError, match="the 999 cycles the timing model"):
        gpusim.simulate("reduce_sum", "a100", max_cycles=5000, **PARAMS)  # a larger max_cycles is capped


def test_the_horizon_is_below_never():
    from gpusim.timing import gpu, subpartition

    assert gpu.HORIZON < subpartition.NEVER and subpartition.NEVER < 2**30  # a small int: fast comparisons
