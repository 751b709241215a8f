"""The block timeline as a Chrome trace (Trace Event Format), which Perfetto (ui.perfetto.dev) and
chrome://tracing open: one process per SM, one complete event ("ph": "X") per thread block, timestamps
and durations in microseconds at the configuration's clock (cycle c is at c / clock_mhz us).

Blocks resident on one SM at the same time overlap, and a trace viewer requires the events of one
thread to nest, so each SM's blocks are laid out on "slot" threads: a block takes the lowest slot free
at its start (at most as many slots as blocks ever resident on that SM together).

On a config with a power model, a "board power" process holds a counter track ("ph": "C") of the watts
in POWER_WINDOWS equal windows of the kernel. The timing model's counters are totals over the kernel, not
per window, so the track is an attribution, not a measurement per window: the kernel's dynamic energy
and SM leakage (gpusim.stats.power at the config's clock, the power cap not applied, as the timestamps)
are divided among the blocks equally and spread evenly over each block's residency (start to end
cycle); the uncore leakage, memory background and constant board power are flat. The windows' energies
add up to the kernel's energy exactly; the track shows where blocks are resident (fill, drain, a tail of
few blocks), not which instructions a window ran.
"""

from __future__ import annotations

import heapq
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.stats.files import write_atomic
from gpusim.stats.power import kernel_power

POWER_WINDOWS = 100  # windows of the power track (fewer when the kernel has fewer cycles)
FLAT = ("uncore_static", "memory_static", "constant")  # the parts drawn flat; the rest follow the blocks


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
    events += power_events(result, pid=max((s.sm for s in t.sms), default=-1) + 1)
    return events


def _resident(timeline: list[tuple[int, int, int, int]], at: np.ndarray) -> np.ndarray:
    """Block-cycles of residency before each cycle of `at`: sum over blocks of clip(c - start, 0, end - start)."""
    starts = np.sort(np.array([s for _, _, s, _ in timeline], dtype=float))
    ends = np.sort(np.array([e for _, _, _, e in timeline], dtype=float))
    out = np.zeros(at.size)
    for edges, sign in ((starts, 1.0), (ends, -1.0)):
        before = np.searchsorted(edges, at, side="left")
        prefix = np.concatenate([[0.0], np.cumsum(edges)])
        out += sign * (before * at - prefix[before])
    return out


def power_windows(result, windows: int = POWER_WINDOWS) -> list[dict[str, float]]:
    """The power track (module docstring): per window, its first cycle `start_cycle`, `cycles`, and the
    watts of the blocks' share (`blocks_w`: dynamic energy and SM leakage) and of the flat parts
    (`flat_w`); empty without a power model (a bare KernelTiming, a config without `power:`)."""
    t, cfg = _timing(result), getattr(result, "cfg", None)
    if cfg is None or getattr(cfg, "power", None) is None or not t.timeline or t.cycles <= 0:
        return []
    kp = kernel_power(cfg, t, getattr(getattr(getattr(result, "run", None), "result", None), "stats", None), cap=False)
    flat_w = sum(kp.breakdown_j[k] for k in FLAT) / kp.seconds
    blocks_j = kp.energy_j - flat_w * kp.seconds
    n = max(1, min(windows, t.cycles))
    edges = np.linspace(0.0, float(t.cycles), n + 1)
    resident = np.diff(_resident(t.timeline, edges))
    share = resident / resident.sum() if resident.sum() else np.full(n, 1.0 / n)
    seconds = np.diff(edges) / (t.clock_mhz * 1e6)
    return [{"start_cycle": float(edges[i]), "cycles": float(edges[i + 1] - edges[i]),
             "blocks_w": float(blocks_j * share[i] / seconds[i]), "flat_w": float(flat_w)} for i in range(n)]


def power_events(result, pid: int) -> list[dict[str, Any]]:
    """The "board power" process and its counter events (one a window, and a last one at the kernel's end
    that returns the track to zero)."""
    track = power_windows(result)
    if not track:
        return []
    mhz = _timing(result).clock_mhz
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "board power (W)"}},
        {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": -1}}]
    for w in track:
        events.append({"name": "power", "cat": "power", "ph": "C", "pid": pid, "ts": w["start_cycle"] / mhz,
                       "args": {"blocks (dynamic + SM leakage)": w["blocks_w"],
                                "uncore, memory, board (flat)": w["flat_w"]}})
    end = track[-1]["start_cycle"] + track[-1]["cycles"]
    events.append({"name": "power", "cat": "power", "ph": "C", "pid": pid, "ts": end / mhz,
                   "args": {"blocks (dynamic + SM leakage)": 0.0, "uncore, memory, board (flat)": 0.0}})
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
