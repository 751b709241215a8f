"""The timing model: a compiled discrete-event GPU that turns per-warp instruction streams into cycles."""

from gpusim.timing.counters import KernelTiming, SMCounters
from gpusim.timing.decode import WARP_STATES
from gpusim.timing.gpu import GPU

__all__ = ["GPU", "KernelTiming", "SMCounters", "WARP_STATES", "compile_aside", "warm_up"]


_WARM_UP = """
.kernel warm_up
.param .u64 y
.reg .u32 %r<2>
.reg .u64 %rd<3>
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd0, %r0, 4;
    ld.param.u64 %rd1, [y];
    add.u64 %rd2, %rd1, %rd0;
    st.global.u32 [%rd2], %r0;
    exit;
"""


def _warm_up_kernel():
    """The one-warp warm-up kernel on a one-SM a100: (gpu, program, launch, its block streams, config)."""
    import numpy as np

    from gpusim.config import load_config
    from gpusim.functional.executor import block_streams
    from gpusim.functional.launch import Launch
    from gpusim.functional.memory import GlobalMemory
    from gpusim.isa import assemble

    cfg = load_config("a100", overrides={"chip.sm_count": 1})
    prog = assemble(_WARM_UP, "warm_up.sasm")
    mem = GlobalMemory()
    y = mem.alloc_array(np.zeros(32, np.uint32), "y")
    launch = Launch.make(1, 32)
    return GPU(cfg), prog, launch, block_streams(prog, launch, {"y": y}, mem, cfg=cfg), cfg


def _compile_unreached(M, stage, cfg) -> None:
    """What the one-warp kernel does not reach, compiled (or loaded) too, not in the first timed run that
    needs it: the stream pool's compaction, the shared-memory banks' wavefronts, the address stage, and the
    functional executor's compiled passes for fma.rn.f32 and a shared load (`M`, `stage`: the kernel's
    machine and address stage, from `GPU.build`)."""
    import numpy as np

    from gpusim.functional import ieee
    from gpusim.functional.kernels import load_shared_lanes
    from gpusim.timing.feeder import Feeder
    from gpusim.timing.ldst import compile_plan
    from gpusim.timing.shared_memory import BankMap

    Feeder(iter(()), stage, M.code)._compact(0, 0, 0)
    BankMap(cfg).wavefront_arrays(np.zeros((1, 32), np.int64), 4)
    compile_plan()
    one = np.ones(1, np.float32)
    ieee.fma_rn(one, one, one, np.float32)  # (fma.rn.f32's compiled pass over the lanes)
    lane_smem = np.zeros(1, np.int64)  # a shared load's, of f32 at a 32-bit address (the usual one) ...
    lane_smem.flags.writeable = False  # ... with the batch's lane offsets, which are read-only
    load_shared_lanes(np.zeros(1, np.uint32), np.int64(0), np.zeros(1, np.int64), lane_smem, 2, 4, 4, one, one.copy())


def warm_up() -> float:
    """Compile (the first run after installing) or load from Numba's on-disk cache the timing engine's
    machine code, by timing a one-warp kernel; returns the seconds it took. `gpusim bench` reports it
    and calls it before timing anything; the test session calls it first, so that tests that start
    gpusim in subprocesses find the engine in the cache."""
    import time

    t0 = time.perf_counter()
    gpu, prog, launch, streams, cfg = _warm_up_kernel()
    gpu.run(prog, launch, streams)
    M, stage, _ = gpu.build(prog, launch)
    _compile_unreached(M, stage, cfg)
    return time.perf_counter() - t0


def compile_aside() -> None:
    """What the second process of a first run does while the first compiles the engine's loop (gpu.py
    `_announce_compile`): compile into the shared cache everything else a simulation calls compiled — the
    engine's views of the units (a constructor per unit), its start, the feeder's stream pool, the
    address stage — by taking the warm-up kernel to cycle 0, short of the loop."""
    gpu, prog, launch, streams, cfg = _warm_up_kernel()
    M, stage, _ = gpu.build(prog, launch)
    gpu.begin(M, stage, streams, compile_engine=False)
    _compile_unreached(M, stage, cfg)
