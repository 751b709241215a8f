"""A launch needing more simulated memory than chip.global_memory_bytes, or more host memory than is
available, is refused before anything is allocated, with the estimate."""

from __future__ import annotations

import pytest

import gpusim
from gpusim.errors import LaunchError
from gpusim.functional import memory
from gpusim.workloads import loader


def test_arrays_larger_than_the_devices_memory_are_refused(monkeypatch):
    cfg = gpusim.load_config("a100", overrides={"chip.global_memory_bytes": 1_000_000})
    with pytest.raises(LaunchError, match=r"^launch: chip.global_memory_bytes: the launch's arrays need 8,389,120 "
                                          r"bytes \(8.0 MiB\) of device memory; a100 has 1,000,000"):
        gpusim.run_workload("saxpy", cfg, n=1 << 20)
    gpusim.run_workload("saxpy", cfg, n=1000).check()  # 8 KB fit


def test_saxpy_at_2_to_the_31_is_refused_before_its_inputs_exist(monkeypatch):
    made = []
    wl = gpusim.load_workload("saxpy")
    monkeypatch.setattr(type(wl), "inputs", lambda self, p, seed=0: made.append(p))
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 16 << 30)
    with pytest.raises(LaunchError, match=r"host memory: needs about 72.00 GiB of host memory \(3 copies of about "
                                          r"25,769,803,776 bytes.*; 16.00 GiB is available"):
        wl.run({"n": 1 << 31}, "a100")
    assert made == []


def test_the_exact_sizes_are_checked_against_the_host_where_no_estimate_exists(monkeypatch):
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 1000)
    wl = gpusim.load_workload("transpose_naive")  # no bytes_moved: checked once inputs() has run
    assert wl.bytes_expr is None
    with pytest.raises(LaunchError, match=r"host memory: needs about .* of the .* bytes of buffers inputs\(\) made"):
        wl.run({"rows": 64, "cols": 64}, "a100")


def test_the_footprint_counts_alignment_and_guard_gaps():
    assert memory.footprint([]) == 0
    assert memory.footprint([1]) == 1 + memory.GUARD_BYTES
    assert memory.footprint([100, 100]) == 512 + 100 + memory.GUARD_BYTES  # the second starts 256-aligned
    assert loader.HOST_COPIES_VERIFIED == 3
