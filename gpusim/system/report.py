"""What a program run reports: each operation's issue, start and end, and per GPU the time its SMs
computed, its copy engines copied, its links communicated, and the overlap of computing with moving data."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

COMPUTE, COPY, COMMUNICATION, SYNC = "compute", "copy", "communication", "sync"


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One operation as one GPU's stream ran it (a collective has a record per GPU). Times in seconds;
    `issued` is when the host had issued it (after the launch overhead, for a kernel or a collective)."""

    index: int
    kind: str
    name: str
    gpu: int
    stream: str
    category: str
    engine: str
    issued: float
    start: float
    end: float
    bytes: int = 0
    cycles: float | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start


def merge(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Intervals as a sorted list of disjoint ones covering the same time."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def length(intervals: Iterable[tuple[float, float]]) -> float:
    return sum(b - a for a, b in merge(intervals))


def intersection(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Time covered by both of two merged interval lists."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


@dataclass(frozen=True)
class ProgramReport:
    """A program's run on a configuration: `records` in start order, `seconds` from the first issue to the
    last operation's end."""

    program: str
    description: str
    config: str
    gpus: int
    seconds: float
    records: tuple[OpRecord, ...]
    launch_overhead_seconds: float

    @property
    def used_gpus(self) -> list[int]:
        """The GPUs the program ran anything on."""
        return sorted({r.gpu for r in self.records})

    def busy(self, gpu: int = 0) -> dict[str, float]:
        """Seconds GPU `gpu` spent computing (kernels), copying (host-device copies), communicating
        (collectives and peer copies), and computing while copying or communicating (`overlap`)."""
        mine = [r for r in self.records if r.gpu == gpu]
        spans = {c: merge((r.start, r.end) for r in mine if r.category == c) for c in (COMPUTE, COPY, COMMUNICATION)}
        moving = merge(spans[COPY] + spans[COMMUNICATION])
        return {"compute": length(spans[COMPUTE]), "copy": length(spans[COPY]),
                "communication": length(spans[COMMUNICATION]), "overlap": intersection(spans[COMPUTE], moving)}

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "description": self.description, "config": self.config,
                "gpus": self.gpus, "seconds": self.seconds, "launch_overhead_seconds": self.launch_overhead_seconds,
                "busy": [{"gpu": g, **{f"{k}_seconds": v for k, v in self.busy(g).items()}} for g in self.used_gpus],
                "ops": [asdict(r) for r in self.records]}

    def table(self) -> str:
        """The operations (start, end, duration in microseconds) and each GPU's busy times."""
        us = 1e6
        head = f"{'#':>3}  {'gpu':>3}  {'stream':<8} {'op':<15} {'name':<18} {'engine':<16} {'start us':>11} " \
               f"{'end us':>11} {'us':>10}  detail"
        lines = [f"{self.program} on {self.config}: {self.seconds * us:,.3f} us", "", head]
        for r in self.records:
            detail = f"{r.bytes:,} B" if r.bytes else (f"{r.cycles:,.0f} cycles" if r.cycles is not None else "")
            lines.append(f"{r.index:>3}  {r.gpu:>3}  {r.stream:<8} {r.kind:<15} {r.name[:18]:<18} {r.engine:<16} "
                         f"{r.start * us:>11,.3f} {r.end * us:>11,.3f} {r.seconds * us:>10,.3f}  {detail}")
        lines.append("")
        for g in self.used_gpus:
            b = self.busy(g)
            lines.append(f"GPU {g}: compute {b['compute'] * us:,.3f} us, copy {b['copy'] * us:,.3f} us, "
                         f"communication {b['communication'] * us:,.3f} us, overlap (compute while copying or "
                         f"communicating) {b['overlap'] * us:,.3f} us")
        return "\n".join(lines)
