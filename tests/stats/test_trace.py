"""The Chrome / Perfetto trace: valid JSON, one process per SM, one complete event per block whose
ts and dur are the timeline's cycles in microseconds at the clock, and no overlap within a thread."""

import json

import pytest

from gpusim.stats import SimResult, simulate, trace_events, write_trace
from tests.stats.build import timing


def x_events(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def test_hand_built_timeline(tmp_path):
    r = SimResult.build(None, None, timing(clock_mhz=500.0))  # 2 ns a cycle
    path = write_trace(r, tmp_path / "t.json")
    trace = json.loads(path.read_text())
    assert trace["displayTimeUnit"] == "ns"
    assert [(e["name"], e["pid"], e["tid"], e["ts"], e["dur"]) for e in x_events(trace)] == [
        ("block 0", 0, 0, 0.0, 1.2),  # cycles 0..600 at 500 MHz: 0 us for 1.2 us
        ("block 1", 0, 1, 0.2, 1.8),  # overlaps block 0 on SM 0: the next slot
        ("block 2", 1, 0, 0.0, 1.0),
    ]
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert names == {0: "SM 0 (GPC 0)", 1: "SM 1 (GPC 1)", 2: "SM 2 (GPC 0)"}
    assert trace["otherData"]["cycles"] == 1000 and trace["otherData"]["clock_mhz"] == 500.0
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temporary file left


def test_a_slot_is_reused_once_its_block_ended():
    t = timing(timeline=[(0, 0, 0, 10), (1, 0, 5, 20), (2, 0, 10, 30), (3, 0, 12, 14), (4, 0, 20, 25)])
    slots = {e["args"]["block"]: e["tid"] for e in trace_events(t) if e["ph"] == "X"}
    assert slots == {0: 0, 1: 1, 2: 0, 3: 2, 4: 1}


def test_real_run_has_one_event_per_block(tmp_path):
    r = simulate("transpose_shared", "a100", overrides={"chip.sm_count": 2}, rows=64, cols=96)  # 24 blocks
    trace = json.loads(write_trace(r, tmp_path / "tr.json").read_text())
    xs = x_events(trace)
    assert len(xs) == len(r.timeline) == r.kernel["blocks"] > 1
    us = 1 / r.cfg.chip.clock_mhz
    for e, b in zip(xs, r.timeline, strict=True):
        assert e["name"] == f"block {b['block']}" and e["pid"] == b["sm"]
        assert e["ts"] == pytest.approx(b["start"] * us) and e["dur"] == pytest.approx((b["end"] - b["start"]) * us)
    by_thread = {}
    for e in xs:
        by_thread.setdefault((e["pid"], e["tid"]), []).append((e["args"]["start_cycle"], e["args"]["end_cycle"]))
    for spans in by_thread.values():
        spans.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))
    assert max(tid for _, tid in by_thread) > 0  # blocks ran side by side on an SM
    pids = {e["pid"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert pids == {0, 1}
    assert trace["otherData"]["workload"] == "transpose_shared"
