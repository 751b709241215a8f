"""What limits a program: twelve short kernels wait for the host's launches; copies that the kernels do
not overlap; or the kernels themselves."""

import pytest

from gpusim.config import load_config
from gpusim.system import load_program, run_program
from gpusim.system.report import KERNELS, LAUNCH_OVERHEAD, TRANSFERS


def _program(tmp_path, ops):
    path = tmp_path / "p.yaml"
    path.write_text("description: test\nops:\n" + "".join(f"  - {op}\n" for op in ops))
    return load_program(path)


def test_twelve_small_kernels_are_launch_overhead_bound(tmp_path):
    prog = _program(tmp_path, [f"{{op: kernel, stream: s, cycles: 1410, name: k{i}}}" for i in range(12)])
    report = run_program(prog, load_config("a100"))
    v = report.verdict()
    assert v.kind == LAUNCH_OVERHEAD
    # 12 kernels of 1 us (1,410 cycles at 1410 MHz) behind 4-us launches
    assert v.summary.startswith("12 kernels of 1.000 us on average behind 4.000-us launches: the GPU waits")
    assert "12 launches x 4.000 us = 48.000 us of host time" in v.evidence
    assert report.to_dict()["verdict"]["verdict"] == LAUNCH_OVERHEAD
    assert report.table().splitlines()[-3].startswith("verdict: launch-overhead: 12 kernels")


def test_long_kernels_are_the_programs_limit(tmp_path):
    prog = _program(tmp_path, [f"{{op: kernel, stream: s, cycles: 1410000, name: k{i}}}" for i in range(3)])
    v = run_program(prog, load_config("a100")).verdict()
    assert v.kind == KERNELS and "the kernels take 100% of the elapsed time" in v.summary


def test_copies_not_overlapped_are_the_limit(tmp_path):
    prog = _program(tmp_path, ["{op: copy_h2d, stream: s, bytes: 256 MiB}",
                               "{op: kernel, stream: s, cycles: 14100, name: k}"])
    v = run_program(prog, load_config("a100")).verdict()
    assert v.kind == TRANSFERS
    copy_us = float(v.summary.split("host-device copies take ")[1].split(" us")[0].replace(",", ""))
    assert copy_us == pytest.approx(256 * 2**20 / 26.1e9 * 1e6, rel=0.05)  # ~26 GB/s pinned PCIe 4.0
