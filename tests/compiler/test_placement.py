"""Device placement: the recommender's sparse lookup stays on the CPU (its table would cross PCIe to be
read once), its dense MLP goes to the GPU; figures of the cost model derived by hand."""

import numpy as np
import pytest

from gpusim.compiler import CompilerError, evaluate, lower, models
from gpusim.compiler.placement import Device, place, work
from gpusim.config import load_config

CPU, GPU = load_config("cpu_8core"), load_config("a100")


def test_embedding_bag_sums_the_bag_rows():
    g = models.recommender(batch=3, rows=10, dim=4, bag=2, d_dense=2, d_hidden=8)
    rng = np.random.default_rng(0)
    inputs = {p.name: rng.standard_normal(p.shape).astype(np.float32) for p in g.parameters() if p.name != "ids"}
    inputs["ids"] = np.array([[0, 1], [9, 9], [3, 0]], np.int32)
    table, dense = inputs["table"].astype(np.float64), inputs["dense"].astype(np.float64)
    e = table[inputs["ids"]].sum(axis=1)
    h = np.maximum(np.concatenate([e, dense], 1) @ inputs["w1"] + inputs["b1"], 0)
    h = np.maximum(h @ inputs["w2"] + inputs["b2"], 0)
    want = 1 / (1 + np.exp(-(h @ inputs["w3"] + inputs["b3"])))
    np.testing.assert_allclose(evaluate(g, inputs)["y"], want, rtol=1e-5)
    with pytest.raises(CompilerError, match="node %0: no kernel template lowers embedding_bag"):
        lower(g)


def test_recommender_lookup_on_the_cpu_mlp_on_the_gpu():
    g = models.build("recommender")  # 4096 samples, a 1,000,000 x 32 table, bags of 8, MLP 288 -> 1024 -> 1024 -> 1
    placed = place(g, [CPU, GPU])
    ops = {n: g[n].op for n in placed.where}
    assert [placed.where[n] for n in ops if ops[n] == "embedding_bag"] == ["cpu_8core"]
    assert [placed.where[n] for n in ops if ops[n] == "matmul"] == ["a100"] * 3
    # the lookup reads 4096 x 8 rows of 128 B, its indices and writes 4096 x 32 floats: on the CPU's sustained
    # DRAM bandwidth, plus its 1-us fork-join
    cpu = Device.of(CPU)
    lookup = next(n for n in ops if ops[n] == "embedding_bag")
    assert work(g, g[lookup]) == (4096 * 8 * 32, 4096 * 8 * 4 + 4096 * 8 * 128 + 4096 * 32 * 4)
    assert placed.op_seconds[lookup] == pytest.approx(1e-6 + 4_849_664 / cpu.bandwidth)
    # on the GPU the whole 128 MB table would cross PCIe first: 1 us + 128e6 B / (31.5 GB/s x 0.83)
    table_copy = 1e-6 + 128e6 / (31.5e9 * 0.83)
    assert placed.alone["a100"] - placed.seconds > table_copy - 1e-3
    assert ("table", "host", "a100") not in {t[:3] for t in placed.transfers}
    # the lookup's result crosses to the GPU, the score comes back
    assert (lookup, "host", "a100", 4096 * 32 * 4) in {t[:4] for t in placed.transfers}
    assert placed.seconds < placed.alone["cpu_8core"] / 5 and placed.seconds < placed.alone["a100"] / 3


def test_a_small_mlp_stays_on_the_cpu():
    # 32 x 64 x 128: microseconds of work, less than the GPU's 4-us launches and the copies
    placed = place(models.mlp2(32, 64, 128, 10), [CPU, GPU])
    assert set(placed.where.values()) == {"cpu_8core"} and placed.transfers == ()
    assert placed.seconds == pytest.approx(placed.alone["cpu_8core"])
    with pytest.raises(CompilerError, match="--place needs two devices or more"):
        place(models.mlp2(32, 64, 128, 10), [GPU])
