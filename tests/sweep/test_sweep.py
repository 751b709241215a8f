"""`gpusim.sweep.sweep`: rows, columns, failed points, verification, the best point and its evidence,
pandas reading the CSV and JSON, the process pool and the progress display."""

import io
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from gpusim.errors import ConfigError, GpusimError
from gpusim.sweep import LocalExecutor, sweep
from gpusim.sweep.progress import Progress
from gpusim.sweep.result import HEAD, RUN, TAIL
from tests.cli.broken import broken_vecadd

VOLATILE = ("cached", "wall_seconds")


@pytest.fixture(scope="module")
def blocks():
    """saxpy (n=4096) on the a100 at four block sizes, one of them too large."""
    return sweep("saxpy", "a100", grid={"block": [64, 128, 256, 2048]}, params={"n": 4096},
                 executor=LocalExecutor(1))


def _stable(rows):
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


def test_one_row_per_point_with_the_same_columns(blocks):
    rows = blocks.rows
    assert [r["point"] for r in rows] == [0, 1, 2, 3] and [r["block"] for r in rows] == [64, 128, 256, 2048]
    assert all(list(r) == blocks.columns for r in rows)
    cols = blocks.columns
    assert tuple(cols[:6]) == HEAD and cols[6:8] == ["n", "block"] and tuple(cols[8:15]) == RUN
    assert tuple(cols[-3:]) == TAIL
    for name in ("cycles", "kernel_seconds", "achieved_gflops", "achieved_occupancy", "warp_states_pct.long_scoreboard",
                 "unit_utilisation_pct.fp32", "dram_bytes_read"):
        assert name in cols
    ok = rows[0]
    assert ok["workload"] == "saxpy" and ok["config"] == "a100" and ok["label"] == "a100" and ok["n"] == 4096
    assert ok["status"] == "ok" and ok["error"] is None and ok["verified"] is True and ok["cached"] is False
    assert ok["warp_scheduler"] == "gto" and ok["seed"] == 0 and ok["wall_seconds"] > 0
    assert ok["cycles"] > 0 and ok["blocks"] == 4096 // 64 and ok["verdict"] and ok["verdict_reason"]
    assert blocks.axes == ["block"]


def test_a_block_too_large_fails_alone_with_the_reason(blocks):
    bad = blocks.rows[3]
    assert bad["status"] == "error" and "2048" in bad["error"] and "block" in bad["error"]
    assert bad["cycles"] is None and bad["verified"] is None and bad["config_hash"] == blocks.rows[0]["config_hash"]
    assert all(r["status"] == "ok" and r["verified"] for r in blocks.rows[:3])


def test_best_is_the_fewest_cycles_and_explained(blocks):
    ok = [r for r in blocks.rows if r["status"] == "ok"]
    best, worst = blocks.best(), blocks.worst()
    assert best["cycles"] == min(r["cycles"] for r in ok) and worst["cycles"] == max(r["cycles"] for r in ok)
    text = blocks.explain()
    assert text.startswith(f"best        block={best['block']}: {best['cycles']:,} cycles")
    assert f"block={worst['block']} ({worst['cycles']:,} cycles" in text  # (beaten, or tied within --tie)
    assert "the fewest of the 3 points that ran" in text and "vs default" in text
    assert f"{best['achieved_occupancy']:.1%} achieved" in text and best["verdict"] in text
    assert "top stall   long_scoreboard" in text
    table = blocks.table().splitlines()
    assert table[0].split() == ["#", "block", "status", "cycles", "time", "us", "achieved", "occ.", "verdict", "top",
                                "stall"]
    assert f"{best['cycles']:,}" in table[1 + best["point"]]
    assert table[4].split()[:3] == ["3", "2048", "error"] and "the limit is 1024" in table[4]


def test_pandas_reads_the_csv_and_the_json(blocks, tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(blocks.to_csv())
    df = pd.read_csv(path)
    assert list(df.columns) == blocks.columns and len(df) == 4
    assert df["block"].dtype == "int64" and df["status"].tolist() == ["ok"] * 3 + ["error"]
    assert pd.isna(df.loc[3, "cycles"]) and df.loc[df["cycles"].idxmin(), "point"] == blocks.best()["point"]
    nullable = pd.read_csv(path, dtype_backend="numpy_nullable")
    assert str(nullable["cycles"].dtype) == "Int64" and str(nullable["verified"].dtype) == "boolean"
    ok = pd.read_csv(io.StringIO(blocks.to_csv())).query("status == 'ok'")
    assert ok["kernel_seconds"].tolist() == [r["kernel_seconds"] for r in blocks.rows[:3]]  # full precision

    d = json.loads(blocks.to_json())
    assert d["kind"] == "sweep" and d["workload"] == "saxpy" and d["best"] == blocks.best()["point"]
    assert d["verify"] is True and d["seed"] == 0 and d["code_version"] and d["gpusim_version"]
    jf = pd.DataFrame(d["points"], columns=d["columns"])
    assert list(jf.columns) == blocks.columns and jf["cycles"].tolist()[:3] == df["cycles"].tolist()[:3]


def test_all_ok_csv_reads_cycles_as_integers(tmp_path):
    s = sweep("vecadd", "a100", grid={"block": [128, 256]}, params={"n": 2048}, executor=LocalExecutor(1))
    df = pd.read_csv(io.StringIO(s.to_csv()))
    assert df["cycles"].dtype == "int64" and df["verified"].dtype == "bool" and df["cached"].dtype == "bool"


def test_the_process_pool_gives_the_in_process_results(blocks):
    pooled = sweep("saxpy", "a100", grid={"block": [64, 128, 256, 2048]}, params={"n": 4096},
                   executor=LocalExecutor(2))
    assert _stable(pooled.rows) == _stable(blocks.rows)


def test_design_space_sweep_over_configs_overrides_and_schedulers():
    s = sweep("saxpy", ["a100", "gtx980"], grid={"block": [128, 256]}, params={"n": 2048},
              overrides={"sm_count": [8, 54]}, warp_schedulers=["lrr", "gto"], executor=LocalExecutor(1))
    assert len(s.rows) == 16 and s.axes == ["config", "block", "override.chip.sm_count", "warp_scheduler"]
    labels = sorted({r["label"] for r in s.rows})
    assert labels == ["a100 sm_count=54 gto", "a100 sm_count=54 lrr", "a100 sm_count=8 gto", "a100 sm_count=8 lrr",
                      "gtx980 sm_count=54 gto", "gtx980 sm_count=54 lrr", "gtx980 sm_count=8 gto",
                      "gtx980 sm_count=8 lrr"]
    too_many = [r for r in s.rows if r["config"] == "gtx980" and r["override.chip.sm_count"] == 54]
    assert len(too_many) == 4 and all(r["status"] == "error" and "54 SMs do not fit" in r["error"]
                                      and r["config_hash"] is None for r in too_many)
    ok = [r for r in s.rows if r["status"] == "ok"]
    assert len(ok) == 12 and {r["warp_scheduler"] for r in ok} == {"lrr", "gto"}
    assert len({r["config_hash"] for r in ok}) == 6  # 2 configs x 2 schedulers, a100 also at 2 SM counts
    assert "best on gtx980 sm_count=8 lrr" in s.explain()


def test_unknown_inputs_fail_before_anything_runs():
    with pytest.raises(ConfigError, match="no built-in config or file named 'a1000'"):
        sweep("saxpy", "a1000", grid={"block": [64]}, executor=LocalExecutor(1))
    with pytest.raises(ConfigError, match="ambiguous"):
        sweep("saxpy", "a100", overrides={"latency_ns": [1]}, executor=LocalExecutor(1))
    with pytest.raises(ConfigError, match="overridden twice"):
        sweep("saxpy", "a100", overrides={"sm_count": [1], "chip.sm_count": [2]}, executor=LocalExecutor(1))
    with pytest.raises(ConfigError, match="'fifo' is not one of lrr, gto, two_level"):
        sweep("saxpy", "a100", warp_schedulers=["fifo"], executor=LocalExecutor(1))
    with pytest.raises(GpusimError, match="must be at least 1"):
        LocalExecutor(0)


def test_a_wrong_result_is_an_error_row_unless_verification_is_off(tmp_path):
    wl = broken_vecadd(tmp_path, index=5, value=7.0)
    checked = sweep(wl, "a100", grid={"n": [64, 128]}, executor=LocalExecutor(1))
    assert [r["status"] for r in checked.rows] == ["error", "error"]
    assert all(r["verified"] is False and r["cycles"] > 0 and "at index 5" in r["error"] for r in checked.rows)
    unchecked = sweep(wl, "a100", grid={"n": [64, 128]}, verify=False, executor=LocalExecutor(1))
    assert [(r["status"], r["verified"], r["error"]) for r in unchecked.rows] == [("ok", False, None)] * 2


def test_grid_zero_fails_in_its_row():
    s = sweep("stream_copy", "a100", grid={"grid": [0, 2]}, params={"n": 1024}, executor=LocalExecutor(1))
    assert [r["status"] for r in s.rows] == ["error", "ok"] and "at least 1" in s.rows[0]["error"]
    assert s.best()["grid"] == 2 and "vs worst" not in s.explain() and "the only point that ran" in s.explain()


def test_too_much_shared_memory_fails_in_its_row():
    s = sweep("matmul_tiled", "a100", params={"n": 32}, executor=LocalExecutor(1),
              overrides={"max_shared_memory_per_block_bytes": [1024],
                         "max_shared_memory_per_block_optin_bytes": [1024, 49152]})
    assert [r["status"] for r in s.rows] == ["error", "ok"]
    assert "2048 bytes of shared memory per block; the limit is 1024" in s.rows[0]["error"]
    assert s.axes == ["override.sm.max_shared_memory_per_block_optin_bytes"]
    assert s.rows[1]["override.sm.max_shared_memory_per_block_bytes"] == 1024


def _two_points(out):
    """A progress display on `out` that has counted a cached point and a failed one (not yet closed)."""
    bar = Progress(2, stream=out)
    bar.update(cached=True, failed=False)
    bar.update(cached=False, failed=True)
    return bar


def test_progress_counts_points_with_tqdm_or_a_plain_counter(monkeypatch):
    out = io.StringIO()
    bar = _two_points(out)
    assert type(bar.bar).__name__ == "tqdm" and bar.bar.n == 2 and bar.bar.postfix == "cached=1, failed=1"
    bar.close()
    assert "0/2" in out.getvalue()  # tqdm draws at most every 0.1 s, and clears the bar when done
    monkeypatch.setitem(sys.modules, "tqdm", None)  # not installed
    out = io.StringIO()
    _two_points(out).close()
    assert out.getvalue() == "\rsweep: 1/2 points (1 cached, 0 failed)\rsweep: 2/2 points (1 cached, 1 failed)\n"


def test_the_docs_name_every_fixed_column():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "sweep.md").read_text()
    assert [c for c in (*HEAD, *RUN, *TAIL, "override.<dotted.field>") if f"`{c}`" not in doc] == []
