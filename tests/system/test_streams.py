"""Streams: ordered within one, overlapping across them where engines allow; events; the report and the
trace. Times derived by hand from gpusim/data/configs/a100.yaml with 2 copy engines (h: a 64 MiB pinned copy,
1 us + 64 MiB / 26.145 GB/s; k: a 2,000,000-cycle kernel at 1410 MHz)."""

import json

import pytest

from gpusim.config import load_config
from gpusim.system import (
    CopyD2H,
    CopyH2D,
    EventRecord,
    EventWait,
    Kernel,
    Program,
    ProgramError,
    load_program,
    run_program,
    trace_dict,
)

MIB64 = 64 * 2**20
LATENCY = 1e-6
H = LATENCY + MIB64 / (31.5e9 * 0.83)
CYCLES = 2_000_000
K = CYCLES / 1410e6
LAUNCH = 4e-6


@pytest.fixture(scope="module")
def two_engines():
    return load_config("a100", overrides={"chip.copy_engines": 2})


def pipeline(stream):
    return [CopyH2D(bytes=MIB64, stream=stream), Kernel(cycles=CYCLES, stream=stream),
            CopyD2H(bytes=MIB64, stream=stream)]


def test_two_streams_beat_one_by_hand_derived_amount(two_engines):
    one = run_program(Program(pipeline("a") + pipeline("a")), two_engines)
    two = run_program(Program(pipeline("a") + pipeline("b")), two_engines)
    # one stream: H2D, kernel, D2H, twice, back to back
    assert one.seconds == pytest.approx(4 * H + 2 * K, rel=1e-9)
    # two: b's H2D follows a's on the H2D channel (ends 2H - latency), b's kernel follows it, b's D2H follows
    # a's D2H (ends 2H + K) on the D2H channel: 3H + K - latency; a's D2H overlaps b's H2D and kernel
    assert two.seconds == pytest.approx(3 * H + K - LATENCY, rel=1e-9)
    assert one.seconds - two.seconds == pytest.approx(H + K + LATENCY, rel=1e-9)
    assert two.busy(0)["overlap"] == pytest.approx(2 * K, rel=1e-9)
    assert one.busy(0)["overlap"] == 0


def test_operations_on_one_stream_run_in_order(two_engines):
    report = run_program(Program(pipeline("a")), two_engines)
    starts = [r.start for r in sorted(report.records, key=lambda r: r.index)]
    ends = [r.end for r in sorted(report.records, key=lambda r: r.index)]
    assert starts[1] == pytest.approx(ends[0]) and starts[2] == pytest.approx(ends[1])


def test_kernel_waits_for_its_launch(two_engines):
    # the host issues each launch after the kernel launch overhead (4 us); a lone kernel starts then
    report = run_program(Program((Kernel(cycles=CYCLES),)), two_engines)
    assert report.records[0].start == pytest.approx(LAUNCH)
    assert report.seconds == pytest.approx(LAUNCH + K)


def test_event_wait_orders_streams(two_engines):
    ops = (Kernel(cycles=CYCLES, stream="a"), EventRecord(event="done", stream="a"),
           EventWait(event="done", stream="b"), CopyD2H(bytes=MIB64, stream="b"))
    report = run_program(Program(ops), two_engines)
    copy = next(r for r in report.records if r.kind == "copy_d2h")
    assert copy.start == pytest.approx(LAUNCH + K)
    # without the wait it starts as soon as the host has issued it: after the kernel's launch
    free = run_program(Program((ops[0], ops[3])), two_engines)
    assert next(r for r in free.records if r.kind == "copy_d2h").start == pytest.approx(LAUNCH)


def test_wait_on_unrecorded_event_is_an_error(two_engines):
    with pytest.raises(ProgramError, match=r"ops\[0\]\.event: event 'x' is not recorded before this wait"):
        run_program(Program((EventWait(event="x"),)), two_engines)


def test_kernel_naming_a_workload_needs_a_cost_function(two_engines):
    with pytest.raises(ProgramError, match="kernel cost function"):
        run_program(Program((Kernel(workload="saxpy"),)), two_engines)


def test_trace_has_a_track_per_copy_engine(two_engines):
    trace = trace_dict(run_program(Program(pipeline("a") + pipeline("b")), two_engines))
    names = {(e["pid"], e["args"]["name"]) for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {(1, "SMs"), (1, "copy engine 0"), (1, "copy engine 1"), (1, "stream a"), (1, "stream b")} <= names
    tid = {name: e["tid"] for e in trace["traceEvents"] if e["name"] == "thread_name"
           for name in [e["args"]["name"]] if e["pid"] == 1}
    on_engines = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] in (tid["copy engine 0"],
                                                                                    tid["copy engine 1"])]
    assert len(on_engines) == 4 and all(e["dur"] == pytest.approx(H * 1e6) for e in on_engines)
    launches = [e for e in trace["traceEvents"] if e.get("cat") == "launch"]
    assert [e["dur"] for e in launches] == [pytest.approx(4.0)] * 2
    json.dumps(trace)


def test_yaml_program(tmp_path, two_engines):
    path = tmp_path / "p.yaml"
    path.write_text("description: copy and kernel\nops:\n"
                    "  - {op: copy_h2d, stream: a, bytes: 64 MiB}\n"
                    "  - {op: kernel, stream: a, cycles: 2000000, name: k}\n")
    program = load_program(path)
    assert program.name == "p" and program.description == "copy and kernel"
    assert program.ops == (CopyH2D(bytes=MIB64, stream="a"), Kernel(cycles=CYCLES, stream="a", name="k"))
    assert run_program(program, two_engines).seconds == pytest.approx(H + K)


@pytest.mark.parametrize(("line", "message"), [
    ("  - {op: copy_h2d, bytes: 64 furlongs}", r"p\.yaml:4: ops\[1\]\.bytes: expected a size in bytes"),
    ("  - {op: kernal, cycles: 5}", r"p\.yaml:4: ops\[1\]\.op: 'kernal' is not one of copy_h2d"),
    ("  - {op: kernel, cycles: 5, stram: a}", r"p\.yaml:4: ops\[1\]\.stram: unknown key \(did you mean 'stream'\?\)"),
    ("  - {op: kernel}", r"p\.yaml:4: ops\[1\]: a kernel needs either workload \(with params\) or cycles"),
    ("  - {op: all_reduce, bytes: 1024, gpus: [0, 1]}", r"p\.yaml:4: ops\[1\]\.gpus: GPU 1 does not exist"),
])
def test_yaml_errors_name_file_line_and_field(tmp_path, two_engines, line, message):
    path = tmp_path / "p.yaml"
    path.write_text(f"ops:\n  - {{op: copy_h2d, bytes: 4096}}\n\n{line}\n")
    with pytest.raises(ProgramError, match=message):
        run_program(load_program(path), two_engines)


def test_host_resident_design_has_no_copies():
    with pytest.raises(ProgramError, match="computes in host memory"):
        run_program(Program((CopyH2D(bytes=4096),)), load_config("cpu_8core"))
