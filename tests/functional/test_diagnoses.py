"""Runtime diagnoses name the right things: the lanes that reached a barrier, the kernel's file, pc,
line, block and thread in timing mode as in functional mode, and the limit that stopped a runaway loop."""

from __future__ import annotations

import pickle
import subprocess
import sys
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
    # at default limits the guard stops a kernel on evidence (tests/functional/test_runaway.py), long before
    # the fallback count
    assert msg.startswith("runaway loop: a warp is in a loop it can never leave")
    assert f"after {DEFAULT_MAX_STEPS_PER_WARP:,}" not in msg
    assert "--max-steps N" in msg and "spin.sasm" in msg


# ---- the runaway-loop probe (docs/robustness.md, "The runaway-loop guard") -------------------------------

SPIN_WORKLOAD = """name: spin
description: a loop that never ends{what}
kernel: spin.sasm
params: {{n: 256, block: 256}}
launch: {{grid: "ceil_div(n, block)", block: "block"}}
test_sizes: [{{n: 256}}]
"""
SPIN_REFERENCE = """import numpy as np


def inputs(p, rng):
    return {"y": np.zeros(p["n"], np.float32), "n": p["n"]}


def reference(p, inputs):
    return {"y": np.zeros(p["n"], np.float32)}
"""
# every thread loops forever: plain arithmetic (no global access, so in timing mode one SM runs alone and
# pulls its blocks' batches far ahead of the other warps), or a load and a store of its element each turn
SPIN_KERNELS = {
    "alu": """.kernel spin
.param .u64 y
.param .u32 n
.reg .u32 %r
    mov.u32 %r, 0;
L:
    add.u32 %r, %r, 1;
    bra L;
""",
    "memory": """.kernel spin
.param .u64 y
.param .u32 n
.reg .u32 %r
.reg .u64 %rd<3>
.reg .f32 %f
    mul.wide.u32 %rd0, %tid.x, 4;
    ld.param.u64 %rd1, [y];
    add.u64 %rd2, %rd1, %rd0;
L:
    ld.global.f32 %f, [%rd2];
    add.f32 %f, %f, 1.0;
    st.global.f32 [%rd2], %f;
    bra L;
""",
}


def _spin_workload(folder, kind: str):
    folder.mkdir()
    (folder / "workload.yaml").write_text(SPIN_WORKLOAD.format(what=f" ({kind})"))
    (folder / "reference.py").write_text(SPIN_REFERENCE)
    (folder / "spin.sasm").write_text(SPIN_KERNELS[kind])
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SPIN_KERNELS))
@pytest.mark.parametrize("blocks", [1, 10_000])
@pytest.mark.parametrize("mode", ["timing", "functional"])
def test_gpusim_run_diagnoses_a_runaway_loop_at_default_limits_within_30_seconds(tmp_path, mode, blocks, kind):
    """`gpusim run` of a kernel whose every thread loops forever, 1 or 10,000 blocks of 256 threads, default
    limits. Before the probe, the timing model took over 13 minutes (and 6 GB) for 10,000 blocks, and a loop
    with a load in it took 37 s in functional mode; now each takes under 10 s here."""
    folder = _spin_workload(tmp_path / "spin", kind)
    argv = [sys.executable, "-m", "gpusim", "run", str(folder), "--set", f"n={256 * blocks}"]
    if mode == "functional":
        argv.append("--functional")
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    wall = time.perf_counter() - t0
    assert wall < 30, f"diagnosed after {wall:.1f} s"
    # a KernelFault is a GpusimError: exit status 2, one line (gpusim/cli/main.py)
    assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stdout, proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    msg = lines[0]
    assert msg.startswith("gpusim run: error: runaway loop: a warp is in a loop it can never leave (no path from pc ")
    assert "--max-steps N sets a fixed limit instead" in msg
    assert f"[kernel spin ({folder / 'spin.sasm'}), pc " in msg and ", line " in msg
    assert "block (0,0,0), thread (0,0,0)]" in msg


# the last block's odd lanes loop forever (diverged from the even ones, which wait to reconverge), the other
# blocks end at once: the probe has to pick the right block, and start it from the right SIMT stack
SPIN_LAST = """
.kernel spin_last
.reg .u32 %r<4>
.reg .pred %p<2>
    add.u32 %r0, %ctaid.x, 1
    setp.lt.u32 %p0, %r0, %nctaid.x
    @%p0 exit
    and.b32 %r1, %tid.x, 1
    setp.eq.u32 %p1, %r1, 0
    @%p1 bra DONE
    mov.u32 %r2, 0
L:
    add.u32 %r2, %r2, 1
    bra L
DONE:
    exit
"""


@pytest.mark.parametrize("timed", [False, True])
@pytest.mark.parametrize("src, grid", [(SPIN, 3), (SPIN_LAST, 700)], ids=["spin", "spin_last"])
def test_the_probe_raises_the_fault_the_launch_would_raise(monkeypatch, src, grid, timed):
    """The same message (step, pc, line, block, thread) with the probe as without it."""
    from gpusim.functional import warps

    prog = assemble(src, "k.sasm")
    cfg = gpusim.load_config("a100")

    def fault(probe_at: int) -> str:
        monkeypatch.setattr(warps, "PROBE_AT_STEPS", probe_at)  # where the executor reads it
        with pytest.raises(KernelFault) as err:
            (timed_execute if timed else execute)(prog, Launch.make(grid, 128), {}, GlobalMemory(), cfg=cfg,
                                                 max_steps_per_warp=6000)
        return str(err.value)

    probed, unprobed = fault(1 << 10), fault(1 << 40)
    assert probed == unprobed
    assert "more than 6,000 instructions" in probed and probed.endswith("`bra L`")
    if src is SPIN_LAST:
        assert f"block ({grid - 1},0,0), thread (1,0,0)]" in probed


def test_a_probe_leaves_the_launch_as_it_was(monkeypatch):
    """Long warps that end are probed (a block run ahead on copies) and the launch is unchanged: the same
    values in memory and the same statistics, functional and timed, as with no probe."""
    from gpusim.functional import executor, warps

    wl = gpusim.load_workload("ffma_peak")
    cfg = gpusim.load_config("a100")
    probes = []
    real = executor.Executor.probe_runaway

    def counted(self, *a):
        probes.append(a[-1])
        return real(self, *a)

    monkeypatch.setattr(executor.Executor, "probe_runaway", counted)
    results = {}
    for probe_at in (1 << 10, 1 << 40):
        monkeypatch.setattr(warps, "PROBE_AT_STEPS", probe_at)  # where the executor reads it
        f = wl.run({"n": 4096, "iters": 32}, cfg)
        t = gpusim.simulate(wl, cfg, n=4096, iters=32)
        assert f.ok and t.verified
        timing = {k: v for k, v in t.to_dict().items() if k not in ("wall_seconds", "exec_seconds")}
        results[probe_at] = (f.result.stats, f.outputs["out"].tobytes(), t.run.outputs["out"].tobytes(), timing)
    # per launch (functional, then timed): at default limits a probe runs the block alone for a quarter of the
    # batch's steps, at least 1,024, and the batch is probed again when its steps double, until a probed block
    # ends (here the second)
    assert probes == [1024, 2048] * 2
    assert results[1 << 10] == results[1 << 40]
