"""A program run as a Chrome/Perfetto trace (Trace Event Format; ui.perfetto.dev opens it): a process per
GPU with a track for its SMs, one per copy engine, one for its collectives ("interconnect"), and one per
stream; a host process with each GPU's launch thread. Times in microseconds."""

from __future__ import annotations

from typing import Any

from gpusim.system.report import COLLECTIVES, SYNC, ProgramReport

HOST_PID = 0
US = 1e6
LAUNCHED = ("kernel", *COLLECTIVES)  # operations whose issue costs the host a launch


def trace_events(report: ProgramReport) -> list[dict[str, Any]]:
    """Metadata naming every process and track, then one complete ("X") event per operation on its
    engine's track and again on its stream's track, and one per launch on the host."""
    events: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": HOST_PID, "tid": 0,
                                     "args": {"name": "host"}}]
    events += [{"name": "process_name", "ph": "M", "pid": g + 1, "tid": 0, "args": {"name": f"GPU {g}"}}
               for g in range(report.gpus)]
    tids: dict[tuple[int, str], int] = {}

    def tid(pid: int, name: str) -> int:
        if (pid, name) not in tids:
            tids[(pid, name)] = sum(1 for p, _ in tids if p == pid)
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tids[(pid, name)],
                           "args": {"name": name}})
        return tids[(pid, name)]

    # engines first (SMs, copy engines, interconnect), then streams, so tracks read top-down
    for gpu, engine in sorted({(r.gpu, r.engine) for r in report.records if r.category != SYNC},
                              key=lambda k: (k[0], k[1] != "SMs", k[1])):
        tid(gpu + 1, engine)
    for gpu, stream in sorted({(r.gpu, r.stream) for r in report.records}):
        tid(gpu + 1, f"stream {stream}")
    for r in report.records:
        name = f"{r.kind} {r.name}".strip()
        args = {"op": r.index, "stream": r.stream, "bytes": r.bytes, "cycles": r.cycles}
        lanes = [f"stream {r.stream}"] + ([r.engine] if r.category != SYNC else [])
        events += [{"name": name, "cat": r.category, "ph": "X", "pid": r.gpu + 1, "tid": tid(r.gpu + 1, lane),
                    "ts": r.start * US, "dur": r.seconds * US, "args": args} for lane in lanes]
        if r.kind in LAUNCHED and report.launch_overhead_seconds:
            events.append({"name": f"launch {name}", "cat": "launch", "ph": "X", "pid": HOST_PID,
                           "tid": tid(HOST_PID, f"launch thread (GPU {r.gpu})"),
                           "ts": (r.issued - report.launch_overhead_seconds) * US,
                           "dur": report.launch_overhead_seconds * US, "args": {"op": r.index}})
    return events


def trace_dict(report: ProgramReport) -> dict[str, Any]:
    """The whole trace: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}."""
    return {"traceEvents": trace_events(report), "displayTimeUnit": "ns",
            "otherData": {"program": report.program, "config": report.config, "seconds": report.seconds}}
