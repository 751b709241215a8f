"""Multi-stream scheduling: a DAG of tasks (kernels, collectives, host-device copies) placed on CUDA
streams with events where a task waits on another stream, as a gpusim.system Program.

A GPU of the system model runs one kernel at a time, so streams save time where a kernel can run while a
collective or a copy moves data (and launches queue behind neither). `assign_streams` walks the tasks in
issue order: a task that depends on the last task of a stream continues that stream (no event needed);
any other task starts on the stream with the least work queued (up to `streams` streams), and waits by
event for every dependency on another stream. `to_program` writes the tasks for every GPU of a group
(SPMD: each GPU runs the same kernels; a collective is one operation over the group), and `schedule`
runs a DAG once on one stream and once on several, reporting the time saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpusim.config import Config
from gpusim.system import Collective, CopyD2H, CopyH2D, EventRecord, EventWait, Kernel, Program, run_program
from gpusim.system.collectives import KINDS as COLLECTIVES
from gpusim.system.report import ProgramReport

COPIES = ("copy_h2d", "copy_d2h")


@dataclass(frozen=True, slots=True)
class Task:
    """One operation of the DAG: a kernel of `cycles`, a collective or copy of `bytes`; `deps` are the
    names of tasks it waits for (issued before it); `weight` is its estimated seconds (for balancing)."""

    name: str
    kind: str
    deps: tuple[str, ...] = ()
    cycles: float = 0.0
    bytes: int = 0
    stream: str = "s0"
    label: str = ""
    weight: float = 0.0


def assign_streams(tasks: Sequence[Task], streams: int = 2) -> list[Task]:
    """`tasks` (in a valid issue order) each on one of `streams` streams (module docstring)."""
    tail: dict[str, str] = {}     # stream -> its last task
    load: dict[str, float] = {}   # stream -> seconds queued on it
    where: dict[str, str] = {}
    out = []
    for t in tasks:
        chained = [where[d] for d in t.deps if tail.get(where[d]) == d]
        if chained:
            s = chained[-1]
        elif len(load) < streams:
            s = f"s{len(load)}"
        else:
            s = min(load, key=lambda k: (load[k], k))
        tail[s], where[t.name] = t.name, s
        load[s] = load.get(s, 0.0) + t.weight
        out.append(replace(t, stream=s))
    return out


def to_program(tasks: Sequence[Task], gpus: Sequence[int], name: str, description: str = "") -> Program:
    """The tasks as a Program on each of `gpus`: events recorded after a task some task of another stream
    waits on, and waited on (once per stream) before that task."""
    stream_of = {t.name: t.stream for t in tasks}
    crossing = {d for t in tasks for d in t.deps if stream_of[d] != t.stream}
    waited: set[tuple[str, str]] = set()
    members = tuple(gpus)
    ops: list = []
    for t in tasks:
        for d in dict.fromkeys(t.deps):
            if stream_of[d] != t.stream and (d, t.stream) not in waited:
                waited.add((d, t.stream))
                ops += [EventWait(event=f"{d}@{g}", stream=t.stream, gpu=g) for g in members]
        label = t.label or t.name
        if t.kind == "kernel":
            ops += [Kernel(name=label, cycles=t.cycles, gpu=g, stream=t.stream) for g in members]
        elif t.kind in COLLECTIVES:
            ops.append(Collective(collective=t.kind, bytes=t.bytes, gpus=members, stream=t.stream, name=label))
        elif t.kind in COPIES:
            copy = CopyH2D if t.kind == "copy_h2d" else CopyD2H
            ops += [copy(bytes=t.bytes, gpu=g, stream=t.stream, name=label) for g in members]
        else:
            raise ValueError(f"task {t.name}: unknown kind {t.kind!r}")
        if t.name in crossing:
            ops += [EventRecord(event=f"{t.name}@{g}", stream=t.stream, gpu=g) for g in members]
    return Program(tuple(ops), name=name, description=description)


@dataclass(frozen=True)
class Schedule:
    """A DAG run on one stream and on `streams` streams: both reports and the time saved."""

    streams: int
    serial: ProgramReport
    parallel: ProgramReport
    program: Program

    @property
    def saved_seconds(self) -> float:
        return self.serial.seconds - self.parallel.seconds

    def summary(self) -> str:
        us = 1e6
        used = len({op.stream for op in self.program.ops})
        saved = 100 * self.saved_seconds / self.serial.seconds if self.serial.seconds else 0.0
        return (f"streams: one stream {self.serial.seconds * us:,.1f} us; {used} stream(s) "
                f"{self.parallel.seconds * us:,.1f} us; saved {self.saved_seconds * us:,.1f} us ({saved:.1f} %)")


def schedule(tasks: Sequence[Task], cfg: Config, gpus: Sequence[int], streams: int = 2, name: str = "program",
             description: str = "") -> Schedule:
    """Run `tasks` on `cfg`'s node as they are on one stream and spread over `streams` streams."""
    one = [replace(t, stream="s0") for t in tasks]
    spread = assign_streams(tasks, streams)
    program = to_program(spread, gpus, name, description)
    return Schedule(streams, run_program(to_program(one, gpus, name, description), cfg), run_program(program, cfg),
                    program)
