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
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.errors import GpusimError, LaunchError
from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.isa import Program, load_kernel
from gpusim.isa.ptx import with_dynamic_shared
from gpusim.isa.ptxas import ptxas
from gpusim.isa.types import TYPES
from gpusim.stats import SimResult
from gpusim.stats.simulate import configure, timed_execute
from gpusim.workloads.verify import WorkloadRun

MODES = ("timing", "functional")
ISAS = ("ptx", "sass")


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
           max_steps_per_warp: int | None = None, max_cycles: int | None = None, isa: str = "ptx",
           ptxas_model: bool = True):
    """Run `kernel` (a .ptx, .cu or .sasm path, PTX text, or an assembled Program) over `grid` x `block`
    (an int or up to three) with `args`: numpy arrays (passed as pointers: copied into simulated global
    memory and back into the same arrays afterwards) and numbers or numpy scalars (by value), in the
    kernel's parameter order. `kernel_name` picks a kernel of a file holding several (mangled or
    demangled name); `shared_bytes`, the dynamic shared memory of an `extern __shared__` array.
    `config`: a built-in name, a YAML path or a Config. mode "timing" returns the SimResult (cycles,
    metrics, verdict); mode "functional" (values and instruction counts only) the WorkloadRun, whose
    `.result.stats` holds the counters. Timed, the kernel runs as the ptxas model compiles it for the
    config (gpusim.isa.ptxas; `ptxas_model=False`: in program order, as written); "functional" runs it as
    written (its instruction counts are the kernel's own). `isa="sass"` runs the machine code instead: the
    SASS nvcc makes of a .cu for the config's architecture (sm_80 on a100, sm_90 on h200; the cubin checked
    in beside it when there is one), or a .cubin / .sass listing, timed by its control codes (docs/isa.md,
    "SASS"; the ptxas model does not apply)."""
    if mode not in MODES:
        raise LaunchError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}", field="mode")
    if isa not in ISAS:
        raise LaunchError(f"unknown isa {isa!r}; expected one of {', '.join(ISAS)}", field="isa")
    lnch = Launch.make(grid, block)
    cfg = configure(config)
    if isa == "sass" or getattr(kernel, "isa", "") == "sass":
        from gpusim.isa.sass import arch_of, load_sass

        program = kernel if getattr(kernel, "isa", "") == "sass" else load_sass(kernel, arch_of(cfg), kernel_name)
        if shared_bytes:
            program = replace(program, shared_window=program.shared_window + shared_bytes)
    else:
        program = kernel if isinstance(kernel, Program) else load_kernel(kernel, kernel_name,
                                                                          local_threads=lnch.threads_per_block)
        if shared_bytes:
            program = with_dynamic_shared(program, shared_bytes)
        if ptxas_model and mode == "timing":  # timed: the kernel as ptxas compiles it (gpusim.isa.ptxas)
            program = ptxas(program, cfg)
    values, arrays = _bind(program, args)
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


# ---- kernels from Python GPU languages ---------------------------------------------------------------

def numba_abi_args(args: Sequence[Any]) -> list[Any]:
    """`args` as the PTX of a Numba `@cuda.jit` kernel takes them: each array is the struct Numba passes
    by value, flattened into consecutive parameters (meminfo, parent, nitems, itemsize, data, shape[ndim],
    strides[ndim]; numba-cuda's `ArrayModel`), meminfo and parent null (no Python objects on a device);
    other arguments pass as they are."""
    out: list[Any] = []
    for a in args:
        if isinstance(a, np.ndarray):
            out += [0, 0, a.size, a.itemsize, a, *a.shape, *a.strides]
        else:
            out.append(a)
    return out


class CompiledKernel:
    """A kernel compiled from Python to PTX, launched on gpusim: `k[grid, block](*args)` (Numba's form) or
    `k.launch(grid, block, args, config=..., mode=...)`; `.ptx` is the text, `.program` what gpusim runs."""

    def __init__(self, ptx: str, name: str, shared_bytes: int = 0):
        self.ptx, self.shared_bytes = ptx, shared_bytes
        self.program = load_kernel(ptx)
        self.name = name

    def abi_args(self, args: Sequence[Any]) -> list[Any]:
        return list(args)

    def launch(self, grid, block, args: Sequence[Any] = (), config: Any = "a100", mode: str = "timing", **kw):
        return launch(self.program, grid, block, self.abi_args(args), config=config, mode=mode,
                      shared_bytes=self.shared_bytes, **kw)

    def __getitem__(self, grid_block):
        grid, block = grid_block
        return lambda *args, **kw: self.launch(grid, block, args, **kw)


class NumbaKernel(CompiledKernel):
    def abi_args(self, args: Sequence[Any]) -> list[Any]:
        return numba_abi_args(args)


class TritonKernel(CompiledKernel):
    """A Triton kernel: launched over `grid` programs of `num_warps` warps each (`k[grid](*args)`); the
    arguments are the non-constexpr ones, the scratch pointers Triton appends are passed null."""

    def __init__(self, ptx: str, name: str, num_warps: int, shared_bytes: int = 0):
        super().__init__(ptx, name, shared_bytes)
        self.num_warps = num_warps

    def abi_args(self, args: Sequence[Any]) -> list[Any]:
        extra = len(self.program.params) - len(args)
        return list(args) + [0] * max(0, extra)

    def launch(self, grid, block=None, args: Sequence[Any] = (), config: Any = "a100", mode: str = "timing", **kw):
        return super().launch(grid, block or 32 * self.num_warps, args, config, mode, **kw)

    def __getitem__(self, grid):
        return lambda *args, **kw: self.launch(grid, None, args, **kw)


def _needs(module: str, extra: str, what: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise LaunchError(f"{what} needs {module} ({exc}); install it: pip install 'gpusim[{extra}]'",
                          field=what) from None


def from_numba(kernel, signature, *, cc: tuple[int, int] = (8, 0), lineinfo: bool = True) -> NumbaKernel:
    """A Numba `@cuda.jit` kernel (or its Python function) compiled for `signature` (Numba's: a string
    such as "void(float32, float32[:], float32[:])" or a tuple of types) with numba-cuda's `compile_ptx`,
    which needs no GPU, ready to launch on gpusim: `from_numba(saxpy, sig)[grid, block](a, x, y)`; the
    numpy arrays are written back as Numba's own launch writes them."""
    cuda = _needs("numba.cuda", "numba", "from_numba")
    fn = getattr(kernel, "py_func", kernel)
    try:
        ptx, _ = cuda.compile_ptx(fn, signature, cc=cc, lineinfo=lineinfo)
    except Exception as exc:  # numba's typing and NVVM errors, many lines: their first line, ours
        first = str(exc).strip().split("\n")[0]
        raise LaunchError(f"numba-cuda could not compile {getattr(fn, '__name__', fn)}: {first}",
                          field="from_numba") from None
    return NumbaKernel(ptx, getattr(fn, "__name__", "kernel"))


def triton_attrs(signature: dict[str, str], aligned: Sequence[str]) -> dict:
    """Triton's `attrs` for ASTSource: the arguments in `aligned` are divisible by 16 (pointers: 16-byte
    aligned), the hint Triton's own launcher derives from the values at run time and which its compiler
    needs to vectorise loads into 16-byte cp.async copies (without it a tl.dot's tiles load element by
    element)."""
    names = list(signature)
    return {(names.index(a),): [["tt.divisibility", 16]] for a in aligned}


def from_triton(kernel, signature: dict[str, str], constexprs: dict[str, Any] | None = None, *,
                num_warps: int = 4, cc: int = 80, num_stages: int | None = None,
                aligned: Sequence[str] = ()) -> TritonKernel | TritonAutotuned:
    """A `@triton.jit` kernel compiled to PTX for `signature` (Triton's: {"x_ptr": "*fp32", "n": "i32",
    "BLOCK": "constexpr"}) and `constexprs` ({"BLOCK": 1024}) on a GPUTarget("cuda", cc, 32), which needs
    no GPU, ready to launch on gpusim: `from_triton(add, sig, {"BLOCK": 1024})[grid](x, y, out, n)`.
    `num_stages`: the software pipeline's depth of a loop (Triton's option; its default when None);
    `aligned`: the arguments divisible by 16 (see triton_attrs). An `@triton.autotune` kernel gives a
    TritonAutotuned: each of its configs compiled (their constexprs over `constexprs`, their num_warps
    and num_stages), the fastest one chosen on gpusim at the first launch of each autotune key."""
    if _is_autotuner(kernel):
        return TritonAutotuned(kernel, signature, constexprs or {}, cc=cc, aligned=aligned)
    return _compile_triton(kernel, signature, constexprs or {}, num_warps=num_warps, cc=cc, num_stages=num_stages,
                           aligned=aligned)


def _compile_triton(kernel, signature: dict[str, str], constexprs: dict[str, Any], *, num_warps: int, cc: int,
                    num_stages: int | None, aligned: Sequence[str]) -> TritonKernel:
    triton = _needs("triton", "triton", "from_triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    options = {"num_warps": num_warps} | ({"num_stages": num_stages} if num_stages is not None else {})
    try:
        src = ASTSource(fn=kernel, signature=signature, constexprs=constexprs,
                        attrs=triton_attrs(signature, aligned))
        compiled = triton.compile(src, target=GPUTarget("cuda", cc, 32), options=options)
    except Exception as exc:
        first = str(exc).strip().split("\n")[0]
        raise LaunchError(f"triton could not compile {getattr(kernel, '__name__', kernel)}: {first}",
                          field="from_triton") from None
    md = compiled.metadata
    return TritonKernel(compiled.asm["ptx"], md.name, md.num_warps, int(md.shared))


def _is_autotuner(kernel) -> bool:
    """An `@triton.autotune` kernel (triton.runtime.autotuner.Autotuner): the jitted function and its configs."""
    return hasattr(kernel, "configs") and hasattr(kernel, "fn") and not callable(kernel.configs)


class TritonAutotuned:
    """An `@triton.autotune` kernel on gpusim: `k[grid](*args)` with `grid` a tuple or, as Triton's, a
    function of the config's constexprs (`lambda meta: (triton.cdiv(n, meta["BLOCK"]),)`). At the first
    launch of each autotune key (the values, or arrays' shapes, of the arguments the autotuner's `key`
    names) every config runs on copies of the arrays and the one with the least simulated kernel time is
    kept; its outputs are written back and its SimResult returned, and later launches of that key run it
    alone. `best` maps each key to the chosen config's index, `timings` to every config's seconds (None
    for one that did not compile or launch, `errors` saying why)."""

    def __init__(self, autotuner, signature: dict[str, str], constexprs: dict[str, Any], *, cc: int = 80,
                 aligned: Sequence[str] = ()):
        self.autotuner, self.signature, self.constexprs = autotuner, dict(signature), dict(constexprs)
        self.configs = list(autotuner.configs)
        if not self.configs:
            raise LaunchError("the autotuned kernel has no configs", field="from_triton")
        self.keys = list(getattr(autotuner, "keys", None) or getattr(autotuner, "key", None) or [])
        self.cc, self.aligned = cc, tuple(aligned)
        self.kernels: dict[int, TritonKernel | LaunchError] = {}
        self.best: dict[tuple, int] = {}
        self.timings: dict[tuple, list[float | None]] = {}
        self.errors: dict[int, str] = {}

    def meta(self, i: int) -> dict[str, Any]:
        """Config `i`'s constexprs over the fixed ones, and its num_warps and num_stages (Triton's `meta`)."""
        c = self.configs[i]
        return {**self.constexprs, **dict(getattr(c, "kwargs", {}) or {}), "num_warps": getattr(c, "num_warps", 4),
                "num_stages": getattr(c, "num_stages", None)}

    def kernel(self, i: int) -> TritonKernel:
        """Config `i` compiled (once); a LaunchError where it does not compile."""
        if i not in self.kernels:
            m = self.meta(i)
            constexprs = {k: v for k, v in m.items() if k not in ("num_warps", "num_stages")}
            try:
                self.kernels[i] = _compile_triton(self.autotuner.fn, self.signature, constexprs,
                                                  num_warps=m["num_warps"], cc=self.cc, num_stages=m["num_stages"],
                                                  aligned=self.aligned)
            except LaunchError as exc:
                self.kernels[i] = exc
        k = self.kernels[i]
        if isinstance(k, LaunchError):
            raise k
        return k

    def key(self, args: Sequence[Any]) -> tuple:
        names = [n for n, t in self.signature.items() if t != "constexpr"]
        values = dict(zip(names, args, strict=False))
        return tuple((n, (v.shape, str(v.dtype)) if isinstance(v, np.ndarray) else v)
                     for n, v in values.items() if n in self.keys)

    def launch(self, grid, args: Sequence[Any] = (), config: Any = "a100", mode: str = "timing", **kw):
        key = self.key(args)
        if key in self.best or mode != "timing":  # (functional mode has no time to tune by: the first config)
            i = self.best.get(key, 0)
            return self.kernel(i).launch(self._grid(grid, i), None, args, config, mode, **kw)
        runs: list[tuple[float, int, list[Any], Any]] = []
        seconds: list[float | None] = []
        for i in range(len(self.configs)):
            copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            try:
                r = self.kernel(i).launch(self._grid(grid, i), None, copies, config, mode, **kw)
            except GpusimError as exc:
                self.errors[i] = str(exc)
                seconds.append(None)
                continue
            seconds.append(r.kernel_seconds)
            runs.append((r.kernel_seconds, i, copies, r))
        self.timings[key] = seconds
        if not runs:
            raise LaunchError(f"no config of the autotuned kernel ran: {'; '.join(self.errors.values())}",
                              field="from_triton")
        _, i, copies, result = min(runs, key=lambda run: (run[0], run[1]))
        self.best[key] = i
        for a, c in zip(args, copies, strict=True):
            if isinstance(a, np.ndarray) and a.flags.writeable:
                a[...] = c
        return result

    def _grid(self, grid, i: int):
        return grid(self.meta(i)) if callable(grid) else grid

    def __getitem__(self, grid):
        return lambda *args, **kw: self.launch(grid, args, **kw)
