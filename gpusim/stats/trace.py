"""The block timeline as a Chrome trace (Trace Event Format), which Perfetto (ui.perfetto.dev) and
chrome://tracing open: one process per SM, one complete event ("ph": "X") per thread block, timestamps
and durations in microseconds at the configuration's clock (cycle c is at c / clock_mhz us).

Blocks resident on one SM at the same time overlap, and a trace viewer requires the events of one
thread to nest, so each SM's blocks are laid out on "slot" threads: a block takes the lowest slot free
at its start (at most as many slots as blocks ever resident on that SM together).
"""

from __future__ import annotations

import heapq
import json
import os
from pathlib import Path
from typing import Any

from gpusim.stats.files import write_atomic


def _timing(result):
    return getattr(result, "timing", result)


def _slots(timeline: list[tuple[int, int, int, int]]) -> dict[int, int]:
    """block -> slot: per SM, the lowest slot whose previous block ended at or before this one starts."""
    by_sm: dict[int, list[tuple[int, int, int]]] = {}
    for block, sm, start, end in timeline:
        by_sm.setdefault(sm, []).append((start, end, block))
    out: dict[int, int] = {}
    for items in by_sm.values():
        busy: list[tuple[int, int]] = []  # (end, slot) of the blocks placed
        free: list[int] = []
        n = 0
        for start, end, block in sorted(items):
            while busy and busy[0][0] <= start:
                heapq.heappush(free, heapq.heappop(busy)[1])
            if free:
                slot = heapq.heappop(free)
            else:
                slot, n = n, n + 1
            out[block] = slot
            heapq.heappush(busy, (end, slot))
    return out


def trace_events(result) -> list[dict[str, Any]]:
    """The trace's events for a SimResult (or a bare KernelTiming): process_name / process_sort_index /
    thread_name metadata ("ph": "M") for every SM, then one "X" event per block in timeline order."""
    t = _timing(result)
    mhz = t.clock_mhz  # cycles per microsecond
    slots = _slots(t.timeline)
    events: list[dict[str, Any]] = []
    for s in t.sms:
        events.append({"name": "process_name", "ph": "M", "pid": s.sm, "tid": 0,
                       "args": {"name": f"SM {s.sm} (GPC {s.gpc})"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": s.sm, "tid": 0,
                       "args": {"sort_index": s.sm}})
    named = set()
    for block, sm, _, _ in t.timeline:
        key = (sm, slots[block])
        if key not in named:
            named.add(key)
            events.append({"name": "thread_name", "ph": "M", "pid": sm, "tid": key[1],
                           "args": {"name": f"slot {key[1]}"}})
    for block, sm, start, end in t.timeline:
        events.append({"name": f"block {block}", "cat": "block", "ph": "X", "pid": sm, "tid": slots[block],
                       "ts": start / mhz, "dur": (end - start) / mhz,
                       "args": {"block": block, "sm": sm, "start_cycle": start, "end_cycle": end}})
    return events


def trace_dict(result) -> dict[str, Any]:
    """The whole trace: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}."""
    t = _timing(result)
    other: dict[str, Any] = {"clock_mhz": t.clock_mhz, "cycles": t.cycles,
                             "launch_overhead_cycles": t.launch_overhead_cycles}
    prov = getattr(result, "provenance", None)
    if prov:
        other.update({k: v for k, v in prov.items() if k != "launch"})
    return {"traceEvents": trace_events(result), "displayTimeUnit": "ns", "otherData": other}


def trace_json(result) -> str:
    return json.dumps(trace_dict(result), separators=(",", ":")) + "\n"


def write_trace(result, path: str | os.PathLike) -> Path:
    """Write the trace to `path` atomically (a temporary file in the same folder, then a rename)."""
    write_atomic(path, trace_json(result))
    return Path(path)
