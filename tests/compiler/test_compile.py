"""The compiler end to end: the MLP and the attention block fused and tuned against unfused and untuned,
in simulated cycles; `gpusim compile` on built-in, .py and ONNX models, its JSON report and its errors."""

from __future__ import annotations

import json

import pytest

from gpusim.cli.main import main
from gpusim.compiler import CompilerError, models
from gpusim.compiler.cost import AnalyticalCost
from gpusim.compiler.driver import compile_graph, load_model
from gpusim.compiler.tune import Tuner


@pytest.mark.parametrize(("graph", "kernels", "speedup", "kernel_speedup"), [
    (models.mlp2(32, 64, 128, 10), (5, 2), 2.2, 2.0),       # 2.49x and 2.43x when written
    (models.attention(32, 32), (9, 5), 1.4, 1.1),           # 1.25x and 1.97x; 1.22x and 1.55x with the L2
                                                            # partitions and DRAM banks of issue 20; 7
                                                            # kernels since K^T folds into the matmul; 5
                                                            # since q @ k^T, softmax, @ v is one attention
                                                            # kernel (two launches fewer): 1.54x and 1.14x,
                                                            # its one block (a single head) slower than
                                                            # the three tuned kernels (11,164 cycles
                                                            # against about 6,400)
], ids=["mlp2", "attention"])
def test_fused_and_tuned_beats_unfused_and_untuned_in_simulated_cycles(a100, sim, graph, kernels, speedup,
                                                                        kernel_speedup):
    report = compile_graph(graph, a100, cost=sim, fusion_cost=AnalyticalCost(),
                           tuner=Tuner(a100, AnalyticalCost()))  # cached in tmp: identical kernels tuned once
    assert (len(report.baseline.kernels), len(report.optimised.kernels)) == kernels
    assert report.speedup > speedup and report.kernel_speedup > kernel_speedup
    assert report.optimised.cycles == sum(e.cycles for e in report.optimised.estimates)
    assert all(k.params == report.tuned[k.node.name].params for k in report.optimised.kernels)
    assert all(k.params == {"BM": 16, "BN": 16, "BK": 16, "TM": 1, "TN": 1, "use_shared": True}
               for k in report.baseline.kernels if k.template == "matmul")


def test_compile_prints_and_writes_json(tmp_path, capsys):
    out = tmp_path / "mlp.json"
    assert main(["compile", "mlp2", "--config", "gtx980", "--set", "batch=16", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fuse      nodes  10 -> 7   fuse-epilogue 2" in text and "speed-up" in text
    assert "k_2: 8 blocks on 16 SMs, 1 wave; occupancy 100% (limited by warps); latency-bound" in text
    report = json.loads(out.read_text())
    assert (report["model"], report["config"], report["cost_model"], report["tuning"]) == (
        "mlp2", "gtx980", "analytical", None)
    assert [k["op"] for k in report["kernels"]] == ["fused.epilogue"] * 2 and report["total"]["kernels"] == 2
    assert report["total"]["cycles"] == pytest.approx(sum(k["cycles"] for k in report["kernels"]))
    assert report["speedup"] == pytest.approx(report["baseline"]["total"]["cycles"] / report["total"]["cycles"])
    assert report["kernels"][0]["grid"] == [8, 1, 1] and report["kernels"][0]["block"] == [16, 16, 1]


def test_compile_tuned_with_a_measure_model(tmp_path, capsys):
    args = ["compile", "attention", "--set", "seq=16", "--set", "d_model=16", "--dtype", "f16", "--tune",
            "--cost", "simulated", "--search-cost", "analytical", "--top-k", "1", "--cache-dir", str(tmp_path),
            "--jobs", "2", "--json", "-"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tuning"] == "tuned (local search, analytical model, top 1 measured by simulated)"
    results = report["tuning_results"].values()
    assert all(len(r["measured"]) == 1 for r in results)
    # the matmuls are all 16 x 16 @ 16 x 16, f16 on the a100: on the tensor cores (lower/mma.py), tuned once,
    # then read from the cache; q @ k^T, the softmax and @ v are one fused-attention kernel, tuned on its own
    assert sorted(r["template"] for r in results if not r["cached"]) == ["attention", "mma"]
    assert (tmp_path / "compiler" / "tune").is_dir() and (tmp_path / "compiler" / "cost").is_dir()


def test_compile_a_python_model(tmp_path, capsys):
    path = tmp_path / "block.py"
    path.write_text("from gpusim.compiler import Graph\n\n"
                    "def build(rows=8, cols=64):\n"
                    "    g = Graph('block')\n"
                    "    x = g.parameter('x', (rows, cols))\n"
                    "    g.output(g.layernorm(g.gelu(x)), 'y')\n"
                    "    return g\n")
    assert main(["compile", str(path), "--set", "rows=4", "--cost", "calibrated"]) == 0
    assert "%1 = fused.reduction: gelu, layernorm" in capsys.readouterr().out


def test_compile_an_onnx_model(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Softmax", ["h"], ["y"])],
                              "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 32])])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert main(["compile", str(path), "--shape", "x=8,32"]) == 0
    assert "%y = fused.reduction: relu, softmax" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["nope"], "unknown model 'nope': the built-in models are mlp2, attention, transformer, recommender; or give a "
               ".py or .onnx file"),
    (["mlp2", "--set", "seq=4"], "model mlp2: unknown size(s) seq; its sizes are batch=32, d_in=64"),
    (["mlp2", "--set", "batch=0"], "model mlp2: sizes are positive integers: batch=0"),
    (["missing.onnx"], "missing.onnx: no such file"),
    (["mlp2", "--search", "grid"], "--search, --search-cost, --tie-break, --refit and --objective need --tune"),
    (["x.py", "--dtype", "f16"], "--dtype applies to the built-in models (mlp2, attention, transformer, recommender)"),
    (["mlp2", "--shape", "x"], "--shape 'x': expected INPUT=D0,D1,... (integers)"),
    (["mlp2", "--config", "nosuch"], "nosuch"),
    (["mlp2", "--dask-scheduler", "tcp://h:1", "--jobs", "2"], "--jobs sets local workers; with --dask-scheduler"),
    ([], "give a MODEL, or --onnx-suite"),
    (["mlp2", "--onnx-suite"], "--onnx-suite walks the onnx package's models; give no MODEL"),
])
def test_compile_errors(capsys, args, message):
    assert main(["compile", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusim compile: error: ") and message in err


def test_compile_jobs_out_of_range(capsys):
    with pytest.raises(SystemExit) as info:
        main(["compile", "mlp2", "--jobs", "0"])
    assert info.value.code == 2
    assert "argument --jobs/-j: 0 is below the minimum 1" in capsys.readouterr().err


def test_load_model_errors(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    with pytest.raises(CompilerError, match=r"empty.py: defines no function build\(\*\*sizes\) returning a Graph"):
        load_model(path)
    path.write_text("def build():\n    return 3\n")
    with pytest.raises(CompilerError, match="build\\(\\) returned int, not a Graph"):
        load_model(path)
