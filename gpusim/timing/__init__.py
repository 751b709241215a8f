"""The timing model: a compiled discrete-event GPU that turns per-warp instruction streams into cycles."""

from gpusim.timing.counters import KernelTiming, SMCounters
from gpusim.timing.decode import WARP_STATES
from gpusim.timing.gpu import GPU

__all__ = ["GPU", "KernelTiming", "SMCounters", "WARP_STATES", "warm_up"]


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


def warm_up() -> float:
    """Compile (the first run after installing) or load from Numba's on-disk cache the timing engine's
    machine code, by timing a one-warp kernel; returns the seconds it took. `gpusim bench` reports it
    and calls it before timing anything; the test session calls it first, so that tests that start
    gpusim in subprocesses find the engine in the cache."""
    import time

    import numpy as np

    from gpusim.config import load_config
    from gpusim.functional.executor import block_streams
    from gpusim.functional.launch import Launch
    from gpusim.functional.memory import GlobalMemory
    from gpusim.isa import assemble

    t0 = time.perf_counter()
    cfg = load_config("a100", overrides={"chip.sm_count": 1})
    prog = assemble(_WARM_UP, "warm_up.sasm")
    mem = GlobalMemory()
    y = mem.alloc_array(np.zeros(32, np.uint32), "y")
    launch = Launch.make(1, 32)
    gpu = GPU(cfg)
    gpu.run(prog, launch, block_streams(prog, launch, {"y": y}, mem, cfg=cfg))
    # what the one-warp kernel does not reach, compiled (or loaded) here too, not in the first timed run
    # that needs it: the stream pool's compaction, and the shared-memory banks' wavefronts
    from gpusim.timing.feeder import Feeder
    from gpusim.timing.shared_memory import BankMap

    M, stage, _ = gpu.build(prog, launch)
    Feeder(iter(()), stage, M.code)._compact(0, 0, 0)
    BankMap(cfg).wavefront_arrays(np.zeros((1, 32), np.int64), 4)
    return time.perf_counter() - t0
