"""Bad configurations fail with ConfigError rendering exactly `file:line: field: what is wrong`."""

from pathlib import Path

import pytest

from gpusim.config import load_config
from gpusim.data import data_dir
from gpusim.errors import ConfigError

A100 = data_dir("configs") / "a100.yaml"


def variant(tmp_path, old: str, new: str, name: str = "bad.yaml") -> tuple[str, int]:
    """A copy of a100.yaml with the line `old` (stripped text) replaced by `new`; returns the path
    and the 1-based line number of the change."""
    lines = A100.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip().startswith(old))
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    lines[index] = indent + new if new else ""
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path), index + 1


def line_of(path: str, text: str) -> int:
    return next(i + 1 for i, line in enumerate(Path(path).read_text().splitlines())
                if line.strip().startswith(text))


def error(path_or_name, **kw) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(path_or_name, **kw)
    return info.value


def test_malformed_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("chip:\n  clock_mhz: 1410\n  gpcs: [1, 2\nsm:\n  warp_size: 32\n")
    err = error(str(path))
    assert str(err).startswith(f"{path}:4: malformed YAML: ")
    assert (err.file, err.line) == (str(path), 4)


def test_malformed_yaml_bad_indent(tmp_path):
    path = tmp_path / "indent.yaml"
    path.write_text("chip:\n  clock_mhz: 1410\n   gpcs: 4\n")
    err = error(str(path))
    assert str(err).startswith(f"{path}:3: malformed YAML: ")


def test_unknown_key(tmp_path):
    path, line = variant(tmp_path, "clock_mhz:", "clock_ghz: 1.41")
    assert str(error(path)) == f"{path}:{line}: chip.clock_ghz: unknown key (did you mean 'clock_mhz'?)"


def test_unknown_section(tmp_path):
    path, line = variant(tmp_path, "description:", "descripton: x")
    assert str(error(path)) == f"{path}:{line}: descripton: unknown key (did you mean 'description'?)"


def test_unknown_unit_class(tmp_path):
    path, line = variant(tmp_path, "tensor:", "tensr:")
    assert str(error(path)) == (f"{path}:{line}: units.tensr: unknown unit class "
                                f"(known: fp32, int, fp64, sfu, ldst, branch, sync, tensor)")


def test_missing_key(tmp_path):
    path, _ = variant(tmp_path, "max_warps_per_sm:", "")
    sm_line = line_of(path, "sm:")
    assert str(error(path)) == f"{path}:{sm_line}: sm.max_warps_per_sm: missing key"


def test_missing_unit_class(tmp_path):
    path, _ = variant(tmp_path, "sfu:", "")
    units_line = line_of(path, "units:")
    assert str(error(path)) == f"{path}:{units_line}: units.sfu: missing key"


def test_missing_section(tmp_path):
    path = tmp_path / "nochip.yaml"
    text = A100.read_text()
    start = text.index("\nchip:")
    end = text.index("\nsm:")
    path.write_text(text[:start] + text[end:])
    top = line_of(str(path), "description:")  # a missing section is reported at the document's first key
    assert str(error(str(path))) == f"{path}:{top}: chip: missing key"


def test_wrong_type(tmp_path):
    path, line = variant(tmp_path, "sm_count:", "sm_count: lots")
    assert str(error(path)) == f"{path}:{line}: chip.sm_count: expected an integer, got str 'lots'"


def test_float_for_int(tmp_path):
    path, line = variant(tmp_path, "max_warps_per_sm:", "max_warps_per_sm: 64.5")
    assert str(error(path)) == f"{path}:{line}: sm.max_warps_per_sm: expected an integer, got float 64.5"


def test_unquoted_compute_capability(tmp_path):
    path, line = variant(tmp_path, "compute_capability:", "compute_capability: 8.0")
    assert str(error(path)) == (f"{path}:{line}: chip.compute_capability: expected a string, "
                                f"got float 8.0 (quote it: \"8.0\")")


def test_wrong_list_element(tmp_path):
    path, line = variant(tmp_path, "max_grid_dims:", "max_grid_dims: [2147483647, x, 65535]")
    assert str(error(path)) == f"{path}:{line}: chip.max_grid_dims[1]: expected an integer, got str 'x'"


def test_wrong_list_length(tmp_path):
    path, line = variant(tmp_path, "max_block_dims:", "max_block_dims: [1024, 1024]")
    assert str(error(path)) == f"{path}:{line}: sm.max_block_dims: expected 3 integers, got 2"


def test_section_not_a_mapping(tmp_path):
    path = tmp_path / "flat.yaml"
    path.write_text("extends: a100\nl2: 40\n")
    assert str(error(str(path))) == f"{path}:2: l2: expected a mapping of fields, got int 40"


def test_out_of_range(tmp_path):
    path, line = variant(tmp_path, "clock_mhz:", "clock_mhz: -5")
    assert str(error(path)) == f"{path}:{line}: chip.clock_mhz: -5.0 MHz is below the minimum 1"


def test_nan_and_infinity(tmp_path):
    path, line = variant(tmp_path, "clock_mhz:", "clock_mhz: .nan")
    assert str(error(path)) == f"{path}:{line}: chip.clock_mhz: expected a number, got NaN"
    path, line = variant(tmp_path, "clock_mhz:", "clock_mhz: .inf")
    assert str(error(path)) == f"{path}:{line}: chip.clock_mhz: inf MHz is above the maximum 10000"


def test_bad_choice(tmp_path):
    path, line = variant(tmp_path, "policy:", "policy: fifo")
    from gpusim.config.vocab import SCHEDULER_POLICIES

    assert str(error(path)) == (f"{path}:{line}: scheduler.policy: 'fifo' is not one of "
                                + ", ".join(repr(p) for p in SCHEDULER_POLICIES))


def test_impossible_sm_count(tmp_path):
    path, line = variant(tmp_path, "sm_count:", "sm_count: 200")
    assert str(error(path)) == (f"{path}:{line}: chip.sm_count: 200 SMs do not fit in gpcs * sms_per_gpc"
                                f" = 7 * 16 = 112")


def test_impossible_carveout(tmp_path):
    path, line = variant(tmp_path, "shared_memory_carveouts_bytes:",
                         "shared_memory_carveouts_bytes: [0, 8192, 262144]")
    # shared_memory_per_sm_bytes no longer matches the largest carve-out: checked first
    sm_line = line_of(path, "shared_memory_per_sm_bytes:")
    assert str(error(path)) == (f"{path}:{sm_line}: sm.shared_memory_per_sm_bytes: must equal the largest "
                                f"carve-out 262144, got 167936")
    err = error(path, overrides={"sm.shared_memory_per_sm_bytes": 262144})
    assert str(err) == (f"{path}:{line}: sm.shared_memory_carveouts_bytes: carve-out 262144 exceeds "
                        f"l1_shared_combined_bytes 196608")


def test_impossible_threads(tmp_path):
    path, line = variant(tmp_path, "max_threads_per_sm:", "max_threads_per_sm: 1536")
    assert str(error(path)) == (f"{path}:{line}: sm.max_threads_per_sm: must equal max_warps_per_sm * "
                                f"warp_size = 64 * 32 = 2048, got 1536")


def test_dram_bandwidth_must_match_bus(tmp_path):
    path, line = variant(tmp_path, "bandwidth_gbps: 1555", "bandwidth_gbps: 2000")
    assert str(error(path)) == (f"{path}:{line}: dram.bandwidth_gbps: 2000.0 GB/s disagrees with "
                                f"bus_width_bits / 8 * data_rate_mtps / 1000 = 1555.2 GB/s")


def test_bad_extends_target(tmp_path):
    path = tmp_path / "child.yaml"
    path.write_text("# a child\nextends: a1000\nchip:\n  sm_count: 54\n")
    err = str(error(str(path)))
    assert err.startswith(f"{path}:2: extends: no built-in config or file named 'a1000' (built-ins: ")
    assert "a100" in err


def test_extends_cycle(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("\nextends: a.yaml\n")
    err = str(error(str(tmp_path / "a.yaml")))
    assert err == f"{tmp_path / 'b.yaml'}:2: extends: extends cycle: a.yaml -> b.yaml -> a.yaml"


def test_errors_in_a_child_name_the_child(tmp_path):
    path = tmp_path / "child.yaml"
    path.write_text("extends: a100\nchip:\n  sm_count: 54\n  clock_mhz: fast\nsm:\n  warps: 3\n")
    assert str(error(str(path))) == f"{path}:4: chip.clock_mhz: expected a number, got str 'fast'"
    path.write_text("extends: a100\nchip:\n  sm_count: 54\nsm:\n  warps: 3\n")
    assert str(error(str(path))) == f"{path}:5: sm.warps: unknown key"
    path.write_text("extends: a100\nchip:\n  sm_count: 500\n")
    assert str(error(str(path))) == (f"{path}:3: chip.sm_count: 500 SMs do not fit in gpcs * sms_per_gpc"
                                     f" = 7 * 16 = 112")


def test_bad_override_names_the_override():
    err = error("a100", overrides={"chip.sm_count": 500})
    assert str(err) == "<overrides>: chip.sm_count: 500 SMs do not fit in gpcs * sms_per_gpc = 7 * 16 = 112"
    err = error("a100", overrides={"chip.sm_cnt": 5})
    assert str(err) == "<overrides>: chip.sm_cnt: not a config field; did you mean chip.sm_count, chip.sms_per_gpc, " \
                       "chip.gpcs?"
    err = error("a100", overrides={"chip.clock_mhz": "fast"})
    assert str(err) == "<overrides>: chip.clock_mhz: expected a number, got str 'fast'"
    err = error("a100", overrides={"nosuch.field": 1})
    assert str(err) == "<overrides>: nosuch.field: not a config field (docs/config.md lists the fields)"


def test_duplicate_key(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("extends: a100\nchip:\n  sm_count: 54\n  sm_count: 55\n")
    assert str(error(str(path))) == f"{path}:4: chip.sm_count: duplicate key"


def test_empty_file(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing\n")
    assert str(error(str(path))) == f"{path}:1: empty file: expected a mapping of sections"


def test_tensor_unit_needs_its_fma_rates_and_only_it_has_them(tmp_path):
    path, _ = variant(tmp_path, "tf32_fma_per_cycle:", "")
    assert str(error(path)).endswith("units.tensor.tf32_fma_per_cycle: missing key")
    path, line = variant(tmp_path, "fp32:", "fp32:   {latency_cycles: 4, lanes_per_subpartition: 16, "
                                            "f16_fma_per_cycle: 64}")
    assert str(error(path)) == (f"{path}:{line}: units.fp32.f16_fma_per_cycle: only the tensor unit has "
                                "per-precision FMA throughputs")
