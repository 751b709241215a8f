"""Workloads as folders: `workload.yaml` (kernel, size parameters, launch expressions, test sizes,
tolerance) + the kernel (`.sasm`, `.ptx` or `.cu`) + `reference.py` (numpy inputs and expected outputs). See
docs/workloads.md for the format.

    >>> from gpusim.workloads import load_workload
    >>> wl = load_workload("saxpy")
    >>> run = wl.run({"n": 1000}, "a100")
    >>> run.ok, run.result.stats.warp_instructions
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.errors import GpusimError, WorkloadError
from gpusim.functional.launch import Launch
from gpusim.isa import Program, load_kernel
from gpusim.workloads.catalog import (
    WORKLOAD_FILE,
    FieldError,
    field_error,
    find_workload,
    list_workloads,
    read_params,
    read_yaml,
)
from gpusim.workloads.expr import ExprError, evaluate, names_in
from gpusim.workloads.verify import WorkloadRun, compare

REFERENCE_FILE = "reference.py"
ISAS = ("ptx", "sass")
SASS_DEFAULT_ARCH = 80  # a SASS workload's `program` (the default config, a100, is sm_80)
REQUIRED_FIELDS = ("kernel", "params", "launch", "test_sizes")
OPTIONAL_FIELDS = ("name", "description", "isa", "tolerance", "flops", "bytes_moved", "problem", "entry", "args",
                   "reference")
DEFAULT_TOLERANCE = {"rtol": 1.0e-5, "atol": 1.0e-8}  # np.allclose's own defaults
# host copies of a launch's buffers held at once: the inputs, their simulated device memory and, when
# verified, the reference's copies of them (its outputs and the outputs read back are no larger)
HOST_COPIES_VERIFIED = 3
HOST_COPIES_PREPARED = 2


def load_workload(name_or_path: str | os.PathLike, isa: str | None = None) -> Workload:
    """Load a workload by name (`saxpy`, `pointer_chase`) or by the path of its folder (or of its
    workload.yaml). Raises WorkloadError for a malformed folder, AssemblyError for a bad kernel.
    `isa="sass"` runs a CUDA C (`.cu`) workload as the SASS nvcc makes of it, for the architecture of the
    config it runs on (as `isa: sass` in its workload.yaml does); `isa="ptx"` as nvcc's PTX."""
    if isa is not None and isa not in ISAS:
        raise WorkloadError(f"isa {isa!r} is not one of {', '.join(ISAS)}")
    text = os.fspath(name_or_path)
    path = Path(text)
    if path.name == WORKLOAD_FILE and path.is_file():
        path = path.parent
    if not (path / WORKLOAD_FILE).is_file():
        found = None if (os.sep in text or "/" in text) else find_workload(text)
        if found is None:
            if path.is_dir():
                raise WorkloadError(f"{path}: no {WORKLOAD_FILE} in this folder")
            known = ", ".join(list_workloads()) or "none"
            raise WorkloadError(f"unknown workload '{text}'; known workloads: {known} "
                                f"(or give the path of a folder holding a {WORKLOAD_FILE})")
        path = found
    return _load_folder(path, isa)


# ---- the Workload ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """The `launch:` field: one to three expressions per dimension."""

    grid: tuple[str | int | float, ...]
    block: tuple[str | int | float, ...]


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    folder: Path
    program: Program  # for `isa: sass`, the sm_80 program; `program_for(cfg)` gives the config's
    defaults: dict[str, int | float]
    test_sizes: tuple[dict[str, int | float], ...]
    launch_spec: LaunchSpec
    tolerance: dict[str, float]
    flops_expr: str | int | float | None = None
    bytes_expr: str | int | float | None = None
    # the parameters that set the size of the problem (not how it is launched or tiled): points that
    # differ in them solve different problems, and a sweep compares launches only within one size
    problem: tuple[str, ...] = ()
    reference_file: Path | None = None  # `reference:` in workload.yaml; None: the folder's reference.py
    _inputs: Callable[..., dict] = field(default=None, repr=False)
    _reference: Callable[..., dict] = field(default=None, repr=False)
    isa: str = "ptx"  # "ptx": gpusim's PTX-shaped ISA (.sasm, .ptx, a .cu through nvcc's PTX); "sass"
    kernel_file: Path | None = None
    entry: str | None = None
    arg_names: tuple[str, ...] | None = None
    _programs: dict = field(default_factory=dict, repr=False, compare=False)
    # The ptxas model (gpusim.isa.ptxas): whether timed runs compile the kernel for their config first
    # (`for_config`); the kernel as written, and the config hash `program` was compiled for
    ptxas_model: bool = True
    _written: Program | None = field(default=None, repr=False)
    _compiled_for: str | None = field(default=None, repr=False)

    def program_for(self, cfg: Any = None) -> Program:
        """The program that runs on `cfg`: for a SASS workload, the SASS of the config's architecture (its
        compute capability: sm_80 on the A100, sm_90 on the H200); otherwise `program`."""
        if self.isa != "sass" or cfg is None:
            return self.program
        if isinstance(cfg, str | os.PathLike):
            from gpusim.config import load_config

            cfg = load_config(cfg)
        from gpusim.isa.sass import arch_of

        arch = arch_of(cfg)
        if arch not in self._programs:
            self._programs[arch] = _sass_program(self.kernel_file, arch, self.entry, self.arg_names)
        return self._programs[arch]

    @property
    def yaml_path(self) -> Path:
        return self.folder / WORKLOAD_FILE

    @property
    def reference_path(self) -> Path:
        return self.reference_file or self.folder / REFERENCE_FILE

    # -- the kernel as the GPU runs it --
    @property
    def written_program(self) -> Program:
        """The kernel as its file has it (program order), whatever `for_config` made of `program`."""
        return self._written or self.program

    def for_config(self, cfg: Any, ptxas_model: bool | None = None) -> Workload:
        """The workload whose `program` is the kernel as the ptxas model compiles it for `cfg` (a Config:
        moves folded, counted loops unrolled, instructions scheduled; docs/isa.md, "The ptxas model"), which
        every timed run of it uses (`gpusim.simulate`, sampled simulation, `gpusim.launch`). `ptxas_model`
        False (or the workload's own `ptxas_model` False, when not given) gives the kernel in program
        order. Calling it again with the same config returns the workload itself. A SASS workload is machine
        code already (ptxas made it): it is its own."""
        if self.isa == "sass":
            return self
        on = self.ptxas_model if ptxas_model is None else ptxas_model
        written = self.written_program
        if not on:
            if self._compiled_for is None and not self.ptxas_model:
                return self
            return dataclasses.replace(self, program=written, ptxas_model=False, _written=None, _compiled_for=None)
        from gpusim.isa.ptxas import ptxas

        key = cfg.hash()
        if self._compiled_for == key:
            return self
        return dataclasses.replace(self, program=ptxas(written, cfg), ptxas_model=True, _written=written,
                                   _compiled_for=key)

    # -- parameters and launch --
    def params(self, overrides: Mapping[str, Any] | None = None) -> dict[str, int | float]:
        """The defaults merged with `overrides` (values may be numbers or numeric strings, as from a
        command line). An unknown name, or a non-integer for an integer parameter, is a WorkloadError."""
        p = dict(self.defaults)
        for key, value in (overrides or {}).items():
            if key not in self.defaults:
                raise WorkloadError(f"workload '{self.name}': unknown parameter '{key}'; known parameters: "
                                    f"{', '.join(sorted(self.defaults))}")
            p[key] = _param_value(self.name, key, value, self.defaults[key])
        return p

    def launch(self, params: Mapping[str, int | float] | None = None) -> Launch:
        """The grid and block for `params` (defaults if None), from the `launch:` expressions."""
        p = self.params(params)
        dims = {}
        for fld in ("grid", "block"):
            exprs = getattr(self.launch_spec, fld)
            vals = []
            for i, e in enumerate(exprs):
                where = f"launch.{fld}" + (f"[{i}]" if len(exprs) > 1 else "")
                v = _eval(self.yaml_path, where, e, p)
                if isinstance(v, float):
                    if not v.is_integer():
                        raise WorkloadError(f"{self.yaml_path}: {where}: '{e}' gives {v}, not an integer "
                                            f"(use // or ceil_div) with {_show(p)}")
                    v = int(v)
                if v < 1:
                    raise WorkloadError(f"{self.yaml_path}: {where}: '{e}' gives {v}; every dimension "
                                        f"must be at least 1 (with {_show(p)})")
                vals.append(v)
            dims[fld] = vals
        return Launch.make(dims["grid"], dims["block"])

    def flops(self, params: Mapping[str, int | float]) -> float | None:
        """Useful floating-point operations of one run (the `flops:` expression), or None."""
        if self.flops_expr is None:
            return None
        return _eval(self.yaml_path, "flops", self.flops_expr, params)

    # -- data --
    def inputs(self, params: Mapping[str, int | float], seed: int = 0, *, rng: Any = None) -> dict[str, Any]:
        """reference.py's inputs(p, rng) with `numpy.random.default_rng(seed)` (or `rng`, a stand-in with
        the Generator's methods)."""
        rng = np.random.default_rng(seed) if rng is None else rng
        out = _call(self.reference_path, "inputs", self._inputs, dict(params), rng)
        if not isinstance(out, Mapping):
            raise WorkloadError(f"{self.reference_path}: inputs() must return a dict of kernel parameter "
                                f"name -> numpy array or number, got {type(out).__name__}")
        return dict(out)

    def reference(self, params: Mapping[str, int | float],
                  inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """reference.py's reference(p, inputs): the expected contents of the output buffers. It gets
        copies of the input arrays, so it may work in place."""
        copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
        out = _call(self.reference_path, "reference", self._reference, dict(params), copies)
        if not isinstance(out, Mapping) or not out:
            raise WorkloadError(f"{self.reference_path}: reference() must return a non-empty dict of output "
                                f"buffer name -> numpy array, got {out!r:.80}")
        return dict(out)

    def bytes_moved(self, params: Mapping[str, int | float], inputs: Mapping[str, Any]) -> int | float:
        """Bytes an ideal kernel moves to/from DRAM: the `bytes_moved:` expression, else the total size
        of the buffers (each read or written once)."""
        if self.bytes_expr is not None:
            return _eval(self.yaml_path, "bytes_moved", self.bytes_expr, params)
        return sum(int(v.nbytes) for v in inputs.values() if isinstance(v, np.ndarray))

    # -- running --
    def run(self, params: Mapping[str, Any] | None = None, cfg: Any = None, *, seed: int = 0,
            max_steps_per_warp: int | None = None, executor: Callable | None = None) -> WorkloadRun:
        """Run the kernel on the functional executor with fresh inputs and compare its output buffers with
        the numpy reference. `cfg` is a Config, a config name/path (`"a100"`) or None (default limits).
        `executor(program, launch, args, memory, cfg=, max_steps_per_warp=)` replaces
        `gpusim.functional.execute` (the timing model passes one that also simulates cycles)."""
        from gpusim.functional import execute  # the executor sits above the loader's imports

        p = self.params(params)
        launch = self.launch(p)
        if isinstance(cfg, str | os.PathLike):
            from gpusim.config import load_config

            cfg = load_config(cfg)
        self._check_host_memory(p, HOST_COPIES_VERIFIED)
        inputs = self.inputs(p, seed)
        args, buffers = self._bind(inputs)
        self._check_memory(buffers, cfg, HOST_COPIES_VERIFIED - 1)
        expected = self.reference(p, inputs)
        args, buffers, mem = self._load(inputs)
        bytes_moved = self.bytes_moved(p, inputs)
        # The simulated memory holds its own copy of every array, so while the kernel runs the host keeps
        # only each buffer's shape and type (a view of one element broadcast to the shape), not the data.
        buffers = {name: np.broadcast_to(np.zeros((), buf.dtype), buf.shape) for name, buf in buffers.items()}
        del inputs
        kwargs = {} if max_steps_per_warp is None else {"max_steps_per_warp": max_steps_per_warp}
        t0 = time.perf_counter()
        result = (executor or execute)(self.program_for(cfg), launch, args, mem, cfg=cfg, **kwargs)
        exec_seconds = time.perf_counter() - t0
        outputs: dict[str, np.ndarray] = {}
        for name, exp in expected.items():
            if name not in buffers:
                raise WorkloadError(f"{self.reference_path}: reference() returned '{name}', which is not an "
                                    f"array from inputs(); buffers: {', '.join(buffers) or 'none'}")
            buf = buffers[name]
            exp = np.asarray(exp)
            if exp.size != buf.size:
                raise WorkloadError(f"{self.reference_path}: reference()['{name}'] has shape {exp.shape}, "
                                    f"but the buffer from inputs() has shape {buf.shape}")
            expected[name] = exp.reshape(buf.shape)
            outputs[name] = mem.read(args[name], buf.dtype, buf.size).reshape(buf.shape)
        tol = self.tolerance
        mismatches = compare(outputs, expected, rtol=tol["rtol"], atol=tol["atol"])
        return WorkloadRun(workload=self.name, params=p, launch=launch, result=result, outputs=outputs,
                           expected=expected, mismatches=mismatches, bytes_moved=bytes_moved,
                           flops=self.flops(p), seed=seed, exec_seconds=exec_seconds)

    def prepare(self, params: Mapping[str, Any] | None = None, *, seed: int = 0, cfg: Any = None,
                inputs: Mapping[str, Any] | None = None, zeros: bool = False) -> PreparedLaunch:
        """The launch of `params` with its inputs in a fresh global memory, ready for an executor, and
        without computing the numpy reference (for runs that are not verified, such as sampled
        simulation, where the reference of a large size would cost more than the sample). With a `cfg`,
        arrays larger than its `chip.global_memory_bytes` are refused (LaunchError). `inputs`: those of
        `self.inputs(params, seed)` when the caller has them already (they are copied, not kept).
        `zeros`: those inputs are all zeros, which take no host memory until written (fresh pages: their
        zero bytes are not copied into the simulated memory either), so the host's memory is not checked
        against their size: a sample on zeros touches only the pages its blocks write."""
        p = self.params(params)
        launch = self.launch(p)
        if not zeros:
            self._check_host_memory(p, HOST_COPIES_PREPARED)
        inputs = self.inputs(p, seed) if inputs is None else inputs
        self._check_memory(self._bind(inputs)[1], cfg, 0 if zeros else HOST_COPIES_PREPARED - 1)
        args, buffers, mem = self._load(inputs)
        return PreparedLaunch(workload=self.name, params=p, launch=launch, program=self.program_for(cfg), args=args,
                              memory=mem, bytes_moved=self.bytes_moved(p, inputs), flops=self.flops(p),
                              seed=seed)

    def _check_host_memory(self, p: Mapping[str, int | float], copies: int) -> None:
        """Before inputs() allocates anything: refuse a launch whose buffers (estimated by the
        `bytes_moved:` expression, about their total size) need more host memory than is available, `copies`
        times over. Without the expression, `_check_memory` checks the real sizes after inputs()."""
        if self.bytes_expr is None:
            return
        from gpusim.functional.memory import check_host_memory

        est = float(self.bytes_moved(p, {}))
        check_host_memory(copies * est, f"{copies} copies of about {est:,.0f} bytes of buffers, estimated from "
                                        f"bytes_moved: {self.bytes_expr}: the inputs, their simulated device memory"
                                        + (", the reference's outputs" if copies > 2 else ""))

    def _check_memory(self, buffers: Mapping[str, np.ndarray], cfg: Any, copies: int) -> None:
        """Before the simulated memory is allocated: its size against `cfg`'s chip.global_memory_bytes,
        and `copies` more copies of the buffers against the host's available memory."""
        from gpusim.functional.memory import check_device_memory, check_host_memory, footprint

        need = footprint(a.nbytes for a in buffers.values())
        check_device_memory(need, cfg)
        check_host_memory(copies * need, f"{copies} more copies of the {need:,} bytes of buffers inputs() made: "
                                         "their simulated device memory"
                                         + (", the reference's outputs" if copies > 1 else ""))

    def _load(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray], Any]:
        """Bind the inputs and copy the arrays into a fresh global memory: (args with the arrays'
        device addresses, the arrays by name, the memory)."""
        from gpusim.functional import GlobalMemory

        args, buffers = self._bind(inputs)
        nbytes = sum(a.nbytes for a in buffers.values())
        mem = GlobalMemory(capacity=max(1 << 16, nbytes + 512 * (len(buffers) + 1)))
        for name, arr in buffers.items():
            args[name] = mem.alloc_array(arr, name=name)
        return args, buffers, mem

    def _bind(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Split inputs into by-value arguments and arrays for global memory, checking them against the
        kernel's `.param` list."""
        declared = {prm.name: prm.type for prm in self.program.params}
        extra = sorted(set(inputs) - set(declared))
        missing = [n for n in declared if n not in inputs]
        if extra or missing:
            parts = []
            if missing:
                parts.append(f"no value for kernel parameter(s) {', '.join(missing)}")
            if extra:
                parts.append(f"{', '.join(extra)} not kernel parameter(s)")
            raise WorkloadError(f"{self.reference_path}: inputs(): {'; '.join(parts)} (kernel "
                                f"{self.program.name} takes {', '.join(declared) or 'nothing'})")
        args: dict[str, Any] = {}
        buffers: dict[str, np.ndarray] = {}
        for name, value in inputs.items():
            if isinstance(value, np.ndarray):
                if declared[name] not in ("u64", "s64", "b64"):
                    raise WorkloadError(f"{self.reference_path}: inputs()['{name}'] is an array, but the "
                                        f"kernel parameter {name} is .{declared[name]}; pointers are .u64")
                buffers[name] = np.ascontiguousarray(value)
            elif isinstance(value, np.generic):
                args[name] = value.item()
            elif isinstance(value, int | float) and not isinstance(value, bool):
                args[name] = value
            else:
                raise WorkloadError(f"{self.reference_path}: inputs()['{name}'] is {type(value).__name__}; "
                                    "expected a numpy array (a buffer) or a number (by value)")
        return args, buffers


@dataclass
class PreparedLaunch:
    """A workload's launch with its inputs in global memory (`Workload.prepare`): what an executor
    needs, and the figures a result reports. `snapshot()` / `restore()` keep and bring back the
    memory as prepared, so that several runs start from the same inputs."""

    workload: str
    params: dict[str, int | float]
    launch: Launch
    program: Program
    args: dict[str, Any]
    memory: Any  # gpusim.functional.GlobalMemory
    bytes_moved: int | float = 0
    flops: int | float | None = None
    seed: int = 0
    _pristine: np.ndarray | None = field(default=None, repr=False)

    def snapshot(self) -> None:
        self._pristine = self.memory.buffer.copy()

    def restore(self) -> None:
        if self._pristine is not None:
            np.copyto(self.memory.buffer, self._pristine)

    def release(self) -> None:
        """Drop the memory and its snapshot (large for a large kernel) once no run needs them."""
        self.memory = self._pristine = None


# ---- loading --------------------------------------------------------------------------------------

def _load_folder(folder: Path, isa: str | None = None) -> Workload:
    yml = folder / WORKLOAD_FILE
    data, lines = read_yaml(yml)

    err = field_error(yml, lines)
    if not isinstance(data, dict):
        raise WorkloadError(f"{yml}: expected a mapping of fields ({', '.join(REQUIRED_FIELDS)}, ...)")
    unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        raise err(unknown[0], f"unknown field; known fields: {', '.join(REQUIRED_FIELDS + OPTIONAL_FIELDS)}")
    for f in REQUIRED_FIELDS:
        if f not in data:
            raise WorkloadError(f"{yml}: missing field '{f}'")

    name = data.get("name", folder.name)
    if not isinstance(name, str) or name != folder.name:
        raise err("name", f"'{name}' must match the folder name '{folder.name}' "
                  "(workloads load by folder name)")
    defaults = read_params(data, err)
    iraw = isa if isa is not None else data.get("isa", "ptx")
    if iraw not in ISAS:
        raise err("isa", f"expected one of {', '.join(ISAS)}, got {iraw!r}")
    program = _kernel(data, folder, err, iraw)
    launch_spec = _launch_spec(data, err)
    tol = _tolerance(data, err)
    for f in ("flops", "bytes_moved"):
        v = data.get(f)
        if v is not None and (isinstance(v, bool) or not isinstance(v, str | int | float)):
            raise err(f, f"expected a number or an expression of the parameters, got {v!r}")
    problem = _problem(data, defaults, err)
    ref, fns = _reference(data, folder, name, err)
    wl = Workload(name=name, description=str(data.get("description", "") or ""), folder=folder.resolve(),
                  program=program, defaults=defaults, test_sizes=(), launch_spec=launch_spec, tolerance=tol,
                  flops_expr=data.get("flops"), bytes_expr=data.get("bytes_moved"), problem=problem,
                  reference_file=ref, _inputs=fns["inputs"], _reference=fns["reference"], isa=iraw,
                  kernel_file=(folder / data["kernel"]).resolve(), entry=data.get("entry"),
                  arg_names=tuple(data["args"]) if data.get("args") is not None else None)
    if iraw == "sass":
        wl._programs[SASS_DEFAULT_ARCH] = program
    return dataclasses.replace(wl, test_sizes=_test_sizes(wl, data["test_sizes"], yml, err))


def _kernel(data: dict, folder: Path, err: FieldError, isa: str = "ptx") -> Program:
    """`kernel` (and `entry`) loaded, its parameters named by `args` if given (`isa` "sass": a .cu's SASS, sm_80)."""
    kname = data["kernel"]
    if not isinstance(kname, str) or not kname:
        raise err("kernel", f"expected the file name of the kernel (.sasm, .ptx or .cu), got {kname!r}")
    kpath = folder / kname
    if not kpath.is_file():
        raise err("kernel", f"kernel file '{kname}' not found (looked for {kpath})")
    if kpath.suffix not in (".sasm", ".ptx", ".cu"):
        raise err("kernel", f"'{kname}': expected a .sasm, .ptx or .cu file")
    entry = data.get("entry")
    if entry is not None and (not isinstance(entry, str) or not entry):
        raise err("entry", f"expected the kernel's name (mangled or not), got {entry!r}")
    if isa == "sass" and kpath.suffix != ".cu":
        raise err("isa", f"isa: sass needs a CUDA C kernel (.cu), not '{kname}'")
    program = load_kernel(kpath, entry) if isa == "ptx" else _sass_program(kpath, SASS_DEFAULT_ARCH, entry, None)
    # args: the names reference.py gives the kernel's parameters, in order (PTX names them _Z..._param_N)
    araw = data.get("args")
    if araw is not None:
        if not isinstance(araw, list) or not all(isinstance(a, str) and a.isidentifier() for a in araw) \
                or len(set(araw)) != len(araw):
            raise err("args", f"expected a list of distinct parameter names, got {araw!r}")
        if len(araw) != len(program.params):
            raise err("args", f"{len(araw)} names for the {len(program.params)} parameters of kernel "
                      f"{program.name} ({', '.join('.' + p.type for p in program.params)})")
        program = program.with_param_names(araw)
    return program


def _launch_spec(data: dict, err: FieldError) -> LaunchSpec:
    """`launch`: grid and block, each an expression or a list of 1-3."""
    lraw = data["launch"]
    if not isinstance(lraw, dict) or set(lraw) != {"grid", "block"}:
        raise err("launch", "expected {grid: EXPR, block: EXPR} (or lists of 1-3 expressions), "
                  f"got {lraw!r}")
    spec = {}
    for fld in ("grid", "block"):
        v = lraw[fld]
        exprs = tuple(v) if isinstance(v, list) else (v,)
        if not 1 <= len(exprs) <= 3 or any(isinstance(e, bool) or not isinstance(e, str | int | float)
                                           for e in exprs):
            raise err(f"launch.{fld}", f"expected an expression or a list of 1-3 expressions, got {v!r}")
        spec[fld] = exprs
    return LaunchSpec(spec["grid"], spec["block"])


def _tolerance(data: dict, err: FieldError) -> dict[str, float]:
    """`tolerance` over the defaults: rtol and atol."""
    tol = dict(DEFAULT_TOLERANCE)
    traw = data.get("tolerance") or {}
    if not isinstance(traw, dict) or set(traw) - {"rtol", "atol"}:
        raise err("tolerance", f"expected {{rtol: NUMBER, atol: NUMBER}}, got {traw!r}")
    for k, v in traw.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
            raise err(f"tolerance.{k}", f"expected a non-negative number, got {v!r}")
        tol[k] = float(v)
    return tol


def _problem(data: dict, defaults: Mapping[str, int | float], err: FieldError) -> tuple[str, ...]:
    """The problem size: the `problem:` list, else the parameters the flops/bytes_moved expressions read."""
    praw = data.get("problem")
    if praw is None:
        used = {n for f in ("flops", "bytes_moved") for n in names_in(data.get(f))}
        return tuple(k for k in defaults if k in used)
    if not isinstance(praw, list) or not all(isinstance(k, str) for k in praw):
        raise err("problem", f"expected a list of parameter names, got {praw!r}")
    unknown = [k for k in praw if k not in defaults]
    if unknown:
        raise err("problem", f"'{unknown[0]}' is not a parameter; parameters: {', '.join(defaults)}")
    return tuple(dict.fromkeys(praw))


def _reference(data: dict, folder: Path, name: str, err: FieldError) -> tuple[Path, dict[str, Callable]]:
    """reference.py (or the file `reference:` names, relative to the folder: another workload's) and its
    inputs() and reference() functions."""
    rraw = data.get("reference", REFERENCE_FILE)
    if not isinstance(rraw, str) or not rraw.endswith(".py"):
        raise err("reference", f"expected the path of a .py file, got {rraw!r}")
    ref = (folder / rraw).resolve()
    module = _import_reference(ref, name)
    fns = {}
    for fn in ("inputs", "reference"):
        f = getattr(module, fn, None)
        if not callable(f):
            raise WorkloadError(f"{ref}: missing function {fn}(p, {'rng' if fn == 'inputs' else 'inputs'})")
        fns[fn] = f
    return ref, fns


def _test_sizes(wl: Workload, sraw: Any, yml: Path, err: FieldError) -> tuple[dict, ...]:
    """`test_sizes`: each a set of overrides, checked now (and the launch at each)."""
    if not isinstance(sraw, list) or not sraw or not all(isinstance(s, dict) for s in sraw):
        raise err("test_sizes", "expected a non-empty list of parameter overrides, "
                  "e.g. [{n: 1000}, {n: 4099}]")
    sizes = []
    for i, s in enumerate([{}] + sraw):
        try:
            p = wl.params(s)
            wl.launch(p)
            wl.flops(p)
            if wl.bytes_expr is not None:
                _eval(wl.yaml_path, "bytes_moved", wl.bytes_expr, p)
        except WorkloadError as e:
            if i == 0:
                raise
            raise err(f"test_sizes[{i - 1}]", str(e).removeprefix(f"{yml}: ")) from None
        if i:
            sizes.append(p)
    return tuple(sizes)


def _sass_program(kpath: Path, arch: int, entry: str | None, names: tuple[str, ...] | None):
    from gpusim.isa.sass import load_sass

    prog = load_sass(kpath, arch, entry)
    return prog.with_param_names(names) if names is not None and len(names) == len(prog.params) else prog


def _import_reference(path: Path, name: str):
    if not path.is_file():
        raise WorkloadError(f"{path}: missing reference.py (with inputs(p, rng) and reference(p, inputs))")
    modname = f"gpusim_workload_{name}_{abs(hash(str(path.resolve()))):x}"
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's file: report where, in one line
        sys.modules.pop(modname, None)
        raise WorkloadError(f"{path}: cannot import: {type(e).__name__}: {e}") from e
    return module


def _call(path: Path, fname: str, fn: Callable, *args):
    try:
        return fn(*args)
    except GpusimError:
        raise
    except Exception as e:
        raise WorkloadError(f"{path}: {fname}() raised {type(e).__name__}: {e}") from e


def _param_value(wname: str, key: str, value: Any, default: int | float) -> int | float:
    v = value
    if isinstance(v, str):
        try:
            v = int(v, 0)
        except ValueError:
            try:
                v = float(v)
            except ValueError:
                raise WorkloadError(f"workload '{wname}': parameter {key}={value!r} "
                                    "is not a number") from None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, int | float) or (
            isinstance(v, float) and not math.isfinite(v)):
        raise WorkloadError(f"workload '{wname}': parameter {key}={value!r} is not a finite number")
    if isinstance(default, int):
        if isinstance(v, float):
            if not v.is_integer():
                raise WorkloadError(f"workload '{wname}': parameter {key} must be an integer, got {value!r}")
            v = int(v)
        return v
    return float(v)


def _eval(path: Path, fld: str, expr: Any, params: Mapping[str, int | float]) -> int | float:
    try:
        return evaluate(expr, params)
    except ExprError as e:
        raise WorkloadError(f"{path}: {fld}: '{expr}': {e}") from None


def _show(p: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())
