"""`gpusim bench` machinery (figures only; no timing assertions)."""

import json

from gpusim.cli import bench_cmd
from gpusim.cli.main import main


def test_measure_reports_counts_and_rates():
    from gpusim import load_workload

    r = bench_cmd.measure("vecadd", {"n": 4096}, "a100")
    per_warp = len(load_workload("vecadd").program)  # uniform kernel: every warp runs every instruction
    assert r["verified"] and r["warp_instructions"] == 4096 // 32 * per_warp
    assert r["thread_instructions"] == 4096 * per_warp
    assert r["warp_instructions_per_second"] > 0 and r["peak_rss_mib"] > 0


def test_bench_only_writes_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_cmd, "SUITE", [("vecadd", {"n": 2048})])
    out = tmp_path / "b.json"
    assert main(["bench", "--only", "vecadd", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["results"][0]["workload"] == "vecadd" and data["results"][0]["params"]["n"] == 2048
    assert "M thr-instr/s" in capsys.readouterr().out
