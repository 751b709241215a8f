"""What a program run reports: each operation's issue, start and end, and per GPU the time its SMs
computed, its copy engines copied, its links communicated, and the overlap of computing with moving data."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from gpusim.system.collectives import KINDS as COLLECTIVES

COMPUTE, COPY, COMMUNICATION, SYNC = "compute", "copy", "communication", "sync"

# What limits a program (ProgramReport.verdict): its host's kernel launches, its copies, its collectives, or
# its kernels (each kernel's own verdict then says what limits it: `gpusim run`).
LAUNCH_OVERHEAD, TRANSFERS, COMMUNICATION_BOUND, KERNELS = "launch-overhead", "transfers", "communication", "kernels"


@dataclass(frozen=True)
class ProgramVerdict:
    kind: str
    summary: str
    evidence: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.kind, "summary": self.summary, "evidence": list(self.evidence)}

    def __str__(self) -> str:
        return f"{self.kind}: {self.summary}"


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

    def verdict(self) -> ProgramVerdict:
        """What limits the program, on its busiest GPU: the host's launches when they take longer than the
        kernels they launch (the GPU waits for the host: fuse kernels, or launch them as one graph), else
        copies or collectives where they take longer than the computing they do not overlap, else the
        kernels."""
        us = 1e6
        launches = [r for r in self.records if r.kind == "kernel" or r.kind in COLLECTIVES]  # (what costs a launch)
        per_gpu = {g: self.busy(g) for g in self.used_gpus} or {0: self.busy(0)}
        gpu = max(per_gpu, key=lambda g: sum(per_gpu[g].values()))
        b = per_gpu[gpu]
        n = sum(1 for r in launches if r.gpu == gpu)
        host = n * self.launch_overhead_seconds
        kernels = [r for r in self.records if r.kind == "kernel" and r.gpu == gpu]
        mean = b["compute"] / len(kernels) if kernels else 0.0
        evidence = [f"elapsed {self.seconds * us:,.3f} us on GPU {gpu}: kernels {b['compute'] * us:,.3f} us, copies "
                    f"{b['copy'] * us:,.3f} us, collectives and peer copies {b['communication'] * us:,.3f} us, "
                    f"overlapped with kernels {b['overlap'] * us:,.3f} us",
                    f"{n} launches x {self.launch_overhead_seconds * us:.3f} us = {host * us:,.3f} us of host time"]
        exposed = {TRANSFERS: max(0.0, b["copy"] - b["overlap"]), COMMUNICATION_BOUND: max(0.0, b["communication"] -
                                                                                           b["overlap"])}
        weights = {LAUNCH_OVERHEAD: host if n else 0.0, **exposed, KERNELS: b["compute"]}
        kind = max(weights, key=lambda k: weights[k])  # (the largest of the four; the kernels on a tie)
        if weights[kind] <= b["compute"]:
            kind = KERNELS
        if kind == LAUNCH_OVERHEAD:
            return ProgramVerdict(
                kind, f"{len(kernels)} kernels of {mean * us:,.3f} us on average behind "
                      f"{self.launch_overhead_seconds * us:.3f}-us launches: the GPU waits for the host; fuse kernels "
                      "or launch them as one CUDA graph", evidence)
        if kind in exposed:
            what = "host-device copies" if kind == TRANSFERS else "collectives and peer copies"
            total = b["copy"] if kind == TRANSFERS else b["communication"]
            return ProgramVerdict(
                kind, f"{what} take {total * us:,.3f} us, {exposed[kind] * us:,.3f} us of them not overlapped with "
                      f"the {b['compute'] * us:,.3f} us of kernels: move less, overlap them (streams), or use a faster "
                      "link", evidence)
        share = b["compute"] / self.seconds if self.seconds else 0.0
        return ProgramVerdict(KERNELS, f"the kernels take {share:.0%} of the elapsed time: each kernel's own verdict "
                                       "(gpusim run) says what limits it", evidence)

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "description": self.description, "config": self.config,
                "gpus": self.gpus, "seconds": self.seconds, "launch_overhead_seconds": self.launch_overhead_seconds,
                "verdict": self.verdict().to_dict(),
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
        v = self.verdict()
        lines += ["", f"verdict: {v}"] + [f"  - {e}" for e in v.evidence]
        return "\n".join(lines)
