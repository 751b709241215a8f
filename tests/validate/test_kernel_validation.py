"""`gpusim validate --kernels`: the measured H200 kernels against their simulated ports. The summary
statistics against an independent computation, the pairs and ports read from the data, the measurement
model (launch as events count it, the rotation's L2), a CI-sized subset through the real entry point with
its fidelity bound, the chart, and one-line errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gpusim.analysis.kernel_validation import (
    KernelRow,
    KernelValidation,
    Pair,
    measured_pairs,
    ports,
    simulate_pair,
    summary,
    written_share,
)
from gpusim.cli.main import main
from gpusim.config import load_config
from gpusim.workloads import load_workload


def _row(workload, measured, simulated, size="small", fe="sasm", mode="full", bound=0.0):
    return KernelRow(workload, workload, fe, size, {}, measured, simulated, simulated - 7.0, 7.0, 1000, mode, bound,
                     (simulated / measured - 1) * 100, 1, True, 0.1)


def test_summary_statistics_against_numpy():
    rows = [_row("a", 10.0, 12.0), _row("b", 100.0, 80.0), _row("c", 1000.0, 1500.0)]
    s = summary(rows)
    err = np.array([20.0, -20.0, 50.0])
    assert s["pairs"] == 3
    assert s["mape_pct"] == pytest.approx(np.abs(err).mean())  # 30
    assert s["mean_signed_error_pct"] == pytest.approx(err.mean())  # 16.67
    meas, sim = np.log([10, 100, 1000]), np.log([12, 80, 1500])
    r = ((meas - meas.mean()) * (sim - sim.mean())).sum() / math.sqrt(((meas - meas.mean()) ** 2).sum()
                                                                        * ((sim - sim.mean()) ** 2).sum())
    assert s["pearson_log"] == pytest.approx(r)
    assert s["within_30_pct"] == 2 and s["worst"] == "c small (+50.0 %)"


def test_the_h200_file_holds_thirty_pairs_in_three_sizes():
    pairs = measured_pairs("h200")
    assert len(pairs) == 30
    assert [p.size for p in pairs if p.kernel == "saxpy"] == ["small", "medium", "large"]
    assert [p.params["n"] for p in pairs if p.kernel == "saxpy"] == [1 << 20, 1 << 25, 1 << 28]
    saxpy = next(p for p in pairs if p.kernel == "saxpy")
    assert saxpy.measured_us == pytest.approx(10.94)  # ms_median_rotated 0.01094


def test_ports_are_the_sasm_workload_and_the_cuda_port_as_ptx_and_sass():
    assert ports("saxpy") == [("saxpy", "sasm"), ("saxpy_cu", "ptx"), ("saxpy_cu", "sass")]
    assert ports("matmul_naive") == [("matmul_naive", "sasm")]  # no CUDA port shipped
    fronts = [fe for p in {q.kernel for q in measured_pairs("h200")} for _, fe in ports(p)]
    assert (fronts.count("sasm"), fronts.count("ptx"), fronts.count("sass")) == (10, 8, 8)  # 30, 24, 24 pairs


@pytest.mark.parametrize("workload,params,share", [
    ("saxpy", {"n": 4096}, 0.5),                     # y of x and y
    ("vecadd", {"n": 4096}, 1 / 3),                  # c of a, b, c
    ("transpose_naive", {"rows": 64, "cols": 64}, 0.5),
    ("reduce_sum", {"n": 1 << 16}, 256 / (65536 + 256)),  # partial: a float a block of 256, beside x's 65,536
])
def test_written_share_is_the_outputs_share_of_the_buffers(workload, params, share):
    assert written_share(load_workload(workload), params) == pytest.approx(share)


def test_the_launch_is_counted_as_events_count_it():
    """simulated = kernel cycles / clock + launch.event_latency_ns; error against the measured time."""
    cfg = load_config("h200", overrides={"launch.event_latency_ns": 5000})
    r = simulate_pair(Pair("saxpy", "small", {"n": 4096, "block": 256}, 10.0), "saxpy", "sasm", cfg, sample="off")
    assert r.launch_us == 5.0
    assert r.kernel_us == pytest.approx(r.cycles / 1980, abs=1e-3)
    assert r.simulated_us == pytest.approx(r.kernel_us + 5.0, abs=1e-3)
    assert r.error_pct == pytest.approx((r.simulated_us / 10.0 - 1) * 100, abs=0.01)
    assert r.mode == "full" and r.verified


def test_program_order_runs_the_ports_as_written():
    """`ptxas_model=False` (validate --kernels --program-order): the PTX port runs as nvcc wrote it, the warp
    instructions those of the written kernel run functionally; by default the ptxas model's compiled kernel
    (docs/isa.md, "The ptxas model"), fewer of them; the SASS port is machine code either way."""
    cfg = load_config("h200")
    pair = Pair("reduce_sum_shfl", "small", {"n": 4096, "block": 256}, 10.0)
    wl = load_workload("reduce_sum_shfl_cu")
    counts = {on: wl.for_config(cfg, on).run(pair.params, cfg).result.stats.warp_instructions for on in (True, False)}
    for on in (True, False):
        r = simulate_pair(pair, "reduce_sum_shfl_cu", "ptx", cfg, sample="off", ptxas_model=on)
        assert r.warp_instructions == counts[on]
    assert counts[True] < counts[False]
    sass = [simulate_pair(pair, "reduce_sum_shfl_cu", "sass", cfg, ptxas_model=on).cycles for on in (True, False)]
    assert sass[0] == sass[1]


def test_the_rotation_leaves_the_l2_full_of_dirty_lines():
    """A kernel measured on rotated buffers starts from an L2 full of other buffers' lines, its written
    share dirty: the small saxpy's stores and loads evict them, and the write-backs reach DRAM."""
    import gpusim

    cfg = load_config("h200")
    warm = gpusim.simulate("saxpy", cfg, params={"n": 1 << 16}, warm_l2=0.5).kernel
    cold = gpusim.simulate("saxpy", cfg, params={"n": 1 << 16}).kernel
    assert cold["dram_bytes_written"] == 0  # 256 KiB of stores stay in the write-back L2
    assert warm["dram_bytes_written"] > 0 and warm["cycles"] >= cold["cycles"]


def test_a_ci_subset_through_the_cli(tmp_path, capsys):
    """The small sizes of three kernels, both front ends: every pair within +-30 % of the H200, the JSON a
    table for pandas, the chart's points the rows."""
    out, chart = tmp_path / "k.json", tmp_path / "k.png"
    argv = ["validate", "--kernels", "--config", "h200", "--size", "small", "--kernel", "saxpy", "--kernel",
            "reduce_sum", "--kernel", "transpose_naive", "--json", str(out), "--chart", str(chart)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    rows = pd.DataFrame(data["rows"])
    assert sorted(zip(rows["workload"], rows["front_end"], strict=True)) == [
        ("reduce_sum", "sasm"), ("reduce_sum_cu", "ptx"), ("reduce_sum_cu", "sass"), ("saxpy", "sasm"),
        ("saxpy_cu", "ptx"), ("saxpy_cu", "sass"), ("transpose_naive", "sasm")]
    assert (rows["error_pct"].abs() <= 30).all(), rows[["workload", "error_pct"]]
    assert np.allclose(rows["simulated_us"], rows["kernel_us"] + rows["launch_us"], atol=1e-3)
    assert np.allclose(rows["error_pct"], (rows["simulated_us"] / rows["measured_us"] - 1) * 100, atol=0.01)
    sasm = rows[rows["front_end"] == "sasm"]
    assert data["summary"]["sasm"]["mape_pct"] == pytest.approx(sasm["error_pct"].abs().mean(), abs=0.01)
    assert f"MAPE {data['summary']['sasm']['mape_pct']:.1f} %" in text
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_quiet_drops_the_progress_lines_not_the_table(capsys):
    argv = ["validate", "--kernels", "--size", "small", "--kernel", "saxpy", "--front-end", "sasm"]
    assert main(argv + ["--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    row = next(line for line in quiet.out.splitlines() if line.startswith("saxpy "))
    assert row.split()[:3] == ["saxpy", "small", "sasm"]
    assert main(argv) == 0
    loud = capsys.readouterr()
    assert "saxpy small:" in loud.err and loud.out == quiet.out


def test_the_chart_draws_every_row():
    from gpusim.plot.correlation import kernel_correlation_figure

    kv = KernelValidation("h200", [_row("saxpy", 10.0, 11.0), _row("saxpy", 120.0, 100.0, "medium"),
                                   _row("saxpy_cu", 10.0, 12.0, fe="ptx"),
                                   _row("saxpy", 900.0, 850.0, "large", mode="sampled", bound=4.0)])
    fig = kernel_correlation_figure(kv)
    gids = {t.get_gid() for ax in fig.axes for t in ax.texts}
    assert gids == {"sasm:saxpy:small", "sasm:saxpy:medium", "sasm:saxpy:large", "ptx:saxpy_cu:small"}
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("h200 sasm: 3 pairs, MAPE")


@pytest.mark.parametrize("argv,message", [
    (["--kernels", "--kernel", "nope"], "no measured kernel 'nope'"),
    (["--kernels", "--config", "a100"], "no measured kernels for config 'a100'"),
    (["--size", "small"], "--size needs --kernels"),
    (["--program-order"], "--program-order needs --kernels"),
    (["--kernels", "--figure", "l1_hit_latency"], "--figure is for the microbenchmarks"),
])
def test_errors_are_one_line(capsys, argv, message):
    assert main(["validate", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_markdown_tables_carry_the_rows_and_the_summary():
    kv = KernelValidation("h200", [_row("saxpy", 10.0, 12.0), _row("saxpy", 100.0, 90.0, "medium"),
                                   _row("saxpy", 900.0, 855.0, "large", mode="sampled", bound=3.25)])
    md = kv.markdown()
    assert "| sasm | 3 | 11.7 % | +1.7 % |" in md  # (20 + 10 + 5) / 3, (20 - 10 - 5) / 3
    assert "| saxpy | large | sasm | 900.0 | 855.0 | -5.0 | sampled (+-3.2 %) |" in md
    from gpusim.analysis.validate import Row, Validation

    v = Validation("h200", [Row("l1_hit_latency", "latency", "cycles", 32.0, 32.02, -0.06, 15.0, "ok", "src", None,
                                0.1),
                            Row("iadd_throughput", "throughput", "ops/clk/SM", 60.7, 126.0, -51.8, 15.0, "known gap",
                                "src", "why", 0.1)])
    md = v.markdown()
    assert md.startswith("#### h200: 2 figures, 1 within tolerance, 1 known gaps, 0 outside")
    assert "| `iadd_throughput` | throughput | 60.7 | 126 ops/clk/SM | -51.8 | known gap: why | src |" in md


def test_large_sizes_leave_the_sass_port_out_unless_asked_for(monkeypatch):
    """SASS runs whole, and the large sizes whole take minutes to hours: they are simulated only when both
    --size and --front-end name them."""
    from gpusim.analysis import kernel_validation as kv

    seen = []
    monkeypatch.setattr(kv, "simulate_pair", lambda pair, wl, fe, cfg, **_: seen.append((pair.size, fe)) or
                        _row(wl, pair.measured_us, pair.measured_us, pair.size, fe=fe))
    kv.validate_kernels("h200", kernels=["saxpy"])
    assert ("large", "sass") not in seen and ("medium", "sass") in seen and ("large", "ptx") in seen
    seen.clear()
    kv.validate_kernels("h200", kernels=["saxpy"], sizes=["large"], front_ends=["sass"])
    assert seen == [("large", "sass")]
