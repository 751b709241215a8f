"""Sharding as a pass: the sharded graph computes what the original does (numpy, every GPU's shard, the
collectives combining them), the Megatron pattern is found, and the pass applied to the compiler's
transformer block reproduces analysis/sharding.py's hand-written program."""

import numpy as np
import pytest

from gpusim.analysis.sharding import sharding_study
from gpusim.compiler import CompilerError, evaluate, models
from gpusim.compiler.shard import evaluate_sharded, shard
from gpusim.compiler.shard_cost import gemm_only_cost, row_local, run_sharded
from gpusim.compiler.streams import Task, assign_streams
from gpusim.config import load_config

RNG = np.random.default_rng(3)
MODELS = {"mlp2": lambda: models.mlp2(32, 64, 128, 16), "attention": lambda: models.attention(32, 32),
          "transformer": lambda: models.transformer(32, 64, 4, 128)}


def _inputs(graph):
    return {p.name: (0.3 * RNG.standard_normal(p.shape)).astype(np.float32) for p in graph.parameters()}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("strategy", ["tensor", "data"])
@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_sharded_graph_computes_the_original(name, strategy, gpus):
    graph = MODELS[name]()
    inputs = _inputs(graph)
    want = evaluate(graph, inputs)
    got = evaluate_sharded(shard(graph, gpus, strategy), inputs)
    for out in want:
        np.testing.assert_allclose(got[out], want[out], rtol=1e-5, atol=1e-5)


def test_megatron_pattern_on_the_transformer_block():
    sharded = shard(models.transformer(32, 64, 4, 128), 4)
    g = sharded.graph
    # one fused QKV GEMM over the three column shards, two all-reduces of seq x d_model
    assert [(p.source, p.axis) for p in sharded.params["wq+wk+wv"]] == [("wq", 1), ("wk", 1), ("wv", 1)]
    assert g["wq+wk+wv"].shape == (64, 3 * 64 // 4)
    assert [(n.op, n.shape) for n in sharded.collectives()] == [("all_reduce", (32, 64))] * 2
    assert g["wo"].shape == (16, 64) and g["w1"].shape == (64, 32) and g["b1"].shape == (32,)
    assert g["w2"].shape == (32, 64) and g["b2"].shape == (64,)
    # the heads split: each GPU's attention is (heads / 4) x seq x seq
    assert any(n.op == "softmax" and n.shape == (1, 32, 32) for n in g.nodes.values())
    assert str(sharded.layouts[next(n for n, v in models.transformer(32, 64, 4, 128).nodes.items()
                                    if v.op == "softmax")]) == "S(0)"


def test_data_parallel_splits_rows_and_gathers_the_output():
    sharded = shard(models.mlp2(32, 64, 128, 16), 4, "data")
    assert sharded.graph["x"].shape == (8, 64) and sharded.graph["w1"].shape == (64, 128)
    assert [(n.op, n.attrs["axis"], n.shape) for n in sharded.collectives()] == [("all_gather", 0, (32, 16))]
    with pytest.raises(CompilerError, match=r"data parallel: input 'x' f32\[32,64\] does not split along axis 0 "
                                            "over 3 GPUs"):
        shard(models.mlp2(32, 64, 128, 16), 3, "data")
    with pytest.raises(CompilerError, match="sharding strategy 'pipe' is not one of tensor, data"):
        shard(models.mlp2(32, 64, 128, 16), 2, "pipe")


def test_row_locality():
    g = models.attention(32, 16)
    kinds = {n.name: row_local(g, n, 32) for n in g.nodes.values() if n.op not in ("parameter", "constant")}
    ops = {n: g[n].op for n in kinds}
    assert all(kinds[n] for n in kinds if ops[n] in ("softmax", "div"))
    assert not any(kinds[n] for n in kinds if ops[n] == "transpose")


def test_streams_chain_dependent_tasks_and_spread_independent_ones():
    tasks = [Task("a", "kernel", weight=1.0), Task("b", "kernel", ("a",), weight=1.0),
             Task("c", "kernel", weight=1.0), Task("d", "kernel", ("b", "c"), weight=1.0)]
    assert [t.stream for t in assign_streams(tasks, 2)] == ["s0", "s0", "s1", "s1"]
    assert [t.stream for t in assign_streams(tasks, 1)] == ["s0"] * 4


@pytest.fixture(scope="module")
def reference():
    return {c: sharding_study(("dgx_a100", "a100x8_pcie"), (1, 2, 4, 8), chunks=c) for c in (1, 2)}


@pytest.mark.parametrize("system", ["dgx_a100", "a100x8_pcie"])
@pytest.mark.parametrize("gpus,chunks", [(1, 1), (2, 1), (4, 1), (8, 1), (2, 2), (8, 2)])
def test_pass_reproduces_the_hand_written_sharded_layer(reference, system, gpus, chunks):
    # like for like: analysis/sharding.py times the four GEMMs (fused QKV, out, up, down) by gemm_cost and
    # leaves the attention scores, softmax, layer norms, GeLU and residuals out; so does gemm_only_cost
    cfg = load_config(system)
    run = run_sharded(models.transformer(2048, 512, 8, 2048), cfg, gpus, cost=gemm_only_cost(cfg), chunks=chunks)
    row = reference[chunks].row(system, gpus)
    busy = run.report.busy(0)
    assert run.report.seconds == pytest.approx(row.total_seconds, rel=0.05)
    assert busy["compute"] == pytest.approx(row.compute_seconds, rel=0.05)
    assert busy["communication"] == pytest.approx(row.communication_seconds, rel=0.05, abs=1e-9)
    assert busy["overlap"] == pytest.approx(row.overlap_seconds, rel=0.05, abs=1e-9)
    assert run.speedup == pytest.approx(row.speedup, rel=0.05)
    if chunks == 2 and gpus > 1:
        assert run.schedule.saved_seconds > 0  # the chunks' all-reduces run under the other chunk's GEMMs


def test_fused_sharded_graph_still_computes_the_original_and_runs_in_chunks():
    from dataclasses import replace

    from gpusim.compiler import run_pipeline
    from gpusim.compiler.cost import AnalyticalCost
    from gpusim.compiler.shard_cost import compiler_cost, shard_program

    graph = models.transformer(32, 64, 4, 128)
    sharded = shard(graph, 4)
    fused = replace(sharded, graph=run_pipeline(sharded.graph)[0])
    inputs = _inputs(graph)
    np.testing.assert_allclose(evaluate_sharded(fused, inputs)["y"], evaluate(graph, inputs)["y"], rtol=1e-5,
                               atol=1e-5)
    kinds = {n.attrs["kind"]: row_local(fused.graph, n, 32) for n in fused.graph.nodes.values() if n.op == "fused"}
    # the MLP's up projection with its bias and GeLU is row-wise; the softmax over heads' scores is not
    assert kinds["epilogue"] and not kinds["reduction"]
    cfg = load_config("a100", overrides={"system.gpus": 4})
    program, sched = shard_program(fused, cfg, compiler_cost(AnalyticalCost(), cfg), chunks=2)
    kernels = [op.name for op in program.ops if op.kind == "kernel" and op.gpu == 0]
    assert len(kernels) > len({k.split(" [")[0] for k in kernels})  # some kernels ran as two chunks
    assert sum(op.kind == "all_reduce" for op in program.ops) == 4
