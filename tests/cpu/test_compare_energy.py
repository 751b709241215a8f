"""`gpusim compare` on energy (issue 39, item 3): energy to solution per element and performance per watt
for each design, checked against the per-run energies (the GPU power model's on a simulate() of the same
kernel, the CPU model's), which design uses less at each size, and the crossover in energy beside the
crossover in time."""

import pytest

from gpusim.analysis.compare import compare, log_sizes
from gpusim.config import load_config
from gpusim.cpu import simulate_cpu
from gpusim.stats.power import kernel_power
from gpusim.stats.simulate import simulate

SMALL = 2**12


def _at(c, config, n):
    return next(p for p in c.series(config) if p.size == n)


@pytest.fixture(scope="module")
def vecadd():
    return compare("vecadd", ["cpu_8core", "a100"], log_sizes(1e2, 1e7), include_transfers=True,
                   max_simulated=SMALL)


def test_vecadd_with_copies_the_cpu_uses_less_energy_at_every_size(vecadd):
    assert [vecadd.best(n, "energy") for n in vecadd.sizes] == ["cpu_8core"] * len(vecadd.sizes)
    assert vecadd.energy_crossovers == ()
    assert "On energy: cpu_8core uses the least energy at every size" in vecadd.to_dict()["explanation"]
    # the GPU's energy per element falls with n (its launch is amortised) towards what the bus costs
    gpu = [p.energy_per_element_j for p in vecadd.series("a100")]
    assert gpu == sorted(gpu, reverse=True)


def test_a_simulated_gpu_point_is_its_kernel_plus_the_held_clocks_over_the_copies_plus_pcie(vecadd):
    n = 1000
    p = _at(vecadd, "a100", n)
    cfg = load_config("a100")
    r = simulate("vecadd", cfg, n=n, block=256)
    kernel = kernel_power(cfg, r.timing, r.run.result.stats, cap=False).energy_j
    pw = cfg.power
    held = pw.constant_w + pw.memory_static_w + pw.uncore_static_w + pw.sm_static_w * 108  # 1410 MHz: V = Vmax
    copied_bits = 8 * (3 * 4 * n)  # a and b in, c out: 4-byte floats
    expected = kernel + held * (p.seconds - p.kernel_seconds) + copied_bits * 6.5e-12
    assert p.h2d_bytes + p.d2h_bytes == 12 * n
    assert p.kernel_energy_j == pytest.approx(kernel, rel=1e-9)
    assert p.energy_j == pytest.approx(expected, rel=1e-9)
    assert p.energy_per_element_j == pytest.approx(expected / n, rel=1e-9)
    assert p.elements_per_joule == pytest.approx(n / expected, rel=1e-9)
    assert p.average_power_w == pytest.approx(expected / p.seconds, rel=1e-9)


def test_a_simulated_cpu_point_is_the_cpu_models_energy_plus_the_awake_package_over_the_launch(vecadd):
    n = 1000
    p = _at(vecadd, "cpu_8core", n)
    cfg = load_config("cpu_8core")
    r = simulate_cpu("vecadd", cfg, n=n, block=256)
    pw = cfg.cpu_power
    awake = pw.uncore_static_w + pw.core_static_w * 8 + pw.dram_static_w
    assert p.kernel_energy_j == pytest.approx(r.energy_j, rel=1e-9)
    assert p.energy_j == pytest.approx(r.energy_j + awake * (p.seconds - p.kernel_seconds), rel=1e-9)


def test_an_extrapolated_point_is_the_events_on_the_line_plus_static_power_over_its_time(vecadd):
    """Past the anchors the dynamic energy per element is the anchors' (vecadd: the same events per
    element), so the GPU's kernel energy is n x that plus the static watts over the kernel's time."""
    cfg = load_config("a100")
    big = _at(vecadd, "a100", 10**7)
    assert big.extrapolated
    runs = [simulate("vecadd", cfg, n=a, block=256) for a in (2**18, 2**19)]  # the a100's anchors
    powers = [kernel_power(cfg, r.timing, r.run.result.stats, cap=False) for r in runs]
    dynamic = [kp.energy_j - kp.static_w * kp.seconds for kp in powers]
    per_element = (dynamic[1] - dynamic[0]) / 2**18
    seconds = big.kernel_seconds - 0  # the kernel's time (busy compute)
    expected = dynamic[1] + per_element * (10**7 - 2**19) + powers[1].static_w * seconds
    assert big.kernel_energy_j == pytest.approx(expected, rel=0.01)


def test_matmul_the_a100_wins_on_energy_above_a_crossover_later_than_in_time():
    c = compare("matmul_tiled", ["cpu_8core", "a100"], [16, 64, 256], include_transfers=True, metric="energy")
    assert [c.best(n) for n in c.sizes] == ["cpu_8core", "cpu_8core", "a100"]  # --metric energy: least energy
    assert [c.best(n, "time") for n in c.sizes] == ["cpu_8core", "cpu_8core", "a100"]
    (e,) = c.energy_crossovers
    t = c.crossover("cpu_8core", "a100")
    assert (e.faster_below, e.faster_above) == ("cpu_8core", "a100") and 64 < e.size < 256
    # the a100 draws more watts than the CPU package: it must be further ahead in time to win on energy
    assert e.size > t.size
    assert c.to_dict()["best"] == [{"size": 16, "config": "cpu_8core"}, {"size": 64, "config": "cpu_8core"},
                                   {"size": 256, "config": "a100"}]
    assert c.to_dict()["explanation"].startswith("On energy: cpu_8core uses the least energy at n = 16..64; a100")
    for n in c.sizes:
        least = min(("cpu_8core", "a100"), key=lambda name: _at(c, name, n).energy_j)
        assert c.best(n) == least
