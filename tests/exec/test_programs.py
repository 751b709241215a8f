"""Whole CUDA programs under gpusim exec, each run from its checked-in binary and from one nvcc builds now."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import PROGRAMS, checked_in, digest

from gpusim.config import load_config
from gpusim.exec import run_app

CFG = load_config("a100")


def _run(path, capfd, *args):
    result = run_app([str(path), *args], CFG, quiet=True)
    out, err = capfd.readouterr()
    return result, out, err


def test_every_runtime_call_answers_as_a_gpu_does(both_ways, capfd):
    result, out, err = _run(both_ways("runtime_calls"), capfd)
    failed = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
    assert failed == [] and "0 failures" in out, failed
    assert len([ln for ln in out.splitlines() if ln.startswith("ok ")]) >= 100
    facts = dict(ln.split(" ", 2)[1:] for ln in out.splitlines() if ln.startswith("fact "))
    sm = CFG.sm
    assert facts["name"] == "gpusim a100"
    assert int(facts["sms"]) == CFG.chip.sm_count == 108
    assert facts["cc"] == CFG.chip.compute_capability == "8.0"
    assert int(facts["warp"]) == sm.warp_size
    assert int(facts["smem_block"]) == sm.max_shared_memory_per_block_bytes
    assert int(facts["global"]) == CFG.chip.global_memory_bytes
    assert int(facts["l2"]) == CFG.l2.size_bytes
    assert int(facts["threads_sm"]) == sm.max_threads_per_sm and int(facts["regs_sm"]) == sm.registers_per_sm
    assert int(facts["clock_khz"]) == round(CFG.chip.clock_mhz * 1000)
    # 256-thread blocks of a kernel with 256 B of static shared memory at most: threads limit 2048/256 = 8
    assert int(facts["occupancy_256"]) == sm.max_threads_per_sm // 256
    # the fault: said once on stderr, the launch marked, the program sees cudaErrorIllegalAddress
    assert re.search(r"kernel _Z10wild_writePi faulted \(the program sees cudaErrorIllegalAddress\): "
                     r"out-of-bounds .* address 0x10", err)
    assert [r.kernel for r in result.launches if r.fault] == ["_Z10wild_writePi"]
    assert result.unsupported == ["cudaGraphCreate"]
    assert result.exit_status == 0
    # the elapsed time the program read is the timeline's, between its two events on stream s1
    rec = [r for r in result.report.records if r.kind == "event_record" and r.name == "event"]
    assert float(facts["elapsed_ms"]) == pytest.approx((rec[1].end - rec[0].end) * 1e3, rel=1e-6)


def test_two_streams_time_is_the_sum_derived_by_hand(both_ways, capfd):
    """Two streams, each H2D (256 KiB, pinned) -> kernel -> D2H, issued stream after stream. By hand, from the
    a100 config: a copy takes c = bytes / (31.5 GB/s x 0.83) on its PCIe direction and arrives 1 us (latency)
    later; copies of one direction queue for the link; kernels run one at a time; the host issues each
    kernel 4 us (launch overhead) after the previous one. So
      H2D_1 [0, c+l]            H2D_2 [c, 2c+l] (waits for the link)
      K_1   [c+l, c+l+k1]       K_2   [max(2c+l, end K_1), +k2]
      D2H_1 [end K_1, +c+l]     D2H_2 [max(end K_2, end K_1 + c), +c+l]
    and the program's time, and cudaEventElapsedTime between events on the legacy stream around it all,
    is the end of D2H_2."""
    result, out, _ = _run(both_ways("two_streams"), capfd)
    assert "0 mismatches" in out
    pcie = CFG.pcie
    c = (1 << 16) * 4 / (pcie.bandwidth_gbps * 1e9 * pcie.efficiency)
    lat = pcie.latency_ns * 1e-9
    overhead = CFG.launch.kernel_launch_overhead_ns * 1e-9
    k1, k2 = (r.cycles / (CFG.chip.clock_mhz * 1e6) for r in result.launches)
    assert [r.seconds for r in result.launches] == pytest.approx([k1, k2])
    k1_start = max(overhead, c + lat)
    k1_end = k1_start + k1
    k2_end = max(2 * overhead, 2 * c + lat, k1_end) + k2
    d2h1_end = k1_end + c + lat
    d2h2_end = max(k2_end, k1_end + c) + c + lat
    total = max(d2h1_end, d2h2_end)
    assert result.total_seconds == pytest.approx(total, rel=1e-9)
    elapsed = float(re.search(r"elapsed_ms (\S+)", out).group(1))
    assert elapsed == pytest.approx(total * 1e3, rel=1e-6)  # (a float, as CUDA returns it)
    # the same work in one stream would take longer: the streams overlap
    serial = 2 * (c + lat) + k1 + k2 + 2 * (c + lat)
    assert total < serial


def test_a_missing_api_is_one_line_and_the_program_goes_on(both_ways, capfd):
    result, out, err = _run(both_ways("missing_api"), capfd)
    assert out.splitlines() == ["before", "cudaCreateTextureObject: cudaErrorNotSupported",
                                "after: cudaMalloc cudaSuccess"]
    lines = [ln for ln in err.splitlines() if "cudaCreateTextureObject" in ln]
    assert lines == ["gpusim: cudaCreateTextureObject is not supported by gpusim exec (it returns "
                     "cudaErrorNotSupported)"]
    assert "Traceback" not in err and result.unsupported == ["cudaCreateTextureObject"]


@pytest.mark.parametrize("name, args, passed", [
    ("polybench_gemm", (), "Non-Matching CPU-GPU Outputs Beyond Error Threshold of 0.05 Percent: 0"),
    ("cuda_samples_vectorAdd", (), "Test PASSED"),
])
def test_public_suite_programs_pass_their_own_checks(both_ways, capfd, name, args, passed):
    result, out, _ = _run(both_ways(name), capfd, *args)
    assert passed in out and result.exit_status == 0
    assert result.launches and all(r.cycles > 0 and not r.fault for r in result.launches)
    assert result.total_seconds > result.kernel_seconds  # the copies are on the timeline too


def test_the_checked_in_binaries_are_current():
    for name in PROGRAMS:
        checked_in(name)  # (skips when stale; this test fails instead)
        stamp = (checked_in(name).parent / f"{name}.sha256").read_text().split()[0]
        assert stamp == digest(name), f"{name}: rebuild with python tests/exec/conftest.py"


def test_the_command_line(tmp_path):
    """gpusim exec as a user types it: the program's stdout untouched, gpusim's table on stderr, the exit
    status passed through, the JSON one row per launch, and `gpusim report` reads it."""
    prog = checked_in("exit_status")
    out_json = tmp_path / "run.json"
    done = subprocess.run([sys.executable, "-m", "gpusim", "exec", "--json", str(out_json), "--trace",
                           str(tmp_path / "trace.json"), "--", str(prog), "3"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 3
    assert done.stdout == "to stdout\n"
    assert done.stderr.startswith("to stderr\n")
    assert re.search(r"^\s+0\s+touch\s+1x1x1\s+32x1x1\s+[\d,]+\s+[\d.]+\s+\S+$", done.stderr, re.M)
    data = json.loads(out_json.read_text())
    assert data["mode"] == "exec" and data["exit_status"] == 3
    (row,) = data["launches"]
    assert row["kernel"] == "_Z5touchPi" and row["grid"] == [1, 1, 1] and row["block"] == [32, 1, 1]
    assert row["end_seconds"] - row["start_seconds"] == pytest.approx(row["seconds"])
    assert data["results"][0]["kernel"]["cycles"] == row["cycles"]
    assert json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    html = tmp_path / "run.html"
    rep = subprocess.run([sys.executable, "-m", "gpusim", "report", str(out_json), "-o", str(html)],
                         capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    assert "touch" in html.read_text()
