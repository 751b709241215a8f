"""Host-device copies over PCIe, derived by hand from gpusim/data/configs/a100.yaml: PCIe 4.0 x16 at 31.5 GB/s per
direction x efficiency 0.83 = 26.145 GB/s, 1 us latency; pageable copies through 2 MiB staging buffers
filled by a 10 GB/s memcpy."""

import pytest

from gpusim.config import load_config
from gpusim.system import CopyD2H, CopyH2D, Program, run_program

MIB64 = 64 * 2**20
LINK = 31.5e9 * 0.83  # bytes/s
LATENCY = 1e-6
PINNED = LATENCY + MIB64 / LINK  # 2.5678 ms


@pytest.fixture(scope="module")
def a100():
    return load_config("a100")


def seconds(cfg, *ops):
    return run_program(Program(ops), cfg).seconds


def test_pinned_h2d_is_latency_plus_bytes_over_achieved_bandwidth(a100):
    assert seconds(a100, CopyH2D(bytes=MIB64)) == pytest.approx(PINNED, rel=0.01)
    assert seconds(a100, CopyD2H(bytes=MIB64)) == pytest.approx(PINNED, rel=0.01)


def test_pageable_is_staged_and_slower(a100):
    # 32 chunks of 2 MiB: the 10 GB/s memcpy is the slower stage, so 32 memcpys, then the last chunk's DMA
    chunk = 2 * 2**20
    expect = 32 * chunk / 10e9 + chunk / LINK + LATENCY  # 6.792 ms
    pageable = seconds(a100, CopyH2D(bytes=MIB64, pinned=False))
    assert pageable == pytest.approx(expect, rel=1e-9)
    assert pageable > 2.5 * PINNED
    assert seconds(a100, CopyD2H(bytes=MIB64, pinned=False)) == pytest.approx(expect, rel=1e-9)


def test_host_buffers_field_sets_the_default(a100):
    pageable = load_config("a100", overrides={"host.buffers": "pageable"})
    assert seconds(pageable, CopyH2D(bytes=MIB64)) == seconds(a100, CopyH2D(bytes=MIB64, pinned=False))


def both_directions():
    return CopyH2D(bytes=MIB64, stream="in"), CopyD2H(bytes=MIB64, stream="out")


def test_h2d_and_d2h_overlap_on_two_engines(a100):
    assert a100.chip.copy_engines == 3 and a100.pcie.full_duplex
    assert seconds(a100, *both_directions()) == pytest.approx(PINNED, rel=1e-9)


def test_one_copy_engine_serialises_directions():
    one = load_config("a100", overrides={"chip.copy_engines": 1})
    assert seconds(one, *both_directions()) == pytest.approx(2 * PINNED, rel=1e-9)


def test_half_duplex_link_shares_one_channel():
    half = load_config("a100", overrides={"pcie.full_duplex": False})
    # the second copy takes the channel as the first one's last byte leaves, a latency before it arrives
    assert seconds(half, *both_directions()) == pytest.approx(2 * PINNED - LATENCY, rel=1e-9)


def test_copy_records_name_their_engines(a100):
    report = run_program(Program(both_directions()), a100)
    assert sorted(r.engine for r in report.records) == ["copy engine 0", "copy engine 1"]
    assert [r.bytes for r in report.records] == [MIB64, MIB64]
    assert report.busy(0) == {"compute": 0.0, "copy": pytest.approx(PINNED), "communication": 0.0, "overlap": 0.0}
