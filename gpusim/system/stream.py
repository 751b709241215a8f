"""Running a program: each stream a SimPy process that runs its operations in order, each engine a
server they queue for (a GPU's SMs, its copy engines, the links).

The host issues the operations in program order, one host thread per GPU (as one process per GPU drives
it in multi-GPU code); a kernel launch, and a collective (which launches a kernel), costs that thread
`launch.kernel_launch_overhead_ns`, copies and events cost it nothing. An operation starts when its
stream has finished the one before, the host has issued it, and its engine is free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from gpusim.config.schema import Config
from gpusim.system.collectives import run_collective
from gpusim.system.copy_engine import D2H, H2D, copy_path
from gpusim.system.link import transfer
from gpusim.system.program import (
    Collective,
    CopyD2H,
    CopyH2D,
    CopyP2P,
    EventRecord,
    EventWait,
    Kernel,
    Op,
    Program,
    ProgramError,
)
from gpusim.system.report import COMMUNICATION, COMPUTE, COPY, SYNC, OpRecord, ProgramReport
from gpusim.system.topology import Topology

KernelCycles = Callable[[Kernel, Config], float]


@dataclass
class _Step:
    index: int
    op: Op
    gpu: int
    issued: float


@dataclass
class _Rendezvous:
    """A collective's meeting point: it starts when every member stream has reached it."""

    members: tuple[int, ...]
    arrived: int = 0
    start: float = 0.0
    done: simpy.Event | None = None
    sent: dict[int, int] = field(default_factory=dict)


def run_program(program: Program, cfg: Config, kernel_cycles: KernelCycles | None = None) -> ProgramReport:
    """Run `program` on `cfg`'s node. A kernel with `cycles` takes that long; one naming a workload takes
    `kernel_cycles(op, cfg)` cycles (the analysis layer passes one that simulates it)."""
    program.check(cfg)
    cycles = _kernel_cycles(program, cfg, kernel_cycles)
    env = simpy.Environment()
    topo = Topology(env, cfg)
    n = cfg.system.gpus
    overhead = cfg.launch.kernel_launch_overhead_ns * 1e-9
    host_clock = [0.0] * n
    streams: dict[tuple[int, str], list[_Step]] = {}
    meetings: dict[int, _Rendezvous] = {}
    recorded: dict[str, simpy.Event] = {}
    waits: dict[int, simpy.Event] = {}
    for i, op in enumerate(program.ops):
        gpus = program.gpus_of(op, n)
        if isinstance(op, Collective):
            meetings[i] = _Rendezvous(gpus, done=env.event())
        if isinstance(op, EventRecord):
            recorded[op.event] = env.event()  # a later record of the same name replaces it, as in CUDA
            waits[i] = recorded[op.event]
        if isinstance(op, EventWait):
            waits[i] = recorded[op.event]
        for g in gpus:
            if isinstance(op, Kernel | Collective):
                host_clock[g] += overhead
            streams.setdefault((g, op.stream), []).append(_Step(i, op, g, host_clock[g]))

    records: list[OpRecord] = []
    runner = _Runner(env, topo, cycles, meetings, waits, records)
    procs = {key: env.process(runner.stream(steps)) for key, steps in streams.items()}
    env.run()
    stuck = [f"GPU {g} stream {s}" for (g, s), p in procs.items() if not p.triggered]
    if stuck:
        raise ProgramError(f"deadlock: {', '.join(stuck)} never finished (an event wait or a collective "
                           "that cannot be reached)", file=program.name)
    records.sort(key=lambda r: (r.start, r.index, r.gpu))
    end = max((r.end for r in records), default=0.0)
    return ProgramReport(program.name, program.description, cfg.name, n, end, tuple(records), overhead)


def _kernel_cycles(program: Program, cfg: Config, kernel_cycles: KernelCycles | None) -> dict[int, float]:
    out = {}
    for i, op in enumerate(program.ops):
        if not isinstance(op, Kernel):
            continue
        if op.cycles is not None:
            out[i] = op.cycles
        elif kernel_cycles is None:
            raise program.error(i, "workload", "a kernel naming a workload needs a kernel cost function "
                                               "(gpusim.analysis.simulate_program simulates it)")
        else:
            out[i] = kernel_cycles(op, cfg)
    return out


class _Runner:
    def __init__(self, env, topo: Topology, cycles: dict[int, float], meetings: dict[int, _Rendezvous],
                 waits: dict[int, simpy.Event], records: list[OpRecord]):
        self.env, self.topo, self.cycles = env, topo, cycles
        self.meetings, self.waits, self.records = meetings, waits, records

    def stream(self, steps: list[_Step]):
        for step in steps:
            if self.env.now < step.issued:
                yield self.env.timeout(step.issued - self.env.now)
            yield from self.run(step)

    def record(self, step: _Step, category: str, engine: str, start: float, nbytes: int = 0,
               cycles: float | None = None) -> None:
        op = step.op
        self.records.append(OpRecord(step.index, op.kind, op.label, step.gpu, op.stream, category, engine,
                                     step.issued, start, self.env.now, nbytes, cycles))

    def run(self, step: _Step):
        env, op = self.env, step.op
        gpu = self.topo.gpus[step.gpu]
        if isinstance(op, Kernel):
            with gpu.sms.request() as turn:
                yield turn
                start = env.now
                yield env.timeout(gpu.seconds(self.cycles[step.index]))
            self.record(step, COMPUTE, "SMs", start, cycles=self.cycles[step.index])
        elif isinstance(op, CopyH2D | CopyD2H | CopyP2P):
            engine = yield gpu.copy_engines.acquire()
            if isinstance(op, CopyP2P):
                path, chunk = self.topo.route(step.gpu, op.peer), self.topo.chunk_bytes
            else:
                pinned = self.topo.host.pinned_by_default if op.pinned is None else op.pinned
                path, chunk = copy_path(H2D if isinstance(op, CopyH2D) else D2H, op.bytes, pinned, gpu.pcie,
                                        self.topo.host, f"op {step.index}")
            started = env.event()  # the copy starts when its data starts moving, not when it got an engine
            yield from transfer(env, path, op.bytes, chunk, started)
            gpu.copy_engines.release(engine)
            self.record(step, COMMUNICATION if isinstance(op, CopyP2P) else COPY, engine.name, started.value,
                        op.bytes)
        elif isinstance(op, EventRecord):
            self.waits[step.index].succeed()
            self.record(step, SYNC, "-", env.now)
        elif isinstance(op, EventWait):
            start = env.now
            yield self.waits[step.index]
            self.record(step, SYNC, "-", start)
        else:
            yield from self.collective(step, op)

    def collective(self, step: _Step, op: Collective):
        meet = self.meetings[step.index]
        meet.arrived += 1
        if meet.arrived == len(meet.members):
            meet.start = self.env.now
            self.env.process(self._run_collective(meet, op))
        yield meet.done
        self.record(step, COMMUNICATION, "interconnect", meet.start, meet.sent.get(step.gpu, 0))

    def _run_collective(self, meet: _Rendezvous, op: Collective):
        meet.sent = yield from run_collective(self.env, self.topo, op.collective, op.bytes, meet.members, op.root)
        meet.done.succeed()
