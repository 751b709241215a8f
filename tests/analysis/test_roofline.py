"""Roofline arithmetic against numbers worked by hand from the configs.

a100: P = 64 FP32 lanes/SM x 108 SMs x 2 flop x 1.41 GHz = 19491.84 GFLOP/s; DRAM 1555 GB/s;
L2 = 80 slices x 64 B/cycle x 1410 MHz / 1000 = 7219.2 GB/s; ridges P/1555 = 12.5349 and P/7219.2 = 2.7.
gtx980: P = 128 x 16 x 2 x 1.216 = 4980.736 GFLOP/s; DRAM 224 GB/s; L2 = 8 x 32 x 1216 / 1000 = 311.296 GB/s.
"""

import pytest

from gpusim.analysis import arithmetic_intensity, l2_bandwidth_gbps, roofline
from gpusim.config import load_config


def test_a100_roofs_and_ridges():
    r = roofline(load_config("a100"))
    assert r.config == "a100"
    assert r.peak_fp32_gflops == pytest.approx(19491.84)
    assert r.dram_bandwidth_gbps == 1555
    assert r.l2_bandwidth_gbps == pytest.approx(7219.2)
    assert r.dram_ridge == pytest.approx(19491.84 / 1555)
    assert r.dram_ridge == pytest.approx(12.5349, abs=1e-4)
    assert r.l2_ridge == pytest.approx(2.7)


def test_gtx980_roofs():
    cfg = load_config("gtx980")
    r = roofline(cfg)
    assert r.peak_fp32_gflops == pytest.approx(4980.736)
    assert l2_bandwidth_gbps(cfg) == pytest.approx(311.296)
    assert r.dram_ridge == pytest.approx(4980.736 / 224)


def test_l2_roof_follows_the_slice_fields():
    cfg = load_config("a100", overrides={"l2.slices": 40, "l2.slice_bandwidth_bytes_per_cycle": 32})
    assert l2_bandwidth_gbps(cfg) == pytest.approx(40 * 32 * 1.41)


def test_attainable_is_the_lower_roof():
    r = roofline(load_config("a100"))
    assert r.attainable(1.0) == pytest.approx(1555)                       # under the DRAM slope
    assert r.attainable(1.0, r.l2_bandwidth_gbps) == pytest.approx(7219.2)  # under the L2 slope
    assert r.attainable(100.0) == pytest.approx(19491.84)                 # past the ridge: the peak


def test_arithmetic_intensity():
    assert arithmetic_intensity(8192, 32768) == 0.25
    assert arithmetic_intensity(None, 100) is None
    assert arithmetic_intensity(100, 0) is None
