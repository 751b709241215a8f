"""A CUDA program's GPU timeline: its copies, kernels and events as a gpusim.system Program, timed by the
system model (PCIe, copy engines, host staging of pageable memory, one kernel at a time per GPU, streams
overlapping where the engines allow).

The application's calls arrive in issue order; each becomes an operation on its stream:
- a host-device copy: `copy_h2d` / `copy_d2h` (pinned when the host side is pinned or registered memory);
- a kernel: `kernel` with the cycles its simulation took;
- a device-to-device copy or a memset: a `kernel` of the cycles DRAM needs to move its bytes (read and
  write for a copy, write for a memset) at `dram.bandwidth_gbps` x `dram.efficiency`;
- `cudaEventRecord` / `cudaStreamWaitEvent`: `event_record` / `event_wait`.
CUDA's ordering rules become event waits the system model already keeps:
- the legacy default stream (stream 0) waits for all earlier work of the blocking streams, and their later
  work waits for it (non-blocking streams, cudaStreamNonBlocking, take no part);
- a call that blocks the host (a synchronous copy, cudaDeviceSynchronize, cudaStreamSynchronize,
  cudaEventSynchronize) makes every operation issued after it wait for what it waited for.
(The host's launch overhead after such a wait is not added to the wait: the system model charges the host
thread its launch overheads from the program's start. docs/exec.md.)"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusim.config.schema import Config
from gpusim.system import Program, ProgramReport, run_program
from gpusim.system.program import CopyD2H, CopyH2D, EventRecord, EventWait, Kernel, Op

LEGACY = "s0"


@dataclass
class _Stream:
    name: str
    blocking: bool
    busy: bool = False  # has work since its last wait for the legacy stream (or the legacy stream's for it)
    seen: int = 0  # the host barrier it has waited for


@dataclass
class Timeline:
    cfg: Config
    ops: list[Op] = field(default_factory=list)
    streams: dict[str, _Stream] = field(default_factory=dict)
    _events: int = 0
    _barrier: tuple[str, ...] = ()  # events every later operation waits for (a host-blocking call's)
    _barrier_id: int = 0
    _cache: tuple[int, ProgramReport] | None = None

    def stream(self, name: str, blocking: bool = True) -> _Stream:
        if name not in self.streams:
            self.streams[name] = _Stream(name, blocking, seen=self._barrier_id)
        return self.streams[name]

    def _event(self) -> str:
        self._events += 1
        return f"e{self._events}"

    def _record(self, stream: str) -> str:
        ev = self._event()
        self.ops.append(EventRecord(stream=stream, event=ev, name="sync"))
        return ev

    def _before(self, name: str) -> None:
        """The waits an operation on stream `name` needs first: the last host barrier, the legacy stream's
        implicit synchronisation."""
        s = self.stream(name)
        if s.seen != self._barrier_id:
            s.seen = self._barrier_id
            for ev in self._barrier:
                self.ops.append(EventWait(stream=name, event=ev, name="host wait"))
        if not s.blocking:
            return
        if name == LEGACY:
            for other in self.streams.values():
                if other.name != LEGACY and other.blocking and other.busy:
                    self.ops.append(EventWait(stream=name, event=self._record(other.name), name="legacy stream"))
                    other.busy = False
        else:
            legacy = self.streams.get(LEGACY)
            if legacy is not None and legacy.busy:
                ev = self._record(LEGACY)
                legacy.busy = False
                for other in self.streams.values():  # each blocking stream waits once for this legacy work
                    if other.name != LEGACY and other.blocking:
                        self.ops.append(EventWait(stream=other.name, event=ev, name="legacy stream"))

    def add(self, op: Op) -> int:
        """Append an operation (on its stream) with the waits it needs; its index in the program."""
        self._before(op.stream)
        self.ops.append(op)
        self.stream(op.stream).busy = True
        self._cache = None
        return len(self.ops) - 1

    def copy(self, stream: str, direction: str, nbytes: int, pinned: bool, name: str) -> int:
        cls = CopyH2D if direction == "h2d" else CopyD2H
        return self.add(cls(stream=stream, bytes=int(nbytes), pinned=pinned, name=name))

    def kernel(self, stream: str, cycles: float, name: str) -> int:
        return self.add(Kernel(stream=stream, cycles=max(0, int(round(cycles))), name=name))

    def dram_cycles(self, nbytes: int) -> float:
        """Cycles DRAM needs to move `nbytes` at its sustained bandwidth."""
        d = self.cfg.dram
        return nbytes / (d.bandwidth_gbps * 1e9 * d.efficiency) * self.cfg.chip.clock_mhz * 1e6

    def record(self, stream: str) -> tuple[str, int]:
        """cudaEventRecord: the event's name and its operation's index."""
        self._before(stream)
        ev = self._event()
        self.ops.append(EventRecord(stream=stream, event=ev, name="event"))
        self._cache = None
        return ev, len(self.ops) - 1

    def wait(self, stream: str, event: str) -> None:
        """cudaStreamWaitEvent."""
        self._before(stream)
        self.ops.append(EventWait(stream=stream, event=event, name="event"))
        self._cache = None

    def host_waits(self, streams: list[str] | None = None, event: str | None = None) -> None:
        """A host-blocking call returned: every later operation waits for `event`, or for the last work of
        `streams` (None: every stream)."""
        if event is not None:
            evs = [event]
        else:
            names = list(self.streams) if streams is None else [s for s in streams if s in self.streams]
            evs = [self._record(n) for n in names]
        if not evs:
            return
        self._barrier = tuple(evs)
        self._barrier_id += 1
        self._cache = None

    def report(self) -> ProgramReport | None:
        """The system model's timing of the operations so far (None before the first)."""
        if not self.ops:
            return None
        if self._cache is None or self._cache[0] != len(self.ops):
            program = Program(tuple(self.ops), name="exec")
            self._cache = (len(self.ops), run_program(program, self.cfg))
        return self._cache[1]

    def time_of(self, index: int) -> float:
        """When operation `index` ended (seconds from the program's start)."""
        rep = self.report()
        return max(r.end for r in rep.records if r.index == index)
