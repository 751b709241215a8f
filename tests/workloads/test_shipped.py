"""Every workload that list_workloads() finds (the shipped ones and any on GPUSIM_WORKLOAD_PATH)
verifies against its numpy reference at each of its test sizes, on the a100 and gtx980 configs."""

from __future__ import annotations

import json

import pytest

from gpusim.config import load_config
from gpusim.errors import LaunchError
from gpusim.workloads import list_workloads, load_workload

CONFIGS = ("a100", "gtx980")
MINE = ("vecadd", "saxpy", "reduce_sum", "reduce_sum_shfl", "matmul_naive", "matmul_tiled", "divergence",
        "stream_copy")


def _cases():
    for name in list_workloads():
        for i, size in enumerate(load_workload(name).test_sizes):
            yield pytest.param(name, size, id=f"{name}-{i}")


@pytest.fixture(scope="module", params=CONFIGS)
def cfg(request):
    return load_config(request.param)


@pytest.mark.parametrize(("name", "size"), list(_cases()))
def test_workload_verifies(name, size, cfg):
    if "tensor" not in cfg.units and any(i.opcode == "mma" for i in load_workload(name).program.instructions):
        with pytest.raises(LaunchError, match=f"{cfg.name} has no tensor cores"):  # (the GTX 980: one line)
            load_workload(name).run(size, cfg)
        return
    run = load_workload(name).run(size, cfg)
    run.check()
    assert run.ok
    assert run.result.stats.warp_instructions > 0


@pytest.mark.parametrize("name", list_workloads())
def test_workload_folder_is_well_formed(name):
    wl = load_workload(name)
    assert wl.description
    assert len(wl.test_sizes) >= 2, "ship at least two test sizes"
    # defaults must give a valid launch (they may be too big to run in the test suite)
    launch = wl.launch(wl.params())
    launch.validate(None, wl.program.shared_bytes)
    # some test size exercises a tail: a partial block, or a grid-stride loop ending mid-grid
    assert any(wl.launch(s).num_blocks * wl.launch(s).threads_per_block != _size(s) for s in wl.test_sizes)


def _size(p: dict) -> int:
    for key in ("n", "footprint"):
        if key in p:
            return p[key]
    return -1  # 2-D workloads: their launch covers rows x cols, never exactly a 1-D size


def test_builtin_workloads_are_shipped():
    assert set(MINE) <= set(list_workloads())


def test_summary_is_json_ready():
    run = load_workload("saxpy").run({"n": 1000}, "a100")
    s = run.summary()
    assert s["workload"] == "saxpy" and s["verified"] is True
    assert s["params"] == {"n": 1000, "block": 256}
    assert s["launch"] == {"grid": [4, 1, 1], "block": [256, 1, 1]}
    assert s["bytes_moved"] == 12_000 and s["flops"] == 2000
    assert s["stats"]["warp_instructions"] == run.result.stats.warp_instructions
    json.dumps(s)


def test_same_seed_same_result():
    wl = load_workload("reduce_sum")
    a, b = wl.run({"n": 777}, seed=3), wl.run({"n": 777}, seed=3)
    assert (a.outputs["partial"] == b.outputs["partial"]).all()
    assert a.result.stats.to_dict() == b.result.stats.to_dict()
    c = wl.run({"n": 777}, seed=4)
    assert not (a.outputs["partial"] == c.outputs["partial"]).all()


def test_divergence_work_grows_with_paths():
    wl = load_workload("divergence")
    counts = [wl.run({"n": 1024, "paths": p}).result.stats.warp_instructions for p in (1, 2, 4, 8, 16, 32)]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    eff = [wl.run({"n": 1024, "paths": p}).result.stats.simt_efficiency for p in (1, 32)]
    assert eff[1] < eff[0]


def test_matmul_tiled_matches_naive():
    a = load_workload("matmul_tiled").run({"n": 33}, seed=7)
    b = load_workload("matmul_naive").run({"n": 33}, seed=7)
    assert a.ok and b.ok
    assert abs(a.outputs["C"] - b.outputs["C"]).max() < 1e-4
    # tiling cuts global loads: 2 per fma naive, 2 per 16 fmas tiled
    assert a.result.stats.to_dict() != b.result.stats.to_dict()


def test_histogram_bytes_drawn_and_counted_in_chunks_are_those_of_one_pass():
    # reference.py draws the bytes CHUNK at a time; numpy's Generator draws in sequence, so the values are
    # those of one draw of n (fails if a chunk restarts the stream, or the clip or the cast differ)
    import numpy as np

    wl = load_workload("histogram")
    chunk = 1 << 22
    for n in (1000, chunk, chunk + 1, 2 * chunk + 77):
        data = wl.inputs({"n": n}, seed=5)["data"]
        once = np.minimum(np.random.default_rng(5).exponential(48.0, n), 255).astype(np.uint8)
        assert data.dtype == np.uint8 and data.shape == (n,)
        assert np.array_equal(data, once)
        # and counted a chunk at a time: the counts of one bincount
        hist = wl.reference({"n": n}, {"data": data})["hist"]
        assert hist.dtype == np.uint32 and np.array_equal(hist, np.bincount(once, minlength=256))


def test_softmax_inputs_and_reference_in_row_chunks_are_those_of_one_pass():
    # reference.py draws and computes CHUNK elements of rows at a time: the same inputs as one draw of
    # rows x cols and the same outputs as the whole-array formula (fails if a chunk restarts the stream,
    # drops or repeats rows, or changes the arithmetic)
    import numpy as np

    wl = load_workload("softmax")
    for rows, cols in ((3, 5), (257, 4096), (300, 4099), (2, (1 << 20) + 3)):
        p = {"rows": rows, "cols": cols}
        x = wl.inputs(p, seed=3)["x"]
        once = (3.0 * np.random.default_rng(3).standard_normal((rows, cols))).astype(np.float32)
        assert x.dtype == np.float32 and np.array_equal(x, once)
        e = np.exp(once.astype(np.float64) - once.max(axis=1, keepdims=True))
        want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
        assert np.array_equal(wl.reference(p, {"x": x, "y": np.zeros_like(x), "cols": cols})["y"], want)
