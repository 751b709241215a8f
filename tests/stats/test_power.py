"""The power model (gpusim/stats/power.py): per-event energies against hand computation, the breakdown's
sum, energy = power x time, twice the work twice the energy, the DVFS curve and the power cap."""

from __future__ import annotations

import dataclasses
import re

import pytest

import gpusim
from gpusim.config import load_config
from gpusim.errors import ConfigError
from gpusim.stats.power import PARTS, activity, average_power, energy_breakdown, idle_power, kernel_power, voltage_mv
from tests.stats.build import exec_stats, timing

A100 = load_config("a100")


def flat(**kw):
    """a100's power section on one DVFS point (1000 MHz at 1000 mV: no voltage scaling), `kw` replaced."""
    return dataclasses.replace(A100.power, dvfs_clocks_mhz=(1000,), dvfs_voltages_mv=(1000,), **kw)


def cfg_with(power):
    return dataclasses.replace(A100, power=power)


def test_every_event_costs_what_the_hand_computation_says():
    """base_sms(): 500 warp instructions, fp32 busy 900 port-cycles, int 500, ldst 200 (a100: 16, 16 and 8
    lanes); 120 L1 sectors (30 + 70 + 10 + 10); 40 shared wavefronts; L2 30 hit + 70 miss + 20 written
    sectors; DRAM 2240 + 640 bytes, 3 activations; 1000 cycles at 1000 MHz (1 us), SMs powered 1500 cycles;
    the executor's counters: 500 warp instructions at SIMT efficiency 0.75 (12000 active lanes)."""
    pw = flat()
    t = timing(dram={"bytes_read": 2240, "bytes_written": 640, "row_misses": 2, "row_conflicts": 1})
    parts, seconds = energy_breakdown(pw, activity(t, cfg_with(pw), exec_stats(500, simt=0.75)), 1000.0)
    pj = 1e-12
    assert seconds == pytest.approx(1e-6)
    expect = {
        "instruction": 500 * 300 * pj,
        "register_file": 12000 * 14 * pj,
        "fp32": 900 * 16 * 0.75 * 15 * pj,
        "int": 500 * 16 * 0.75 * 10 * pj,
        "control": 200 * 8 * 0.75 * 4 * pj,
        "l1": 120 * 20 * pj,
        "shared": 40 * 60 * pj,
        "noc": 120 * 200 * pj,
        "l2": 120 * 100 * pj,
        "dram": 2880 * 8 * 3.9 * pj + 3 * 1.0e-9,
        "sm_static": 0.35 * 1500e-9,
        "uncore_static": 20 * 1e-6,
        "memory_static": 25 * 1e-6,
        "constant": 22 * 1e-6,
    }
    for part in PARTS:
        assert parts[part] == pytest.approx(expect.get(part, 0.0), rel=1e-12, abs=1e-18), part


def test_the_breakdown_sums_to_the_energy_and_energy_is_power_times_time():
    r = gpusim.simulate("saxpy", "a100", n=4096)
    k = r.kernel
    assert sum(k["energy_breakdown_j"].values()) == pytest.approx(k["energy_j"], rel=1e-12)
    assert k["energy_j"] == pytest.approx(k["average_power_w"] * k["power_kernel_seconds"], rel=1e-12)
    assert k["power_kernel_seconds"] == pytest.approx(k["cycles"] / (k["power_clock_mhz"] * 1e6), rel=1e-12)
    assert sum(k["power_breakdown_w"].values()) == pytest.approx(k["average_power_w"], rel=1e-12)
    assert not k["power_limited"] and k["power_clock_mhz"] == 1410
    # a small saxpy draws little above the board's floor: more than idle, far under the TDP
    assert idle_power(A100.power, 108) < k["average_power_w"] < 0.5 * A100.power.tdp_w


def test_twice_the_work_at_the_same_activity_costs_twice_the_energy():
    pw = A100.power
    act = activity(timing(), cfg_with(pw), exec_stats())
    one, two = (dict(energy_breakdown(pw, a, 1410.0)[0]) for a in (act, act.scaled(2)))
    assert sum(two.values()) == pytest.approx(2 * sum(one.values()), rel=1e-12)
    assert average_power(pw, act.scaled(2), 1410.0) == pytest.approx(average_power(pw, act, 1410.0), rel=1e-12)


def test_a_kernel_twice_as_long_costs_twice_the_energy():
    """ffma_peak with more iterations: each thread's FMA chains longer at the same rate, on top of the same
    set-up. Twice the added iterations add twice the cycles and twice the energy (the set-up cancels out)."""
    k = {i: gpusim.simulate("ffma_peak", "a100", n=512, iters=i).kernel for i in (16, 32, 48)}
    more_cycles = [k[i]["cycles"] - k[16]["cycles"] for i in (32, 48)]
    more_energy = [k[i]["energy_j"] - k[16]["energy_j"] for i in (32, 48)]
    assert more_cycles[1] / more_cycles[0] == pytest.approx(2, rel=0.01)
    assert more_energy[1] / more_energy[0] == pytest.approx(2, rel=0.01)


def test_the_dvfs_curve_is_linear_between_its_points_and_clamped_below():
    pw = A100.power  # (210, 700), (1080, 712), (1410, 880)
    assert voltage_mv(pw, 100) == 700 and voltage_mv(pw, 210) == 700
    assert voltage_mv(pw, 645) == pytest.approx(706)
    assert voltage_mv(pw, 1245) == pytest.approx(796)
    assert voltage_mv(pw, 1410) == 880
    assert voltage_mv(pw, 1740) == pytest.approx(1048)  # the last segment extended


def test_dynamic_energy_scales_with_v_squared_and_leakage_with_v():
    pw = A100.power
    act = activity(timing(), cfg_with(pw), exec_stats())
    top, _ = energy_breakdown(pw, act, 1410.0)
    low, _ = energy_breakdown(pw, act, 1080.0)
    v = 712 / 880
    assert low["fp32"] == pytest.approx(top["fp32"] * v * v)
    assert low["dram"] == pytest.approx(top["dram"])  # the memory's own supply
    # leakage power x V, over a time longer by 1410 / 1080
    assert low["uncore_static"] == pytest.approx(top["uncore_static"] * v * 1410 / 1080)
    assert low["constant"] == pytest.approx(top["constant"] * 1410 / 1080)


def test_over_the_power_limit_the_clock_drops_until_the_power_fits():
    t = dataclasses.replace(timing(), clock_mhz=1410.0)
    act = activity(t, A100, exec_stats())
    limit = (average_power(A100.power, act, 210) + average_power(A100.power, act, 1410)) / 2
    pw = dataclasses.replace(A100.power, tdp_w=limit)
    p = kernel_power(cfg_with(pw), t, exec_stats())
    assert p.unconstrained_power_w > limit and p.limited
    assert 210 < p.clock_mhz < 1410 and p.power_w == pytest.approx(limit, rel=1e-6)
    assert p.seconds == pytest.approx(1000 / (p.clock_mhz * 1e6))
    uncapped = kernel_power(cfg_with(pw), t, exec_stats(), cap=False)
    assert uncapped.clock_mhz == 1410 and uncapped.power_w == pytest.approx(p.unconstrained_power_w)
    # a limit under what the lowest clock draws: the lowest clock, still over the limit
    floor = kernel_power(cfg_with(dataclasses.replace(pw, tdp_w=1.0)), t, exec_stats())
    assert floor.clock_mhz == 210 and floor.power_w > 1.0


def test_ffma_stress_reaches_the_limit_and_reports_the_throttled_clock():
    k = gpusim.simulate("ffma_peak", "a100", n=108 * 512, iters=16).kernel
    assert k["unconstrained_power_w"] > 400 and k["power_limited"]
    assert k["average_power_w"] == pytest.approx(400, rel=1e-6)
    assert 1100 < k["power_clock_mhz"] < 1400


def test_a_config_without_a_power_section_reports_no_energy():
    r = gpusim.simulate("saxpy", "a100", n=1024, overrides={"power": None})
    assert r.power is None and "energy_j" not in r.kernel


@pytest.mark.parametrize(("override", "message"), [
    ({"power.dvfs_voltages_mv": [700, 880]}, "expected one voltage per dvfs_clocks_mhz point (3), got 2"),
    ({"power.dvfs_clocks_mhz": [210, 1410, 1080]}, "clock points must be strictly ascending"),
    ({"power.dvfs_voltages_mv": [880, 712, 700]}, "voltages must not descend as the clock rises"),
    ({"power.tdp_w": 0}, "0 W is below the minimum 1"),
])
def test_bad_power_fields_are_refused_with_their_name(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as e:
        load_config("a100", overrides=override)
    assert e.value.field == next(iter(override))


def test_the_power_metrics_are_those_documented_in_their_order():
    from pathlib import Path

    from gpusim.stats.metrics import POWER_METRICS

    k = gpusim.simulate("saxpy", "a100", n=1024).kernel
    assert [m for m in k if m in POWER_METRICS] == list(POWER_METRICS)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "stats.md").read_text()
    assert [m for m in POWER_METRICS if f"| `{m}` |" not in doc] == []
