"""`gpusim step`: one block, instruction by instruction. The divergent branch pushes the two paths and
the reconvergence entry, the paths run one after the other and pop back; the values shown are the
executor's (saxpy's FMA against numpy)."""

import numpy as np
import pytest

from gpusim.cli import main as cli_main
from gpusim.config import load_config
from gpusim.errors import GpusimError
from gpusim.functional.stepper import mask_text, step_block
from gpusim.workloads import load_workload

EVEN, ODD = "#." * 16, ".#" * 16


@pytest.fixture(autouse=True)
def _step_command_only(monkeypatch):
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", ["step"])


def test_the_stack_pushes_at_the_branch_and_pops_where_the_paths_meet(capsys):
    assert cli_main.main(["step", "divergence", "--set", "n=32", "--set", "block=32"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "divergence block 0 of 1 on a100: 32 threads, 36 steps"
    branch = next(i for i, line in enumerate(lines) if "@%p1 bra EVEN" in line)
    # the branch: odd lanes fall through first (pc 13), even lanes wait at the taken target (pc 15), and the
    # whole warp waits at the reconvergence point (pc 16)
    assert lines[branch + 1] == f"    active {'#' * 32}  (32 lanes)"
    assert lines[branch + 2] == (f"    stack  pc 13 {ODD} rpc 16 | pc 15 {EVEN} rpc 16 | pc 16 {'#' * 32} rpc -   "
                                 "<- PUSH 2 (diverged: the lanes split)")
    assert lines[branch + 4] == f"    active {ODD}  (16 lanes)"
    other = next(i for i, line in enumerate(lines) if "POP 1: the other path runs, from pc 15" in line)
    meet = next(i for i, line in enumerate(lines) if "POP 1: the paths reconverge at pc 16" in line)
    assert branch < other < meet
    assert lines[other - 1] == f"    active {EVEN}  (16 lanes)"
    assert lines[meet - 1] == f"    active {'#' * 32}  (32 lanes)"


def test_values_are_the_executors_own():
    wl = load_workload("saxpy")
    cfg = load_config("a100")
    p = wl.params({"n": 64, "block": 32})
    prep = wl.prepare(p, cfg=cfg)
    steps = step_block(prep.program, prep.launch, prep.args, prep.memory, cfg=cfg, block=1)
    [fma] = [s for s in steps if prep.program.instructions[s.pc].opcode == "fma"]
    inputs = wl.inputs(p, 0)
    x, y = inputs["x"][32:64], inputs["y"][32:64]
    (values,) = fma.values.values()
    np.testing.assert_allclose(values[0], np.float32(2.5) * x + y, rtol=1e-6)
    assert mask_text(fma.active[0]) == "#" * 32 and fma.warps == [0]
    [load_x] = [s for s in steps if "ld.global" in prep.program.instructions[s.pc].text][:1]
    assert load_x.addresses[0] == [prep.args["x"] + 4 * (32 + i) for i in range(32)]


def test_bad_requests_name_what_is_wrong(capsys):
    assert cli_main.main(["step", "saxpy", "--set", "n=64", "--block", "5"]) == 2
    assert "block 5: the grid has blocks 0..0" in capsys.readouterr().err
    assert cli_main.main(["step", "saxpy", "--set", "n=64", "--reg", "%nope"]) == 2
    assert "register '%nope' is not declared by saxpy" in capsys.readouterr().err
    assert cli_main.main(["step", "saxpy", "--set", "n=64", "--warps", "a"]) == 2
    assert "--warps 'a': expected warp numbers, e.g. 0,1" in capsys.readouterr().err
    with pytest.raises(GpusimError, match=r"block -1: the grid has blocks 0..0"):
        wl = load_workload("saxpy")
        prep = wl.prepare({"n": 64})
        step_block(prep.program, prep.launch, prep.args, prep.memory, block=-1)


def test_values_after_a_divergent_split_carry_their_lane_numbers(capsys):
    """On the odd path only lanes 1, 3, 5 ... run: each value shown is labelled with its lane, and it is the
    value the step's register holds in that lane (numbered from the whole warp, not the active ones)."""
    assert cli_main.main(["step", "divergence", "--set", "n=32", "--set", "block=32", "--reg", "%r0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    odd = next(i for i, line in enumerate(lines) if line == f"    active {ODD}  (16 lanes)")
    shown = next(line for line in lines[odd:] if line.startswith("    %r0 "))
    assert shown.startswith("    %r0 (warp 0, first 8 active lanes, lane:value) = ")
    pairs = [p.split(":") for p in shown.split(" = ")[1].split()]
    # %r0 is the global thread index: lane i holds i in block 0
    assert [(int(a), int(b)) for a, b in pairs] == [(i, i) for i in range(1, 16, 2)]
