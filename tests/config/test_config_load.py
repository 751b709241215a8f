"""The built-in configurations load, carry the figures the issue asks for, and derive the right peaks."""

import dataclasses
import json

import pytest

from gpusim.config import Config, builtin_configs, load_config
from gpusim.config.loader import config_dirs
from gpusim.errors import ConfigError


@pytest.fixture(scope="module")
def a100():
    return load_config("a100")


@pytest.fixture(scope="module")
def gtx980():
    return load_config("gtx980")


def test_builtins_are_listed():
    assert {"a100", "gtx980", "cpu_like"} <= set(builtin_configs())


@pytest.mark.parametrize("name", ["a100", "gtx980", "cpu_like"])
def test_every_builtin_loads(name):
    cfg = load_config(name)
    assert isinstance(cfg, Config) and cfg.name == name
    assert cfg.source.endswith(f"configs/{name}.yaml")
    assert cfg.description


def test_a100_interface(a100):
    assert a100.chip.compute_capability == "8.0"
    assert (a100.chip.clock_mhz, a100.chip.sm_count) == (1410, 108)
    assert a100.chip.gpcs * a100.chip.sms_per_gpc >= 108
    assert a100.chip.max_grid_dims == (2147483647, 65535, 65535)
    sm = a100.sm
    assert (sm.warp_size, sm.subpartitions, sm.max_threads_per_block) == (32, 4, 1024)
    assert sm.max_block_dims == (1024, 1024, 64)
    assert (sm.max_warps_per_sm, sm.max_threads_per_sm, sm.max_blocks_per_sm) == (64, 2048, 32)
    assert sm.registers_per_sm == sm.max_registers_per_block == 65536
    assert sm.max_registers_per_thread == 255
    assert (sm.register_allocation_unit_size, sm.register_allocation_granularity) == (256, "warp")
    assert sm.shared_memory_per_sm_bytes == 167936
    assert sm.shared_memory_carveouts_bytes == tuple(k * 1024 for k in (0, 8, 16, 32, 64, 100, 132, 164))
    assert sm.max_shared_memory_per_block_bytes == 49152
    assert sm.max_shared_memory_per_block_optin_bytes == 166912
    assert sm.shared_memory_allocation_unit_bytes == 128
    assert sm.reserved_shared_memory_per_block_bytes == 1024
    assert sm.l1_shared_combined_bytes == 192 * 1024
    assert a100.l2.size_bytes == 40 * 2**20
    assert (a100.dram.controllers, a100.dram.bandwidth_gbps) == (10, 1555)
    assert (a100.pcie.generation, a100.pcie.lanes) == (4, 16)
    assert (a100.nvlink.version, a100.nvlink.links) == (3, 12)
    assert "tensor" in a100.units


def test_gtx980_interface(gtx980):
    assert gtx980.chip.compute_capability == "5.2"
    assert (gtx980.chip.gpcs, gtx980.chip.sm_count) == (4, 16)
    sm = gtx980.sm
    assert sm.shared_memory_per_sm_bytes == 98304
    assert sm.shared_memory_carveouts_bytes == (98304,)
    assert sm.max_shared_memory_per_block_optin_bytes == 49152
    assert (sm.shared_memory_allocation_unit_bytes, sm.reserved_shared_memory_per_block_bytes) == (256, 0)
    assert gtx980.l2.size_bytes == 2 * 2**20
    assert (gtx980.dram.controllers, gtx980.dram.bus_width_bits, gtx980.dram.bandwidth_gbps) == (4, 256, 224)
    assert (gtx980.pcie.generation, gtx980.pcie.lanes) == (3, 16)
    assert gtx980.nvlink.links == 0
    assert "tensor" not in gtx980.units


@pytest.mark.parametrize("name", ["a100", "gtx980", "cpu_like"])
def test_every_unit_class_has_latency_and_throughput(name):
    cfg = load_config(name)
    for cls in ("fp32", "int", "fp64", "sfu", "ldst", "branch", "sync"):
        unit = cfg.units[cls]
        assert unit.latency_cycles >= 0 and unit.lanes_per_subpartition >= 1
    assert cfg.scheduler.policy in ("lrr", "gto", "two_level")


def test_a100_derived(a100):
    d = a100.derived()
    assert d["total_fp32_cores"] == 6912 and d["fp32_cores_per_sm"] == 64
    assert d["peak_fp32_gflops"] == pytest.approx(6912 * 2 * 1.41)  # 19491.84
    assert round(d["peak_fp32_gflops"], 1) == 19491.8
    assert d["peak_fp64_gflops"] == pytest.approx(9745.92)
    assert d["peak_dram_bandwidth_gbps"] == 1555
    assert d["l2_size_bytes"] == 41943040
    assert (d["max_warps_per_sm"], d["max_threads_per_sm"], d["max_blocks_per_sm"]) == (64, 2048, 32)
    assert d["pcie_bandwidth_gbps"] == 31.5
    assert d["nvlink_total_bandwidth_gbps"] == 600
    assert d["register_file_bytes_per_sm"] == 256 * 1024


def test_gtx980_derived(gtx980):
    d = gtx980.derived()
    assert d["total_fp32_cores"] == 2048 and d["fp32_cores_per_sm"] == 128
    assert d["peak_fp32_gflops"] == pytest.approx(2048 * 2 * 1.216)
    assert d["peak_dram_bandwidth_gbps"] == 224
    assert d["nvlink_total_bandwidth_gbps"] == 0
    assert d["pcie_bandwidth_gbps"] == 15.75


def test_cpu_like_is_a_latency_design(a100):
    cpu = load_config("cpu_like")
    assert cpu.chip.sm_count < 32 and cpu.chip.clock_mhz > 2 * a100.chip.clock_mhz
    assert cpu.sm.max_warps_per_sm <= 8
    assert cpu.l1.hit_latency_cycles < a100.l1.hit_latency_cycles
    assert cpu.l2.hit_latency_cycles < a100.l2.hit_latency_cycles
    def dram_ns(cfg):
        return cfg.dram.latency_cycles * 1000 / cfg.chip.clock_mhz

    assert dram_ns(cpu) < dram_ns(a100)


def test_config_is_frozen_and_hashable(a100):
    with pytest.raises(dataclasses.FrozenInstanceError):
        a100.chip.sm_count = 1
    with pytest.raises(TypeError):
        a100.units["fp32"] = None
    assert hash(a100) == hash(load_config("a100"))


def test_to_dict_is_json_and_hash_is_stable(a100):
    d = a100.to_dict()
    json.dumps(d)
    assert d["chip"]["max_grid_dims"] == [2147483647, 65535, 65535]
    assert d["units"]["fp32"] == {"latency_cycles": 4, "lanes_per_subpartition": 16}
    h = a100.hash()
    assert len(h) == 16 and h == load_config("a100").hash()
    assert h != load_config("gtx980").hash()


def test_overrides(a100):
    half = load_config("a100", overrides={"chip.sm_count": 54, "units.fp32.latency_cycles": 5})
    assert half.chip.sm_count == 54 and half.units["fp32"].latency_cycles == 5
    assert half.derived()["total_fp32_cores"] == 3456
    assert half.hash() != a100.hash()
    assert a100.chip.sm_count == 108  # the base is untouched
    dims = load_config("a100", overrides={"chip.max_grid_dims": (1024, 1024, 1)})
    assert dims.chip.max_grid_dims == (1024, 1024, 1)


def test_load_by_path_and_hash_ignores_name(tmp_path, a100):
    copy = tmp_path / "mine.yaml"
    copy.write_text(open(a100.source).read())
    cfg = load_config(str(copy))
    assert cfg.name == "mine" and cfg.source == str(copy)
    assert cfg.hash() == a100.hash()


def test_extends_overlay(tmp_path, a100):
    child = tmp_path / "half.yaml"
    child.write_text("extends: a100\ndescription: half an A100\nchip:\n  sm_count: 54\n"
                     "l2:\n  size_bytes: 20971520\n")
    cfg = load_config(str(child))
    assert cfg.name == "half" and cfg.description == "half an A100"
    assert cfg.chip.sm_count == 54 and cfg.l2.size_bytes == 20 * 2**20
    assert cfg.chip.clock_mhz == 1410 and cfg.l2.ways == a100.l2.ways  # merged, not replaced
    assert cfg.sm == a100.sm


def test_extends_relative_path_and_chain(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "base.yaml").write_text("extends: gtx980\nchip:\n  clock_mhz: 1000\n")
    (tmp_path / "sub" / "leaf.yaml").write_text("extends: ../base.yaml\nchip:\n  sm_count: 8\n")
    cfg = load_config(str(tmp_path / "sub" / "leaf.yaml"))
    assert (cfg.chip.clock_mhz, cfg.chip.sm_count, cfg.chip.compute_capability) == (1000, 8, "5.2")


def test_config_path_env(tmp_path, monkeypatch):
    (tmp_path / "tiny.yaml").write_text("extends: a100\nchip:\n  sm_count: 2\n")
    monkeypatch.setenv("GPUSIM_CONFIG_PATH", str(tmp_path))
    assert "tiny" in builtin_configs()
    assert load_config("tiny").chip.sm_count == 2
    assert config_dirs()[0] == tmp_path


def test_unknown_name():
    with pytest.raises(ConfigError, match="no built-in config or file named 'nope'"):
        load_config("nope")
