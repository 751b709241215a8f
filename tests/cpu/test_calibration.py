"""The CPU model against published figures for the CPUs it models (gpusim/data/measurements/
cpu_published.json, sources in docs/cpu.md), within 15%: STREAM triad bandwidth (saxpy, y = a x + y,
is the triad's traffic: two reads and a write per element, 12 bytes, arrays beyond the LLC), idle DRAM
latency (a random pointer chase, one line per node), and one core's FP32 FMA throughput (ffma_peak, one
block on one core)."""

import json

import pytest

from gpusim.config import load_config
from gpusim.cpu import simulate_cpu
from gpusim.data import data_dir

PUBLISHED = json.loads((data_dir("measurements") / "cpu_published.json").read_text())
TOL = 0.15


def expected(name, figure):
    return PUBLISHED[name][figure]["value"]


@pytest.mark.parametrize("name", ["cpu_8core", "cpu_64core"])
def test_stream_triad_bandwidth(name):
    # 8M elements: 64 MiB of arrays, beyond cpu_8core's 32 MB L3; the server's 256 MB L3 is split in 8
    # CCDs of 32 MB (a core's data lives in its own CCD's), so the same arrays outgrow it
    cfg = load_config(name, overrides={"cpu.llc_bytes": 32 << 20})
    n = 1 << 23
    r = simulate_cpu("saxpy", cfg, n=n)
    assert r.bound == "dram"
    assert 12 * n / r.seconds / 1e9 == pytest.approx(expected(name, "stream_triad_gbps"), rel=TOL)


@pytest.mark.parametrize("name", ["cpu_8core", "cpu_64core"])
def test_idle_memory_latency(name):
    n = 2000
    r = simulate_cpu("chase", load_config(name), n=n)
    assert r.levels["dram"] >= n - 1  # a random cycle through cold lines: every step a DRAM access
    assert r.seconds / n * 1e9 == pytest.approx(expected(name, "idle_latency_ns"), rel=TOL)


@pytest.mark.parametrize("name", ["cpu_8core", "cpu_64core"])
def test_fma_throughput_per_core(name):
    r = simulate_cpu("ffma_peak", load_config(name), n=256, iters=32)  # one block: one core
    assert r.threads_used == 1
    assert 128 * 32 * 256 / r.seconds / 1e9 == pytest.approx(expected(name, "fma_gflops_per_core"), rel=TOL)


def test_the_prefetcher_and_the_rob_are_what_let_a_core_stream():
    cfg = load_config("cpu_8core")
    base = simulate_cpu("saxpy", cfg, n=4096)
    off = simulate_cpu("saxpy", load_config("cpu_8core", overrides={"cpu.prefetch_max_stride_bytes": 0}), n=4096)
    assert base.prefetched > 0 and off.prefetched == 0
    assert off.breakdown["memory"] > base.breakdown["memory"]


def test_a_data_dependent_branch_mispredicts_and_costs_the_penalty():
    cfg = load_config("cpu_8core")
    uniform = simulate_cpu("divergence", cfg, n=4096, paths=1)
    mixed = simulate_cpu("divergence", cfg, n=4096, paths=3)  # 8 lanes, 3 paths: the pattern shifts group by group
    assert uniform.breakdown["branch"] == uniform.mispredictions * cfg.cpu.branch_mispredict_penalty_cycles
    assert mixed.mispredictions > 0
    assert mixed.breakdown["branch"] == mixed.mispredictions * cfg.cpu.branch_mispredict_penalty_cycles


def test_the_chase_is_a_serial_chain_and_the_gather_is_not():
    from gpusim.cpu.kernel import analyse
    from gpusim.workloads import load_workload

    assert analyse(load_workload("chase").program).serial.sum() == 1
    assert analyse(load_workload("embedding").program).serial.sum() == 0
