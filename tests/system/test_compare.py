"""CPU-latency vs GPU-throughput designs (gpusim.analysis.compare) on saxpy: cpu_8core (the CPU model:
1 us thread-pool dispatch, 4.5 GHz, no PCIe) against a100 (4 us launch, 1410 MHz, PCIe 4.0 copies)."""

import pytest

from gpusim.analysis.compare import compare, log_sizes
from gpusim.errors import GpusimError
from gpusim.plot.compare import compare_figure

SIZES = log_sizes(1e2, 1e7)
CONFIGS = ["cpu_8core", "a100"]
SMALL = 2**12  # simulate up to this; a100's anchors are raised to two waves (2^19, 2^18)


@pytest.fixture(scope="module")
def plain():
    return compare("saxpy", CONFIGS, SIZES, max_simulated=SMALL)


@pytest.fixture(scope="module")
def copied():
    return compare("saxpy", CONFIGS, SIZES, include_transfers=True, max_simulated=SMALL)


def point(c, config, n):
    return next(p for p in c.series(config) if p.size == n)


def test_log_sizes():
    assert SIZES == [100, 1000, 10_000, 100_000, 1_000_000, 10_000_000]
    assert log_sizes(1e2, 1e4, per_decade=2) == [100, 316, 1000, 3162, 10_000]


def test_cpu_has_the_lower_latency_on_one_element(plain):
    cpu, gpu = plain.latency
    assert (cpu.config, gpu.config) == ("cpu_8core", "a100")
    # the launch overhead is each config's launch.kernel_launch_overhead_ns, then the kernel's cycles
    assert cpu.launch_seconds == pytest.approx(1e-6) and gpu.launch_seconds == pytest.approx(4e-6)
    assert cpu.seconds == pytest.approx(1e-6 + cpu.kernel_seconds)
    assert gpu.seconds == pytest.approx(4e-6 + gpu.kernel_seconds)
    assert cpu.seconds < gpu.seconds / 3


def test_gpu_has_the_higher_throughput_on_a_large_problem(plain):
    cpu, gpu = point(plain, "cpu_8core", 10_000_000), point(plain, "a100", 10_000_000)
    assert cpu.extrapolated and gpu.extrapolated
    assert gpu.throughput > 25 * cpu.throughput
    # the CPU streams at its STREAM triad figure (62.4 GB/s: 96 GB/s x 0.65), its arrays (120 MB) beyond its
    # 32 MB L3, so y's lines are written back: 12 bytes an element
    assert 12 * cpu.size / cpu.kernel_seconds == pytest.approx(62.4e9, rel=0.02)
    # a100 reads saxpy's x and y (8 bytes an element; y's writes stay in the 40 MB write-back L2 at the
    # simulated sizes the line is drawn from) at its DRAM roof: the line through the anchors (1 and 2 waves,
    # 2^18 and 2^19: 1,914 cycles for 2 MiB, 1,545 GB/s, the fill still in it) is floored by the data bus,
    # 1555 GB/s x dram.efficiency 0.97 = 1508 GB/s; the bank model's own steady state is ~92 % (1431 GB/s)
    assert 8 * gpu.size / gpu.kernel_seconds == pytest.approx(1555e9 * 0.97, rel=0.001)


def test_points_up_to_max_simulated_are_simulated(plain):
    assert [p.extrapolated for p in plain.series("a100")] == [False, False, True, True, True, True]


def test_crossover_without_copies(plain):
    x = plain.crossover("cpu_8core", "a100")
    assert (x.faster_below, x.faster_above) == ("cpu_8core", "a100")
    assert 10_000 < x.size < 100_000


def test_transfers_count_the_inputs_and_outputs(copied):
    gpu = point(copied, "a100", 1_000_000)
    # saxpy copies x and y in (8 bytes an element) and y out (4)
    assert (gpu.h2d_bytes, gpu.d2h_bytes) == (8_000_000, 4_000_000)
    link = 31.5e9 * 0.83
    assert gpu.copy_seconds == pytest.approx(2e-6 + 12_000_000 / link, rel=1e-6)
    cpu = point(copied, "cpu_8core", 1_000_000)
    assert (cpu.h2d_bytes, cpu.d2h_bytes, cpu.copy_seconds) == (0, 0, 0)


def test_transfers_take_the_crossover_away(plain, copied):
    # with PCIe copies (12 bytes an element at 26 GB/s) the a100 never overtakes a CPU streaming at 62 GB/s
    assert plain.crossover("cpu_8core", "a100") is not None
    assert copied.crossover("cpu_8core", "a100") is None
    assert all(c.seconds < g.seconds for c, g in zip(copied.series("cpu_8core"), copied.series("a100"), strict=True))
    # each point also keeps its time without the copies
    gpu = point(copied, "a100", 1_000_000)
    assert gpu.kernel_only_seconds == pytest.approx(point(plain, "a100", 1_000_000).seconds)


def test_write_only_outputs_are_not_copied_in():
    c = compare("vecadd", ["a100"], [1000], include_transfers=True, max_simulated=SMALL)
    assert (c.points[0].h2d_bytes, c.points[0].d2h_bytes) == (8000, 4000)


def test_growing_blocks_cannot_be_extrapolated():
    # stream_copy's grid is fixed (864 blocks): more elements mean more work per block
    with pytest.raises(GpusimError, match="warp instructions per block change with n"):
        compare("stream_copy", ["cpu_8core"], [1000, 10**6], max_simulated=2**14)


def test_figure_reads_back(plain):
    fig = compare_figure(plain)
    times, bars = fig.axes
    lines = {line.get_gid(): line for line in times.get_lines()}
    for config in CONFIGS:
        xs, ys = lines[f"time:{config}"].get_data()
        assert list(xs) == SIZES and list(ys) == [p.seconds for p in plain.series(config)]
        assert list(lines[f"extrapolated:{config}"].get_xdata()) == SIZES[2:]
    (x,) = lines["crossover"].get_xdata()
    assert x == pytest.approx(plain.crossover("cpu_8core", "a100").size)
    assert times.get_xscale() == times.get_yscale() == "log"
    assert times.get_xlabel() == "problem size n (elements)" and times.get_ylabel() == "time (s)"
    assert [b.get_height() for b in bars.patches] == [pytest.approx(p.seconds * 1e6) for p in plain.latency]
    assert [t.get_text() for t in bars.get_xticklabels()] == CONFIGS
    assert "saxpy" in fig.get_suptitle() and bars.get_ylabel() == "time (us)"


def test_figure_with_copies_draws_each_gpu_without_them_too(copied):
    fig = compare_figure(copied)
    times = fig.axes[0]
    lines = {line.get_gid(): line for line in times.get_lines()}
    assert list(lines["without_copies:a100"].get_ydata()) == [p.kernel_only_seconds for p in copied.series("a100")]
    assert "without_copies:cpu_8core" not in lines  # host-resident: nothing to copy
    note = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
    assert "the bus" in note
