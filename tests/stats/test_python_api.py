"""The Python API: `simulate(workload, config=..., params={...})` keywords that cannot be confused with a
workload's parameters, typed metric fields, and `SimResult.to_frame()` for pandas."""

import pandas as pd
import pytest

from gpusim import simulate
from gpusim.errors import GpusimError


@pytest.fixture(scope="module")
def r():
    return simulate("saxpy", config="gtx980", params={"n": 4096, "block": 128})


def test_config_and_params_keywords(r):
    assert r.provenance["config"] == "gtx980" and r.provenance["params"] == {"n": 4096, "block": 128}
    same = simulate("saxpy", "gtx980", n=4096, block=128)  # the positional and keyword shorthand
    assert same.cycles == r.cycles
    assert simulate("saxpy", params={"n": 1024}).provenance["config"] == "a100"  # the default config
    with pytest.raises(GpusimError, match="give the config once"):
        simulate("saxpy", "a100", config="gtx980")
    with pytest.raises(GpusimError, match="workload parameter 'n' is given twice"):
        simulate("saxpy", params={"n": 1024}, n=2048)


def test_typed_fields(r):
    k = r.kernel
    assert r.warp_instructions == k["warp_instructions"] and isinstance(r.warp_instructions, int)
    assert r.ipc == k["ipc"] and r.achieved_occupancy == k["achieved_occupancy"]
    assert r.dram_bandwidth_gbps == k["dram_bandwidth_gbps"]
    assert r.memory_throughput_pct == k["memory_throughput_pct"] >= 0
    assert r.compute_throughput_pct == k["compute_throughput_pct"]


def test_to_frame_is_tidy_with_units(r):
    df = r.to_frame()
    assert list(df.columns) == ["workload", "config", "scope", "sm", "block", "metric", "value", "unit"]
    kernel = df[df.scope == "kernel"].set_index("metric")
    assert kernel.loc["cycles", "value"] == r.cycles and kernel.loc["cycles", "unit"] == "cycles"
    assert kernel.loc["dram_bandwidth_gbps", "unit"] == "GB/s"
    assert len(df[df.scope == "block"]) == 3 * r.kernel["blocks"]  # start, end and cycles of each block
    assert isinstance(df, pd.DataFrame) and len(df) == len(r.rows())
