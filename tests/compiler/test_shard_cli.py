"""`gpusim compile --shard N --link`, `--plan-memory` and `--place`: what they print and write, and their
errors."""

import json

import pytest

from gpusim.cli.main import main

BLOCK = ["--set", "seq=2048", "--set", "d_model=512", "--set", "heads=8", "--set", "d_ff=2048"]


def test_shard_over_nvlink_and_pcie(tmp_path, capsys):
    out = tmp_path / "nv.json"
    assert main(["compile", "transformer", *BLOCK, "--shard", "8", "--link", "nvlink", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "transformer sharded over 8 GPUs (tensor parallel) on a100 (nvswitch)" in text
    assert "one GEMM %1 (Megatron's fused QKV)" in text and text.count("all_reduce %") == 2
    nv = json.loads(out.read_text())
    assert nv["interconnect"] == "nvswitch" and [c["op"] for c in nv["collectives"]] == ["all_reduce"] * 2
    # two all-reduces of 2048 x 512 x 4 B: 2 x 2 x 7 x (1 us + 512 KiB / 240 GB/s) on NVSwitch
    assert nv["communication_seconds"] == pytest.approx(2 * 14 * (1e-6 + 4 * 2**20 / 8 / 240e9), rel=0.01)
    assert nv["speedup"] > 4
    out = tmp_path / "pcie.json"
    assert main(["compile", "transformer", *BLOCK, "--shard", "8", "--link", "pcie", "--chunks", "2",
                 "--json", str(out)]) == 0
    pcie = json.loads(out.read_text())
    assert pcie["interconnect"] == "pcie" and pcie["communication_seconds"] > 10 * nv["communication_seconds"]
    assert pcie["overlap_seconds"] > 0 and pcie["streams"]["saved_seconds"] > 0
    assert "streams: one stream" in capsys.readouterr().out


def test_data_parallel_and_plan_memory(capsys):
    assert main(["compile", "mlp2", "--shard", "4", "--parallel", "data"]) == 0
    assert "all_gather %5 joins %4 f32[32,10] along axis 0" in capsys.readouterr().out
    assert main(["compile", "transformer", "--plan-memory", "--json", "-"]) == 0
    plan = json.loads(capsys.readouterr().out)["memory_plan"]
    assert plan["live_peak_bytes"] <= plan["planned_bytes"] < plan["unplanned_bytes"]


def test_place(capsys):
    assert main(["compile", "recommender", "--place", "cpu_8core,a100"]) == 0
    text = capsys.readouterr().out
    assert "embedding_bag  cpu_8core" in text and "matmul         a100" in text


@pytest.mark.parametrize(("args", "message"), [
    (["mlp2", "--link", "pcie"], "--link needs --shard N"),
    (["mlp2", "--chunks", "2", "--parallel", "data"], "--chunks, --parallel need --shard N"),
    (["mlp2", "--shard", "2", "--place", "cpu_8core,a100"], "--shard and --place are separate analyses"),
    (["mlp2", "--shard", "2", "--plan-memory"], "--tune and --plan-memory apply to the compiled kernels"),
    (["mlp2", "--shard", "3", "--parallel", "data"], "data parallel: input 'x' f32[32,64] does not split along axis 0"),
    (["transformer", "--shard", "2", "--chunks", "3"], "32 rows (the first input's leading axis) do not split into 3"),
    (["mlp2", "--place", "a100"], "--place needs two devices or more"),
    (["recommender"], "node %0: no kernel template lowers embedding_bag"),
])
def test_errors(capsys, args, message):
    assert main(["compile", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusim compile: error: ") and message in err


@pytest.mark.parametrize("args", [
    ["transformer", *BLOCK, "--shard", "8", "--link", "pcie", "--chunks", "2"],
    ["recommender", "--place", "cpu_8core,a100"],
])
def test_docs_show_current_output(capsys, args):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "compiler.md").read_text()
    assert main(["compile", *args]) == 0
    assert capsys.readouterr().out.strip() in doc
