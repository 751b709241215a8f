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
    assert pids == {0, 1, 2}  # the two SMs, and the board power track (a100 has a power model)
    assert trace["otherData"]["workload"] == "transpose_shared"


def test_block_residency_before_each_cycle_by_hand():
    from gpusim.stats.trace import _resident

    timeline = [(0, 0, 0, 10), (1, 0, 5, 20)]
    # before cycle 10: block 0's 10 cycles and block 1's 5; before 20: 10 + 15; before 3: 3
    assert _resident(timeline, __import__("numpy").array([0.0, 3.0, 10.0, 20.0, 40.0])).tolist() == [0, 3, 15, 25, 25]


def test_the_power_track_adds_up_to_the_kernels_energy_and_follows_the_blocks():
    """Issue 39: a power-over-time track. Its windows' energies sum to the power model's energy at the
    config's clock; the flat part is the uncore, memory and board watts; the blocks' part of a window is
    their share of the kernel's other energy by block-cycles resident in it."""
    from gpusim.stats.power import kernel_power
    from gpusim.stats.trace import power_windows

    r = simulate("saxpy", "a100", n=1 << 16)
    track = power_windows(r)
    kp = kernel_power(r.cfg, r.timing, r.run.result.stats, cap=False)
    hz = r.timing.clock_mhz * 1e6
    assert len(track) == 100 and sum(w["cycles"] for w in track) == pytest.approx(r.timing.cycles)
    energy = sum((w["blocks_w"] + w["flat_w"]) * w["cycles"] / hz for w in track)
    assert energy == pytest.approx(kp.energy_j, rel=1e-9)
    pw = r.cfg.power
    flat = pw.uncore_static_w + pw.memory_static_w + pw.constant_w  # 1410 MHz: V = Vmax
    assert all(w["flat_w"] == pytest.approx(flat, rel=1e-12) for w in track)
    # the blocks' watts follow residency: the window with the most block-cycles draws the most
    resident = [sum(max(0, min(e, w["start_cycle"] + w["cycles"]) - max(s, w["start_cycle"]))
                    for _, _, s, e in r.timing.timeline) for w in track]
    blocks_j = kp.energy_j - track[0]["flat_w"] * kp.seconds
    for w, res in zip(track, resident, strict=True):
        assert w["blocks_w"] * w["cycles"] / hz == pytest.approx(blocks_j * res / sum(resident), rel=1e-9, abs=1e-15)
    counters = [e for e in trace_events(r) if e["ph"] == "C"]
    assert len(counters) == 101 and counters[-1]["args"]["blocks (dynamic + SM leakage)"] == 0.0
    names = [e["args"]["name"] for e in trace_events(r) if e["name"] == "process_name"]
    assert names[-1] == "board power (W)"


def test_no_power_track_without_a_power_model():
    r = simulate("saxpy", "gtx980", n=4096)
    assert not [e for e in trace_events(r) if e["ph"] == "C"]
