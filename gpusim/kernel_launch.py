"""`gpusim.launch`: run a kernel on numpy arrays, the way Numba users launch (`kernel[grid, block](arrays)`).

    >>> import numpy as np, gpusim
    >>> a = np.arange(1000, dtype=np.float32); b = np.ones(1000, np.float32); c = np.zeros_like(a)
    >>> r = gpusim.launch("vecadd.cu", grid=4, block=256, args=[a, b, c, np.uint32(1000)])  # doctest: +SKIP
    >>> c[:3], r.cycles                                                                      # doctest: +SKIP

The arrays are copied into a fresh simulated global memory (each a separate allocation, so an access past
an array's end is a fault, as under compute-sanitizer), the kernel runs, and every array is copied back
into the same numpy array, written by the kernel or not."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.errors import LaunchError
from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.isa import Program, load_kernel
from gpusim.isa.ptx import with_dynamic_shared
from gpusim.isa.types import TYPES
from gpusim.stats import SimResult
from gpusim.stats.simulate import configure, timed_execute
from gpusim.workloads.verify import WorkloadRun

MODES = ("timing", "functional")


def _describe(program: Program) -> str:
    return ", ".join(f".{p.type} {p.name}" for p in program.params) or "no parameters"


def _bind(program: Program, args: Sequence[Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Kernel parameter values by name, and the arrays (by parameter name) that go to global memory."""
    params = program.params
    if isinstance(args, np.ndarray) or not isinstance(args, Sequence):
        raise LaunchError(f"expected a list of arguments in parameter order ({_describe(program)}), got "
                          f"{type(args).__name__}", field="args")
    if len(args) != len(params):
        raise LaunchError(f"kernel {program.name} takes {len(params)} argument(s) ({_describe(program)}), got "
                          f"{len(args)}", field="args")
    values: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for i, (p, a) in enumerate(zip(params, args, strict=True)):
        where = f"args[{i}] (.param .{p.type} {p.name})"
        t = TYPES[p.type]
        if isinstance(a, np.ndarray):
            if not (t.is_int and t.bits == 64):
                raise LaunchError(f"got an array for a .{p.type} parameter; pointers are 64-bit", field=where)
            if not a.flags.c_contiguous:
                raise LaunchError("the array is not C-contiguous (pass np.ascontiguousarray(a), which the kernel "
                                  "would write instead of a)", field=where)
            arrays[p.name] = a
        elif isinstance(a, bool | np.bool_) or not isinstance(a, int | float | np.integer | np.floating):
            raise LaunchError(f"expected a numpy array or a number, got {type(a).__name__}", field=where)
        else:
            v = a.item() if isinstance(a, np.generic) else a
            if t.is_int and (isinstance(v, float) and not v.is_integer()):
                raise LaunchError(f"expected an integer for .{p.type}, got {a!r}", field=where)
            if t.is_int:
                v = int(v)
                if not -(1 << (t.bits - 1)) <= v < (1 << t.bits):
                    raise LaunchError(f"{v} does not fit .{p.type}", field=where)
            values[p.name] = v
    return values, arrays


def launch(kernel: str | Path | Program, grid, block, args: Sequence[Any] = (), config: Any = "a100",
           kernel_name: str | None = None, mode: str = "timing", *, shared_bytes: int = 0,
           max_steps_per_warp: int | None = None, max_cycles: int | None = None):
    """Run `kernel` (a .ptx, .cu or .sasm path, PTX text, or an assembled Program) over `grid` x `block`
    (an int or up to three) with `args`: numpy arrays (passed as pointers: copied into simulated global
    memory and back into the same arrays afterwards) and numbers or numpy scalars (by value), in the
    kernel's parameter order. `kernel_name` picks a kernel of a file holding several (mangled or
    demangled name); `shared_bytes`, the dynamic shared memory of an `extern __shared__` array.
    `config`: a built-in name, a YAML path or a Config. mode "timing" returns the SimResult (cycles,
    metrics, verdict); mode "functional" (values and instruction counts only) the WorkloadRun, whose
    `.result.stats` holds the counters."""
    if mode not in MODES:
        raise LaunchError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}", field="mode")
    program = kernel if isinstance(kernel, Program) else load_kernel(kernel, kernel_name)
    if shared_bytes:
        program = with_dynamic_shared(program, shared_bytes)
    cfg = configure(config)
    values, arrays = _bind(program, args)
    lnch = Launch.make(grid, block)
    nbytes = sum(a.nbytes for a in arrays.values())
    mem = GlobalMemory(capacity=max(1 << 16, nbytes + 512 * (len(arrays) + 1)))
    for name, arr in arrays.items():
        values[name] = mem.alloc_array(arr, name=name)
    kwargs = {} if max_steps_per_warp is None else {"max_steps_per_warp": max_steps_per_warp}
    t0 = time.perf_counter()
    if mode == "timing":
        result = timed_execute(program, lnch, values, mem, cfg=cfg, max_cycles=max_cycles, **kwargs)
    else:
        result = execute(program, lnch, values, mem, cfg=cfg, **kwargs)
    wall = time.perf_counter() - t0
    for name, arr in arrays.items():
        if arr.flags.writeable:
            arr[...] = mem.read(values[name], arr.dtype, arr.size).reshape(arr.shape)
    run = WorkloadRun(workload=program.name, params={}, launch=lnch, result=result,
                      outputs={k: v for k, v in arrays.items()}, expected={}, mismatches={}, bytes_moved=nbytes,
                      exec_seconds=wall)
    if mode == "functional":
        return run
    return SimResult.build(cfg, run, result.timing, wall_seconds=wall)
