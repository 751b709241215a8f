"""gpusim's side of `gpusim exec`: the CUDA runtime calls of one application, served.

A `Session` answers each request of gpusim's runtime library (shim/cudart.c) inside the application:
device memory (exec/memory.py), the registered kernels and variables (exec/modules.py), launches simulated
by the timing model on that memory, and every copy, kernel and event on the system model's timeline
(exec/timeline.py). Errors follow CUDA's rules: a bad argument fails its own call; a kernel fault fails
the next synchronising call and every call after it (a "sticky" error), as on a GPU."""

from __future__ import annotations

import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpusim.config.schema import Config
from gpusim.errors import AssemblyError, GpusimError, KernelFault, LaunchError
from gpusim.exec import device
from gpusim.exec import protocol as P
from gpusim.exec.fatbin import FatbinError, read_fatbin
from gpusim.exec.memory import DeviceMemory
from gpusim.exec.modules import Module, choose, param_sizes, place_variables, ptx_version, variables
from gpusim.exec.protocol import Reply, Request
from gpusim.exec.timeline import LEGACY, Timeline
from gpusim.functional import Launch
from gpusim.isa.ptx import read_ptx, with_dynamic_shared
from gpusim.isa.types import TYPES
from gpusim.stats import SimResult
from gpusim.stats.simulate import timed_execute
from gpusim.workloads.verify import WorkloadRun

MAX_DYNAMIC_SHARED_ATTR = 8  # cudaFuncAttributeMaxDynamicSharedMemorySize
LIMIT_DEFAULTS = {0: 1024, 1: 1 << 20, 2: 8 << 20, 3: 2, 4: 2048}  # cudaLimit* defaults of CUDA 13 (bytes, count)
MEMORY_TYPES = {P.DEVICE: 2, P.MANAGED: 3, P.PINNED: 1}  # kind -> cudaMemoryType


@dataclass
class Function:
    """A kernel the application registered: its host stub's address, its module and its mangled name."""

    module: Module
    name: str
    max_dynamic_shared: int = 0
    programs: dict[int, Any] = field(default_factory=dict)  # local_threads -> Program


@dataclass
class LaunchRow:
    """One kernel launch as `gpusim exec` reports it."""

    index: int
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    stream: str
    cycles: int
    seconds: float
    verdict: str
    op: int  # its operation in the timeline
    result: SimResult | None = None
    fault: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"launch": self.index, "kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
                "shared_bytes": self.shared_bytes, "stream": self.stream, "cycles": self.cycles,
                "seconds": self.seconds, "verdict": self.verdict, "fault": self.fault or None}


def say(line: str) -> None:
    print(f"gpusim: {line}", file=sys.stderr, flush=True)


class Session:
    """The state of one application's CUDA runtime, and the handlers of its requests."""

    def __init__(self, cfg: Config, *, program: str = "program", memory: DeviceMemory | None = None):
        self.cfg, self.program = cfg, program
        self.memory = memory or DeviceMemory(cfg.chip.global_memory_bytes)
        self.timeline = Timeline(cfg)
        self.modules: dict[int, Module] = {}
        self.functions: dict[int, Function] = {}
        self.symbols: dict[int, tuple[int, int]] = {}  # host shadow address -> (device address, size)
        self.module_vars: dict[int, dict[str, int]] = {}  # module id -> variable name -> device address
        self.streams: dict[int, tuple[str, int, int]] = {}  # handle -> (timeline name, flags, priority)
        self.events: dict[int, dict[str, Any]] = {}  # handle -> flags, last record (event name, op index)
        self.registered: list[tuple[int, int, int]] = []  # cudaHostRegister: (start, size, flags)
        self.limits = dict(LIMIT_DEFAULTS)
        self.launches: list[LaunchRow] = []
        self.unsupported: list[str] = []
        self.sticky = P.SUCCESS  # an error every later call returns
        self.pending = P.SUCCESS  # a kernel fault the next synchronising call returns
        self.problems: list[str] = []  # what gpusim said about the program (module errors, faults)
        self._handles = 0x1000
        self.pid = 0
        self.wall = 0.0

    # ---- the loop's entry point --------------------------------------------------------------------
    NO_STICKY = frozenset({"HELLO", "FATBIN", "FATBIN_END", "FUNCTION", "VAR", "UNSUPPORTED", "DEVICE_RESET",
                           "CHECK", "PROPERTIES", "ATTRIBUTE", "SET_DEVICE", "FUNC_NAME"})

    def handle(self, req: Request) -> tuple[int, list[int], bytes]:
        """(status, words, blob) answering one request."""
        fn = getattr(self, "op_" + req.name.lower(), None)
        if fn is None:
            return P.UNKNOWN, [], b""
        if self.sticky and req.name not in self.NO_STICKY:
            return self.sticky, [], b""
        try:
            out = fn(req)
        except Reply as r:
            if r.why and r.status not in (P.NOT_READY,):
                self.problems.append(f"{P.CALLS.get(req.name, req.name)}: {r.why}")
            return r.status, [], b""
        words, blob = (out or ((), b"")) if isinstance(out, tuple) else (out or [], b"")
        return P.SUCCESS, list(words), blob

    def _handle(self) -> int:
        self._handles += 0x10
        return self._handles

    # ---- connection, device -------------------------------------------------------------------------
    def op_hello(self, req):
        self.pid = req.words[0]

    def op_check(self, req):
        return None

    def op_set_device(self, req):
        if req.signed(0) != 0:
            raise Reply(P.INVALID_DEVICE, f"device {req.signed(0)}: gpusim simulates one device, 0")

    def op_properties(self, req):
        if req.signed(0) != 0:
            raise Reply(P.INVALID_DEVICE, f"device {req.signed(0)}: gpusim simulates one device, 0")
        return [], device.properties_bytes(self.cfg)

    def op_attribute(self, req):
        attr, dev = req.signed(0), req.signed(1)
        if dev != 0:
            raise Reply(P.INVALID_DEVICE)
        value = device.attribute(self.cfg, attr)
        if value is None:
            say(f"cudaDeviceGetAttribute: attribute {attr} is not modelled (it returns cudaErrorInvalidValue)")
            raise Reply(P.INVALID_VALUE, f"attribute {attr} is not modelled")
        return [value & (2**64 - 1)]

    def op_mem_info(self, req):
        used = self.memory.in_use[P.DEVICE] + self.memory.in_use[P.MANAGED]
        return [max(0, self.memory.limit - used), self.memory.limit]

    def op_limit(self, req):
        which, set_, value = req.words[0], req.words[1], req.words[2]
        if which not in self.limits:
            raise Reply(P.INVALID_VALUE, f"unknown cudaLimit {which}")
        if set_:
            self.limits[which] = value
            return []
        return [self.limits[which]]

    def op_device_reset(self, req):
        self.memory.release_all(keep=lambda a: a.name.startswith("variable "))
        self.streams.clear()
        self.events.clear()
        self.sticky = self.pending = P.SUCCESS

    def op_unsupported(self, req):
        name = req.blob.decode(errors="replace")
        if name not in self.unsupported:
            self.unsupported.append(name)

    # ---- modules -----------------------------------------------------------------------------------
    def op_fatbin(self, req):
        mid = len(self.modules) + 1
        arch = 10 * device.capability(self.cfg)[0] + device.capability(self.cfg)[1]
        try:
            entries = read_fatbin(req.blob)
            ptx, parch, held = choose(entries, arch)
        except FatbinError as exc:
            ptx, parch, held = None, 0, ()
            self.problems.append(f"a fat binary gpusim cannot read: {exc}")
        mod = Module(mid, ptx, parch, held)
        if ptx is not None:
            mod.variables = variables(ptx)
            mod.params = param_sizes(ptx)
        self.modules[mid] = mod
        self.module_vars[mid] = {}
        return [mid]

    def op_fatbin_end(self, req):
        return None

    def op_function(self, req):
        mod = self.modules.get(req.words[0])
        if mod is not None:
            self.functions[req.words[1]] = Function(mod, req.blob.decode(errors="replace"))

    def op_var(self, req):
        mid, host, size, _constant, managed = req.words[:5]
        name = req.blob.decode(errors="replace")
        mod = self.modules.get(mid)
        var = mod.variables.get(name) if mod is not None else None
        addr, prot = self.memory.allocate(max(int(size), 1), P.MANAGED if managed else P.DEVICE,
                                          f"variable {name}")
        if var is not None and var.init is not None:
            self.memory.write(addr, np.frombuffer(var.init[:size], dtype=np.uint8))
        self.symbols[host] = (addr, int(size))
        if mod is not None:
            self.module_vars[mid][name] = addr
            mod.placed = None
        return [addr, len(prot), *[w for lo, hi, rw in prot for w in (lo, hi, int(rw))]]

    def _placed(self, mod: Module) -> str:
        if mod.placed is None:
            addrs = self.module_vars[mod.id]
            for name, var in mod.variables.items():
                if name not in addrs:  # a variable no host code registered: placed here, initialised
                    addr, _ = self.memory.allocate(max(var.size, 1), P.DEVICE, f"variable {name}")
                    if var.init is not None:
                        self.memory.write(addr, np.frombuffer(var.init, dtype=np.uint8))
                    addrs[name] = addr
            mod.placed = place_variables(mod.ptx, addrs)
        return mod.placed

    def _function(self, host_fn: int) -> Function:
        f = self.functions.get(host_fn)
        if f is None:
            raise Reply(P.INVALID_DEVICE_FUNCTION, f"{host_fn:#x} is not a registered kernel")
        if f.module.ptx is None:
            held = ", ".join(f.module.archs) or "nothing gpusim reads"
            line = (f"kernel {f.name}: the program holds no PTX gpusim can run ({held}); build it with "
                    f"-arch=sm_{f.module.arch or self._arch()} (nvcc then embeds compute_{self._arch()} PTX)")
            if line not in self.problems:
                say(line)
                self.problems.append(line)
            raise Reply(P.NO_KERNEL_IMAGE)
        return f

    def _arch(self) -> int:
        major, minor = device.capability(self.cfg)
        return 10 * major + minor

    def _program(self, f: Function, threads: int):
        if threads not in f.programs:
            text = self._placed(f.module)
            f.programs[threads] = read_ptx(text, f"{self.program}[{f.name}].ptx", f.name, local_threads=threads)
        return f.programs[threads]

    def op_params(self, req):
        f = self._function(req.words[0])
        sizes = f.module.params.get(f.name)
        if sizes is None:
            raise Reply(P.INVALID_DEVICE_FUNCTION, f"kernel {f.name} is not in the program's PTX")
        return [len(sizes), *sizes]

    def op_func_name(self, req):
        f = self.functions.get(req.words[0])
        if f is None:
            raise Reply(P.INVALID_DEVICE_FUNCTION)
        return [], f.name.encode()

    def _loaded(self, req_fn: int, threads: int = 0):
        f = self._function(req_fn)
        try:
            return f, self._program(f, threads or self.cfg.sm.max_threads_per_block)
        except AssemblyError as exc:
            line = f"kernel {f.name} cannot be simulated: {exc}"
            say(line)
            self.problems.append(line)
            raise Reply(P.INVALID_PTX) from None

    def op_func_attributes(self, req):
        f, prog = self._loaded(req.words[0])
        optin = self.cfg.sm.max_shared_memory_per_block_optin_bytes - prog.shared_bytes
        return [], device.function_attributes(
            self.cfg, shared_bytes=prog.shared_bytes, local_bytes=0, regs=prog.regs_per_thread,
            ptx_version=ptx_version(f.module.ptx), max_dynamic_shared=f.max_dynamic_shared or
            max(0, min(optin, self.cfg.sm.max_shared_memory_per_block_bytes - prog.shared_bytes)))

    def op_func_set_attribute(self, req):
        f = self._function(req.words[0])
        attr, value = req.signed(1), req.signed(2)
        if attr == MAX_DYNAMIC_SHARED_ATTR:
            if not 0 <= value <= self.cfg.sm.max_shared_memory_per_block_optin_bytes:
                raise Reply(P.INVALID_VALUE, f"{value} bytes of dynamic shared memory: the device allows "
                                             f"{self.cfg.sm.max_shared_memory_per_block_optin_bytes}")
            f.max_dynamic_shared = value

    def op_occupancy(self, req):
        block, dyn = req.signed(1), req.words[2]
        _f, prog = self._loaded(req.words[0], max(1, block))
        if block <= 0:
            raise Reply(P.INVALID_VALUE, f"block size {block}")
        return [device.active_blocks(self.cfg, block, prog.regs_per_thread, prog.shared_bytes, dyn)]

    # ---- memory ------------------------------------------------------------------------------------
    def op_malloc(self, req):
        size, kind, flags = req.words[:3]
        if self.pending:
            raise Reply(self._take_pending())
        names = {P.DEVICE: "cudaMalloc", P.MANAGED: "cudaMallocManaged", P.PINNED: "cudaMallocHost"}
        addr, prot = self.memory.allocate(size, kind, names.get(kind, "cudaMalloc"), flags)
        return [addr, len(prot), *[w for lo, hi, rw in prot for w in (lo, hi, int(rw))]]

    def op_free(self, req):
        addr, kind = req.words[:2]
        kinds = (P.DEVICE, P.MANAGED) if kind == P.DEVICE else (P.PINNED,)
        self.timeline.host_waits()  # cudaFree synchronises the device
        if self.pending:
            raise Reply(self._take_pending())
        prot = self.memory.release(addr, kinds)
        return [len(prot), *[w for lo, hi, rw in prot for w in (lo, hi, int(rw))]]

    def _where(self, addr: int, n: int, what: str) -> str:
        """'device' or 'host' (pinned host memory and registered ranges: 'pinned'), checking that a device
        range lies in one live allocation."""
        a = self.memory.find(addr) if self.memory.owns(addr) else None
        if self.memory.owns(addr):
            if a is None or addr + n > a.addr + max(a.size, 1):
                end = f"{addr + n:#x}"
                raise Reply(P.INVALID_VALUE, f"{what} {addr:#x}..{end} is not inside one live allocation")
            return "pinned" if a.kind == P.PINNED else "device"
        if addr < 4096 and n:
            raise Reply(P.INVALID_VALUE, f"{what} {addr:#x} is a null pointer")
        for start, size, _flags in self.registered:
            if start <= addr and addr + n <= start + size:
                return "pinned"
        return "host"

    def _stream(self, handle: int) -> str:
        if handle in P.LEGACY_STREAMS:
            return LEGACY
        if handle == P.PER_THREAD_STREAM:
            name = "per-thread"
            self.timeline.stream(name, blocking=False)
            return name
        s = self.streams.get(handle)
        if s is None:
            raise Reply(P.INVALID_RESOURCE_HANDLE, f"stream {handle:#x} does not exist")
        return s[0]

    def _transfer(self, dst: int, src: int, n: int, kind: int, stream: int, async_: int, label: str) -> None:
        if kind not in (P.H2H, P.H2D, P.D2H, P.D2D, P.DEFAULT):
            raise Reply(P.INVALID_MEMCPY_DIRECTION, f"copy kind {kind}")
        name = self._stream(stream)
        if self.pending:
            raise Reply(self._take_pending())
        d, s = self._where(dst, n, "destination"), self._where(src, n, "source")
        if n:
            if s != "device" and d == "device":
                self.timeline.copy(name, "h2d", n, s == "pinned", label)
            elif s == "device" and d != "device":
                self.timeline.copy(name, "d2h", n, d == "pinned", label)
            elif s == "device" and d == "device":
                self.timeline.kernel(name, self.timeline.dram_cycles(2 * n), label + " (device to device)")
        if not async_:
            self.timeline.host_waits([name])

    def op_memcpy(self, req):
        dst, src, n, kind, stream, async_ = req.words[:6]
        self._transfer(dst, src, n, kind, stream, async_, "cudaMemcpy" + ("Async" if async_ else ""))

    def op_memcpy2d(self, req):
        dst, dpitch, src, spitch, width, height, kind, stream, async_ = req.words[:9]
        if width > dpitch or width > spitch:
            raise Reply(P.INVALID_VALUE, f"width {width} is more than a pitch ({dpitch}, {spitch})")
        if height:
            span = (height - 1)
            self._where(dst, span * dpitch + width, "destination")
            self._where(src, span * spitch + width, "source")
        self._transfer(dst, src, width * height, kind, stream, async_, "cudaMemcpy2D" + ("Async" if async_ else ""))

    def _fill(self, dst: int, n: int, stream: int, async_: int, label: str) -> None:
        name = self._stream(stream)
        if self.pending:
            raise Reply(self._take_pending())
        if self._where(dst, n, "destination") == "host":
            raise Reply(P.INVALID_VALUE, f"{dst:#x} is not device memory")
        if n:
            self.timeline.kernel(name, self.timeline.dram_cycles(n), label)
        if not async_:
            self.timeline.host_waits([name])

    def op_memset(self, req):
        dst, _value, n, stream, async_ = req.words[:5]
        self._fill(dst, n, stream, async_, "cudaMemset")

    def op_memset2d(self, req):
        dst, pitch, _value, width, height, stream, async_ = req.words[:7]
        if height:
            self._where(dst, (height - 1) * pitch + width, "destination")
        self._fill(dst, width * height, stream, async_, "cudaMemset2D")

    def op_symbol(self, req):
        s = self.symbols.get(req.words[0])
        if s is None:
            raise Reply(P.INVALID_SYMBOL, f"{req.words[0]:#x} is not a registered __device__ or __constant__ variable")
        return list(s)

    def op_pointer(self, req):
        addr = req.words[0]
        a = self.memory.find(addr) if self.memory.owns(addr) else None
        if a is not None:
            return [MEMORY_TYPES[a.kind], 0, addr, addr if a.kind != P.DEVICE else 0]
        for start, size, _ in self.registered:
            if start <= addr < start + size:
                return [1, 0, 0, addr]
        return [0, -1 & (2**64 - 1), 0, addr]

    def op_host_register(self, req):
        addr, size, flags = req.words[:3]
        if not size or not addr:
            raise Reply(P.INVALID_VALUE, "cudaHostRegister of an empty range")
        for start, n, _ in self.registered:
            if addr < start + n and start < addr + size:
                raise Reply(P.HOST_MEMORY_ALREADY_REGISTERED)
        self.registered.append((addr, size, flags))

    def op_host_unregister(self, req):
        for i, (start, _n, _f) in enumerate(self.registered):
            if start == req.words[0]:
                del self.registered[i]
                return None
        raise Reply(P.HOST_MEMORY_NOT_REGISTERED)

    def op_host_pointer(self, req):
        addr = req.words[0]
        a = self.memory.find(addr) if self.memory.owns(addr) else None
        if a is not None and a.kind == P.PINNED:
            return [addr, a.flags]
        for start, size, _flags in self.registered:
            if start <= addr < start + size:
                say("cudaHostGetDevicePointer: kernels cannot reach registered pageable memory under gpusim exec "
                    "(allocate it with cudaHostAlloc instead); it returns cudaErrorNotSupported")
                raise Reply(P.NOT_SUPPORTED)
        raise Reply(P.INVALID_VALUE, f"{addr:#x} is not pinned host memory")

    # ---- streams and events ------------------------------------------------------------------------
    def op_stream_create(self, req):
        flags, prio = req.words[0], req.signed(1)
        h = self._handle()
        name = f"s{h:x}"
        self.streams[h] = (name, flags, prio)
        self.timeline.stream(name, blocking=not flags & P.STREAM_NON_BLOCKING)
        return [h]

    def op_stream_destroy(self, req):
        if req.words[0] not in self.streams:
            raise Reply(P.INVALID_RESOURCE_HANDLE, f"stream {req.words[0]:#x} does not exist")
        del self.streams[req.words[0]]

    def op_stream_sync(self, req):
        self.timeline.host_waits([self._stream(req.words[0])])
        return self._sync()

    def op_stream_query(self, req):
        self._stream(req.words[0])
        return self._sync()

    def op_stream_info(self, req):
        h = req.words[0]
        if h in P.LEGACY_STREAMS or h == P.PER_THREAD_STREAM:
            return [0, 0]
        s = self.streams.get(h)
        if s is None:
            raise Reply(P.INVALID_RESOURCE_HANDLE)
        return [s[1], s[2] & (2**64 - 1)]

    def op_host_func(self, req):
        self._stream(req.words[0])

    def op_event_create(self, req):
        h = self._handle()
        self.events[h] = {"flags": req.words[0], "record": None}
        return [h]

    def _event(self, handle: int) -> dict[str, Any]:
        e = self.events.get(handle)
        if e is None:
            raise Reply(P.INVALID_RESOURCE_HANDLE, f"event {handle:#x} does not exist")
        return e

    def op_event_destroy(self, req):
        self._event(req.words[0])
        del self.events[req.words[0]]

    def op_event_record(self, req):
        e = self._event(req.words[0])
        e["record"] = self.timeline.record(self._stream(req.words[1]))

    def op_event_sync(self, req):
        e = self._event(req.words[0])
        if e["record"] is not None:
            self.timeline.host_waits(event=e["record"][0])
        return self._sync()

    def op_event_query(self, req):
        self._event(req.words[0])
        return self._sync()

    def op_stream_wait_event(self, req):
        name = self._stream(req.words[0])
        e = self._event(req.words[1])
        if e["record"] is not None:
            self.timeline.wait(name, e["record"][0])

    def op_event_elapsed(self, req):
        a, b = self._event(req.words[0]), self._event(req.words[1])
        if a["flags"] & P.EVENT_DISABLE_TIMING or b["flags"] & P.EVENT_DISABLE_TIMING:
            raise Reply(P.INVALID_RESOURCE_HANDLE, "an event created with cudaEventDisableTiming")
        if a["record"] is None or b["record"] is None:
            raise Reply(P.INVALID_RESOURCE_HANDLE, "an event that was never recorded")
        ms = (self.timeline.time_of(b["record"][1]) - self.timeline.time_of(a["record"][1])) * 1e3
        return [struct.unpack("<Q", struct.pack("<d", ms))[0]]

    # ---- synchronisation ---------------------------------------------------------------------------
    def _take_pending(self) -> int:
        e, self.pending = self.pending, P.SUCCESS
        if e in P.STICKY:
            self.sticky = e
        return e

    def _sync(self):
        if self.pending:
            raise Reply(self._take_pending())
        return None

    def op_device_sync(self, req):
        self.timeline.host_waits()
        return self._sync()

    # ---- launches ----------------------------------------------------------------------------------
    def op_launch(self, req):
        fn, gx, gy, gz, bx, by, bz, shared, stream = req.words[:9]
        f, prog = None, None
        name = self._stream(stream)
        lnch = Launch((gx, gy, gz), (bx, by, bz))
        f = self._function(fn)
        try:
            lnch.validate(self.cfg)
        except LaunchError as exc:
            raise Reply(P.INVALID_CONFIGURATION, f"kernel {f.name}: {exc.reason}") from None
        _f, prog = self._loaded(fn, lnch.threads_per_block)
        limit = max(f.max_dynamic_shared, self.cfg.sm.max_shared_memory_per_block_bytes - prog.shared_bytes)
        if shared > limit:
            raise Reply(P.INVALID_VALUE, f"kernel {f.name}: {shared} bytes of dynamic shared memory (at most "
                                         f"{limit} without cudaFuncSetAttribute)")
        if shared and any(v.dynamic for v in prog.shared):
            prog = with_dynamic_shared(prog, shared)
        values = self._arguments(f, prog, req.blob)
        if self.pending:  # a launch after a fault: the fault is reported here
            raise Reply(self._take_pending())
        t0 = time.perf_counter()
        row = LaunchRow(len(self.launches), f.name, lnch.grid, lnch.block, int(shared), name, 0, 0.0, "", -1)
        try:
            ex = timed_execute(prog, lnch, values, self.memory, cfg=self.cfg)
        except KernelFault as exc:
            row.fault = str(exc)
            self.pending = P.MISALIGNED_ADDRESS if "misaligned" in exc.reason else P.ILLEGAL_ADDRESS
            say(f"kernel {f.name} faulted (the program sees {P.ERROR_NAMES[self.pending]}): {exc}")
            self.problems.append(row.fault)
        except GpusimError as exc:
            row.fault = str(exc)
            self.pending = P.LAUNCH_FAILURE
            say(f"kernel {f.name} failed (the program sees cudaErrorLaunchFailure): {exc}")
            self.problems.append(row.fault)
        else:
            run = WorkloadRun(workload=f.name, params={}, launch=lnch, result=ex, outputs={}, expected={},
                              mismatches={}, exec_seconds=time.perf_counter() - t0)
            row.result = SimResult.build(self.cfg, run, ex.timing, wall_seconds=time.perf_counter() - t0)
            row.cycles = int(row.result.cycles)
            row.seconds = float(row.result.kernel_seconds)
            row.verdict = row.result.verdict.kind
        self.wall += time.perf_counter() - t0
        row.op = self.timeline.kernel(name, row.cycles, f.name)
        self.launches.append(row)

    def _arguments(self, f: Function, prog, blob: bytes) -> dict[str, Any]:
        sizes = f.module.params.get(f.name, [])
        if len(sizes) != len(prog.params):
            raise Reply(P.NOT_SUPPORTED, f"kernel {f.name}: parameters gpusim cannot bind")
        values, at = {}, 0
        for p, size in zip(prog.params, sizes, strict=True):
            raw = blob[at: at + size]
            at += size
            t = TYPES[p.type]
            values[p.name] = np.frombuffer(raw[:t.bytes].ljust(t.bytes, b"\0"), dtype=t.dtype)[0].item()
        return values

    # ---- the end -----------------------------------------------------------------------------------
    def close(self) -> None:
        self.memory.close()
