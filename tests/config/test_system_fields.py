"""The host, copy-engine, link and node fields: loaded from the built-ins, validated with file:line:field
errors, and the system configs that extend a100."""

import pytest

from gpusim.config import load_config
from gpusim.errors import ConfigError


def test_a100_host_and_links():
    cfg = load_config("a100")
    assert cfg.chip.copy_engines == 3
    assert (cfg.pcie.efficiency, cfg.pcie.full_duplex, cfg.nvlink.efficiency) == (0.83, True, 0.8)
    assert (cfg.host.memory_bandwidth_gbps, cfg.host.memcpy_bandwidth_gbps) == (204.8, 10)
    assert (cfg.host.staging_buffer_bytes, cfg.host.buffers, cfg.host.resident) == (2 * 2**20, "pinned", False)
    assert (cfg.system.gpus, cfg.system.gpu_interconnect, cfg.system.chunk_bytes) == (1, "nvswitch", 131072)
    assert cfg.derived()["pcie_achieved_bandwidth_gbps"] == pytest.approx(26.145)


@pytest.mark.parametrize(("name", "gpus", "link"), [("dgx_a100", 8, "nvswitch"), ("a100x8_pcie", 8, "pcie"),
                                                     ("a100x4_ring", 4, "nvlink_ring")])
def test_system_configs_extend_a100(name, gpus, link):
    cfg, a100 = load_config(name), load_config("a100")
    assert (cfg.system.gpus, cfg.system.gpu_interconnect) == (gpus, link)
    assert (cfg.chip, cfg.sm, cfg.dram, cfg.pcie, cfg.host) == (a100.chip, a100.sm, a100.dram, a100.pcie, a100.host)


def test_cpu_8core_is_a_latency_design():
    cfg = load_config("cpu_8core")
    assert (cfg.chip.sm_count, cfg.chip.clock_mhz, cfg.sm.warp_size) == (8, 4500, 8)
    assert (cfg.cpu.cores, cfg.cpu.smt_threads, cfg.cpu.simd_lanes, cfg.cpu.fma_ports) == (8, 2, 8, 2)
    assert cfg.cpu.dram_channels * cfg.cpu.dram_channel_gbps == cfg.dram.bandwidth_gbps == 96
    assert cfg.host.resident and cfg.launch.kernel_launch_overhead_ns == 1000
    assert all(u.lanes_per_subpartition <= 8 for u in cfg.units.values())


def test_cpu_64core_is_the_server():
    cfg = load_config("cpu_64core")
    assert (cfg.cpu.cores, cfg.chip.sm_count, cfg.cpu.dram_channels, cfg.cpu.llc_bytes) == (64, 64, 12, 256 << 20)
    assert cfg.cpu.dram_channels * cfg.cpu.dram_channel_gbps == pytest.approx(cfg.dram.bandwidth_gbps)


@pytest.mark.parametrize(("override", "message"), [
    ({"cpu.simd_lanes": 16}, r"cpu\.simd_lanes: 16 must equal sm\.warp_size 8"),
    ({"cpu.cores": 4}, r"cpu\.cores: 4 must equal chip\.sm_count 8"),
    ({"cpu.l2_bytes": 1 << 30}, r"cpu\.l2_bytes: expected line_bytes <= l1_bytes <= l2_bytes <= llc_bytes"),
    ({"cpu.rob_entries": 0}, r"cpu\.rob_entries: 0 entries is below the minimum 1"),
])
def test_cpu_section_errors_are_one_line(override, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_config("cpu_8core", overrides=override)
    assert "\n" not in str(err.value)


def child(tmp_path, text: str) -> str:
    path = tmp_path / "child.yaml"
    path.write_text("extends: a100\n" + text)
    return str(path)


@pytest.mark.parametrize(("text", "message"), [
    ("host:\n  buffers: paged\n", r"child\.yaml:3: host\.buffers: 'paged' is not one of 'pinned', 'pageable'"),
    ("system:\n  gpus: 0\n", r"child\.yaml:3: system\.gpus: 0 count is below the minimum 1"),
    ("pcie:\n  efficiency: 1.5\n", r"child\.yaml:3: pcie\.efficiency: 1\.5 fraction is above the maximum 1\.0"),
    ("pcie:\n  full_duplex: 1\n", r"child\.yaml:3: pcie\.full_duplex: expected true or false"),
    ("chip:\n  copy_engines: 0\n", r"child\.yaml:3: chip\.copy_engines: 0 count is below the minimum 1"),
    ("nvlink:\n  links: 0\n  version: 0\n  bandwidth_per_link_gbps: 0\n",
     r"a100\.yaml:\d+: system\.gpu_interconnect: nvswitch needs NVLink, but nvlink\.links is 0"),
    ("nvlink:\n  links: 3\nsystem:\n  gpu_interconnect: nvlink_ring\n",
     r"child\.yaml:5: system\.gpu_interconnect: nvlink_ring splits the links between two neighbours"),
    ("host:\n  resident: true\nsystem:\n  gpus: 2\n", r"child\.yaml:5: system\.gpus: a host-resident design"),
    ("system:\n  gpu_link: pcie\n", r"child\.yaml:3: system\.gpu_link: unknown key"),
])
def test_errors_name_file_line_and_field(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_config(child(tmp_path, text))
