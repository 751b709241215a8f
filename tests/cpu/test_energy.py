"""The CPU model's energy (issue 39: `cpu_power:`, gpusim/cpu/energy.py): each part against the counts it
multiplies, the parts add up, energy = average power x time, the FFMA stress near the package's TDP (the
fit), and the config checks."""

import pytest

from gpusim.config import load_config
from gpusim.cpu import simulate_cpu
from gpusim.cpu.energy import PARTS
from gpusim.errors import ConfigError


def test_the_parts_add_up_and_energy_is_power_times_time():
    cfg = load_config("cpu_8core")
    r = simulate_cpu("saxpy", cfg, n=1 << 16)
    e = r.energy
    assert list(e.breakdown_j) == list(PARTS)
    assert sum(e.breakdown_j.values()) == pytest.approx(r.energy_j, rel=1e-12)
    assert r.average_power_w * r.seconds == pytest.approx(r.energy_j, rel=1e-12)
    pw = cfg.cpu_power
    assert e.breakdown_j["instruction"] == pytest.approx(r.instructions * pw.instruction_pj * 1e-12, rel=1e-12)
    assert e.breakdown_j["dram"] == pytest.approx(r.dram_bytes * 8 * pw.dram_pj_per_bit * 1e-12, rel=1e-12)
    assert e.breakdown_j["l2"] == pytest.approx(
        (r.levels["l2"] + r.levels["llc"] + r.levels["dram"]) * pw.l2_line_pj * 1e-12, rel=1e-12)
    assert e.breakdown_j["llc"] == pytest.approx((r.levels["llc"] + r.levels["dram"]) * pw.llc_line_pj * 1e-12,
                                                 rel=1e-12)
    assert e.breakdown_j["uncore_static"] == pytest.approx(pw.uncore_static_w * r.seconds, rel=1e-12)
    assert e.breakdown_j["core_static"] == pytest.approx(pw.core_static_w * 8 * r.seconds, rel=1e-12)
    # saxpy streams: DRAM-bound, and its DRAM bits cost more than its instructions
    assert r.bound == "dram" and e.breakdown_j["dram"] > e.breakdown_j["instruction"]


def test_the_ffma_stress_on_every_core_draws_just_under_the_tdp():
    """The fit: AMD guarantees the base clock within the TDP, and an FMA on both pipes of every core is
    the heaviest load; 103.4 W of 105 (cpu_8core), 353 W of 360 (cpu_64core)."""
    for name in ("cpu_8core", "cpu_64core"):
        cfg = load_config(name)
        r = simulate_cpu("ffma_peak", cfg, n=cfg.cpu.cores * 2 * 1024, iters=16)
        assert 0.95 * cfg.cpu_power.tdp_w < r.average_power_w <= cfg.cpu_power.tdp_w, name
        e = r.energy.breakdown_j
        assert e["vector_fp"] > 0.25 * r.energy_j  # the FMAs are a large share


def test_twice_the_work_costs_twice_the_dynamic_energy():
    """ffma_peak at 8, 16 and 32 iterations: each added iteration adds the same FMAs, so the energy of the
    FMAs and instructions rises by the same amount per iteration, and the time with it."""
    cfg = load_config("cpu_8core")
    runs = [simulate_cpu("ffma_peak", cfg, n=16 * 1024, iters=i) for i in (8, 16, 32)]
    for part in ("instruction", "vector_fp"):
        e = [r.energy.breakdown_j[part] for r in runs]
        assert e[2] - e[1] == pytest.approx(2 * (e[1] - e[0]), rel=1e-9)
    dynamic = [r.energy.dynamic_j for r in runs]
    assert dynamic[2] - dynamic[1] == pytest.approx(2 * (dynamic[1] - dynamic[0]), rel=0.01)
    assert runs[2].seconds - runs[1].seconds == pytest.approx(2 * (runs[1].seconds - runs[0].seconds), rel=0.05)


def test_a_cpu_config_without_the_section_reports_no_energy():
    cfg = load_config("cpu_8core", overrides={"cpu_power": None})
    r = simulate_cpu("saxpy", cfg, n=4096)
    assert cfg.cpu_power is None and r.energy is None and r.energy_j is None and r.average_power_w is None


def test_cpu_power_needs_a_cpu_section():
    with pytest.raises(ConfigError, match=r"cpu_power.*needs a cpu: section"):
        load_config("a100", overrides={"cpu_power": {"tdp_w": 100, "uncore_static_w": 1, "core_static_w": 1,
                                                     "dram_static_w": 1, "instruction_pj": 1, "vector_fp_op_pj": 1,
                                                     "l1_access_pj": 1, "l2_line_pj": 1, "llc_line_pj": 1,
                                                     "dram_pj_per_bit": 1}})


def test_a_tdp_below_the_static_power_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match=r"cpu_power.tdp_w.*below the package's static power"):
        load_config("cpu_8core", overrides={"cpu_power.tdp_w": 20})
