"""Sweep points: override names resolved against the Config schema, comma lists, the cross product and
its up-front checks."""

import pytest

import gpusim
from gpusim.errors import ConfigError, GpusimError, WorkloadError
from gpusim.sweep.points import field_paths, make_points, parse_values, resolve_field


def test_full_fields_and_unique_tails_resolve():
    assert resolve_field("chip.sm_count") == "chip.sm_count"
    assert resolve_field("sm_count") == "chip.sm_count"
    assert resolve_field("l2.hit_latency_cycles") == "l2.hit_latency_cycles"  # the leaf alone is ambiguous
    assert resolve_field("slices") == "l2.slices"
    assert resolve_field("fp32.latency_cycles") == "units.fp32.latency_cycles"
    assert resolve_field("policy") == "scheduler.policy"


def test_every_field_path_names_a_real_field_of_a_loaded_config():
    gpu, cpu = gpusim.load_config("a100").to_dict(), gpusim.load_config("cpu_8core").to_dict()
    for path in field_paths():
        # the optional cpu: and cpu_power: sections are a CPU config's
        node = cpu if path.startswith(("cpu.", "cpu_power.")) else gpu
        for part in path.split("."):
            if part == "tensor" and part not in node:  # an optional unit class a100 may lack
                break
            if part == "divergence_cycles" and part not in node:  # an optional field of the branch unit
                break
            if part.startswith("<"):  # a table's entries (`opcodes.<opcode>`): a100's table is empty
                assert isinstance(node, dict), path
                break
            assert part in node, path
            node = node[part]


def test_ambiguous_and_unknown_names_list_the_candidates():
    with pytest.raises(ConfigError) as e:
        resolve_field("latency_ns")
    assert "ambiguous" in str(e.value) and "pcie.latency_ns" in str(e.value) and "nvlink.latency_ns" in str(e.value)
    with pytest.raises(ConfigError) as e:
        resolve_field("latency_cycles")
    assert "units.fp32.latency_cycles" in str(e.value) and "units.sfu.latency_cycles" in str(e.value)
    with pytest.raises(ConfigError) as e:
        resolve_field("sm_cnt")
    assert "not a config field" in str(e.value) and "chip.sm_count" in str(e.value)


def test_comma_lists_parse_as_yaml_scalars():
    assert parse_values("64,128, 256", "--block") == [64, 128, 256]
    assert parse_values("gto,lrr", "--warp-scheduler") == ["gto", "lrr"]
    assert parse_values("1.5,0x10,true", "x") == [1.5, 16, True]
    with pytest.raises(GpusimError, match="--block '64,,128': expected VALUE"):
        parse_values("64,,128", "--block")


def test_cross_product_order_and_resolved_params():
    wl = gpusim.load_workload("saxpy")
    pts = make_points(wl, ["a100", "gtx980"], grid={"block": [64, 128, 256]},
                      overrides={"chip.sm_count": [8, 16]}, params={"n": 4096}, warp_schedulers=[None])
    assert [p.index for p in pts] == list(range(12))
    assert [(p.config, p.overrides["chip.sm_count"], p.params["block"]) for p in pts[:4]] == [
        ("a100", 8, 64), ("a100", 8, 128), ("a100", 8, 256), ("a100", 16, 64)]
    assert pts[6].config == "gtx980"
    assert all(p.params["n"] == 4096 and set(p.params) == {"n", "block"} for p in pts)


def test_a_parameter_the_workload_lacks_names_the_workload_and_its_parameters():
    wl = gpusim.load_workload("pointer_chase")
    with pytest.raises(WorkloadError) as e:
        make_points(wl, ["a100"], grid={"block": [64]}, overrides={}, params={}, warp_schedulers=[None])
    msg = str(e.value)
    assert "pointer_chase" in msg and "'block'" in msg and "footprint, stride, steps" in msg


def test_bad_values_and_double_settings_fail_the_whole_sweep():
    wl = gpusim.load_workload("saxpy")
    with pytest.raises(WorkloadError, match="block=.*not a number"):
        make_points(wl, ["a100"], grid={"block": ["big"]}, overrides={}, params={}, warp_schedulers=[None])
    with pytest.raises(GpusimError, match="both swept and set"):
        make_points(wl, ["a100"], grid={"block": [64]}, overrides={}, params={"block": 64}, warp_schedulers=[None])
    with pytest.raises(GpusimError, match="no values"):
        make_points(wl, ["a100"], grid={"block": []}, overrides={}, params={}, warp_schedulers=[None])
