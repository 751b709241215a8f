"""Runtime diagnoses name the right things: the lanes that reached a barrier, the kernel's file, pc,
line, block and thread in timing mode as in functional mode, and the limit that stopped a runaway loop."""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest

import gpusim
from gpusim.errors import ConfigError, DeadlockError, KernelFault, LaunchError, SimulationLimitError
from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.functional.executor import DEFAULT_MAX_STEPS_PER_WARP
from gpusim.isa import assemble, assemble_file
from gpusim.stats.simulate import timed_execute

from .kernels import run

GUARDED_BARRIER = """
.kernel guarded
.reg .pred %p
    setp.lt.u32 %p, %tid.x, 5
    @%p bar.sync 0
    exit
"""


def test_a_guarded_barrier_counts_the_lanes_whose_guard_holds():
    with pytest.raises(DeadlockError, match=r"bar.sync reached by 5 of 32 threads of a warp \(barrier in a guard "
                                            r"false on some lanes\)"):
        run(GUARDED_BARRIER, 1, 32, {})


def _fault(mode: str) -> str:
    prog = assemble_file(gpusim.load_workload("saxpy").folder / "saxpy.sasm")
    mem = GlobalMemory()
    args = {"x": mem.alloc_array(np.ones(100, np.float32), "x"), "y": mem.alloc_array(np.ones(100, np.float32), "y"),
            "a": 1.0, "n": 256}
    run_ = execute if mode == "functional" else timed_execute
    with pytest.raises(KernelFault) as err:
        run_(prog, Launch.make(2, 128), args, mem, cfg=gpusim.load_config("a100"))
    return str(err.value), err.value


def test_a_fault_in_timing_mode_names_what_functional_mode_names():
    (functional, f), (timing, t) = _fault("functional"), _fault("timing")
    assert timing == functional
    assert "saxpy.sasm), pc 12, line 24, block (0,0,0), thread (100,0,0), address 0x10190]" in timing
    assert "pc -1" not in timing and timing.count("[kernel") == 1
    assert (t.pc, t.line, t.block, t.thread, t.file) == (12, 24, (0, 0, 0), (100, 0, 0), f.file)
    assert t.file.endswith("saxpy.sasm")


@pytest.mark.parametrize("err", [
    KernelFault("m", kernel="k", pc=3, line=4, source="bra L", block=(1, 0, 0), thread=(2, 0, 0), address=16,
                file="k.sasm"),
    DeadlockError("d", kernel="k", pc=1, line=2), ConfigError("c", file="f.yaml", line=3, field="chip.gpcs"),
    LaunchError("l", field="block"), SimulationLimitError("s", cycle=5, stuck=[1])])
def test_errors_rebuild_from_their_args_as_simpy_and_pickle_do(err):
    for copy in (type(err)(*err.args), pickle.loads(pickle.dumps(err))):
        assert type(copy) is type(err) and str(copy) == str(err) and vars(copy) == vars(err)


SPIN = """
.kernel spin
.reg .u32 %r
    mov.u32 %r, 0
L:
    add.u32 %r, %r, 0
    bra L
"""


@pytest.mark.slow
@pytest.mark.parametrize("timed", [False, True])
def test_a_runaway_loop_at_default_limits_is_named_within_seconds(timed):
    prog = assemble(SPIN, "spin.sasm")
    t0 = time.perf_counter()
    with pytest.raises(KernelFault) as err:
        (timed_execute if timed else execute)(prog, Launch.make(2, 256), {}, GlobalMemory(),
                                             cfg=gpusim.load_config("a100"))
    assert time.perf_counter() - t0 < 30
    msg = str(err.value)
    assert f"more than {DEFAULT_MAX_STEPS_PER_WARP:,} instructions (max_steps_per_warp" in msg
    assert "--max-steps N" in msg and "spin.sasm" in msg
