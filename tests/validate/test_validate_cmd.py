"""`gpusim validate`: a small subset runs quickly through the real entry point, the exit status follows
the tolerances and the known gaps, the JSON is a table for pandas, the chart is written."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from gpusim.analysis.validate import lookup, published, references
from gpusim.cli.main import main

FAST = ["--figure", "l1_hit_latency", "--figure", "rsqrt_latency", "--figure", "sin_latency"]


def test_a_subset_on_h200_passes_and_writes_json_and_chart(tmp_path, capsys):
    out, chart = tmp_path / "v.json", tmp_path / "v.png"
    assert main(["validate", "--config", "h200", *FAST, "--json", str(out), "--chart", str(chart)]) == 0
    text = capsys.readouterr().out
    assert "rsqrt_latency" in text and "h200: 3 figures, 3 within tolerance" in text
    rows = pd.DataFrame(json.loads(out.read_text())["rows"])
    assert list(rows["figure"]) == ["l1_hit_latency", "sin_latency", "rsqrt_latency"]
    assert set(rows.columns) >= {"config", "figure", "kind", "simulated", "reference", "error_pct", "tolerance_pct",
                                 "status", "source"}
    # simulated = the configured latencies: rsqrt 39 against 39.10 measured, sin 23 against 22.95
    assert rows.set_index("figure").loc["rsqrt_latency", "simulated"] == pytest.approx(39.0)
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_figure_outside_its_tolerance_exits_1(capsys):
    # rsqrt at 80 cycles is 105 % above the H200's 39.1: outside 15 %, and no known gap is written for it
    assert main(["validate", "--config", "h200", "--figure", "rsqrt_latency",
                 "--config-set", "opcodes.rsqrt.latency_cycles=80"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_a_known_gap_is_reported_not_failed(capsys):
    assert main(["validate", "--config", "a100", "--figure", "cvt_throughput"]) == 0
    out = capsys.readouterr().out
    assert "known gap: an opcodes: entry applies to every type pair" in out
    assert "1 known gaps, 0 outside tolerance" in out


def test_published_figures_with_json_to_stdout(capsys):
    assert main(["validate", "--config", "gtx980", "--figure", "dfma_throughput", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = data["rows"][0]
    assert (row["simulated"], row["reference"], row["status"]) == (4.0, 4.0, "ok")
    assert row["source"].startswith("[PG]")


@pytest.mark.parametrize("argv, message", [
    (["--config", "h200", "--figure", "nope"], "no figure named 'nope'"),
    (["--config", "cpu_like"], "no reference figures for config 'cpu_like'"),
    (["--config", "h200", "--figure", "sin_latency", "--config-set", "opcodes.sine.latency_cycles=3"],
     "unknown opcode"),
])
def test_errors_are_one_line(capsys, argv, message):
    assert main(["validate", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_every_reference_has_a_source_and_every_figure_a_bench():
    benches = set(published()["benches"])
    for fig in published()["figures"]:
        assert fig["measure"]["bench"] in benches, fig["id"]
    for config in ("a100", "gtx980", "h200"):
        refs = references(config)
        assert refs and all(src and value > 0 for _, value, src, _ in refs)
    assert len(references("a100")) + len(references("gtx980")) >= 30


def test_lookup_selects_list_items_by_fields():
    data = {"a": [{"k": 1, "w": 2, "v": 3.5}, {"k": 1, "w": 3, "v": 4.5}]}
    assert lookup(data, "a[k=1,w=3].v") == 4.5
    with pytest.raises(Exception, match="2 items match"):
        lookup(data, "a[k=1].v")


def _no_simulation(run):
    return 0, 0.0  # (a worker's task: a module's function, picklable)


def test_a_bandwidth_above_the_configs_peak_fails_whatever_its_reference(monkeypatch, capsys):
    """The h200's L2 moves at most 80 slices x 64 B = 5120 B a clock, its DRAM 4800 GB/s. A figure above its
    peak is a timing-model bug and fails even within tolerance of its reference: 3600 B/clk is +2 % of the
    measured 3530, but above a peak of 3000."""
    from gpusim.analysis import validate as v
    from gpusim.config import load_config

    cfg = load_config("h200")
    fig = next(f for f in published()["figures"] if f["id"] == "l2_read_bandwidth")
    assert v.peak(fig, cfg) == 80 * 64
    gbps = next(f for f in published()["figures"] if f["id"] == "stream_copy_v4_bandwidth")
    assert v.peak(gbps, cfg) == 4800
    assert v.above_peak(gbps, 4800.0, cfg) is None
    assert "above the config's peak 4800" in v.above_peak(gbps, 4900.0, cfg)
    monkeypatch.setattr(v, "plan", lambda config, m, overrides=None, **_: ([None], lambda cycles: 3600.0))
    monkeypatch.setattr(v, "_cycles_of", _no_simulation)
    monkeypatch.setattr(v, "peak", lambda fig, cfg: 3000.0)  # a config whose L2 cannot reach the reference
    assert main(["validate", "--config", "h200", "--figure", "l2_read_bandwidth"]) == 1
    out = capsys.readouterr().out
    assert "FAIL -- 3600 B/clk is above the config's peak 3000 (a timing-model bug)" in out
