"""Labels that say what produced the number (issue 37, item 7) and no figure above the machine's peak
printed as a result without a warning that says why (item 8; issue 33 shares the check,
gpusim.stats.peaks)."""

import json
import re

import pytest

import gpusim
from gpusim.cli.main import main
from gpusim.plot.report import report_html
from gpusim.stats.metrics import throughput_source
from gpusim.stats.peaks import above_peak, kernel_warnings


@pytest.fixture(scope="module")
def transpose():
    return gpusim.simulate("transpose_naive", "a100")


@pytest.fixture(scope="module")
def saxpy():
    return gpusim.simulate("saxpy", "a100", n=1 << 20)


def test_memory_throughput_is_labelled_by_the_unit_that_produced_it(transpose):
    k = transpose.kernel
    parts = {"DRAM bandwidth": k["dram_bandwidth_pct"], "DRAM busy": k["dram_busy_pct"], "L2 busy": k["l2_busy_pct"]}
    busiest = max(parts, key=parts.get)
    assert busiest == "L2 busy" and k["memory_throughput_pct"] == parts[busiest]  # 65.0 % L2, 32.8 % DRAM busy
    assert throughput_source(k, "memory") == "L2 busy"
    page = report_html(transpose)
    row = re.search(r"<th>memory throughput</th><td>(.*?)</td>", page).group(1)
    assert row.startswith(f"{k['memory_throughput_pct']:.1f}% (L2 busy") and "DRAM busy" not in row.split(",")[0]
    compute = re.search(r"<th>compute throughput</th><td>(.*?)</td>", page).group(1)
    assert f"({throughput_source(k, 'compute')}," in compute


def test_l1_lookups_are_not_called_requests(transpose):
    k = transpose.kernel
    assert "l1_requests" not in k and k["l1_tag_lookups"] > k["global_requests"]  # lines, not warp requests
    assert f"{k['l1_tag_lookups']:,} tag lookups" in transpose.summary_table()
    assert f"{k['l1_tag_lookups']:,} requests" not in transpose.summary_table()
    assert f"{k['l1_tag_lookups']:,} tag lookups" in report_html(transpose)


def test_theoretical_occupancy_says_theoretical(capsys):
    assert main(["occupancy", "--block-size", "256", "--regs", "64"]) == 0
    out = capsys.readouterr().out
    assert "\n  theoretical occupancy      50.0%" in out and "\n  occupancy " not in out


def test_a_figure_above_the_peak_carries_why(saxpy):
    k = saxpy.kernel
    assert k["useful_bandwidth_gbps"] > k["peak_dram_bandwidth_gbps"]  # 1,982 GB/s on a 1,555 GB/s DRAM
    [w] = saxpy.warnings
    assert w.metric == "useful_bandwidth_gbps" and w.peak == pytest.approx(1555, rel=1e-3)
    moved, drawn = k["bytes_moved"], k["dram_bytes_read"] + k["dram_bytes_written"]
    assert f"{moved - drawn:,} B of it did not cross DRAM" in str(w)  # the stores still in the L2
    text = saxpy.summary_table()
    useful = k["useful_bandwidth_gbps"]  # the workload's bytes over the kernel's time, above the DRAM peak
    assert useful == pytest.approx(moved / (saxpy.cycles / 1410e6) / 1e9, rel=1e-6)
    assert re.search(rf"\nabove peak +useful_bandwidth_gbps {useful:,.1f} GB/s is {100 * useful / 1555:.0f}% of the "
                     r"1,555 GB/s peak: ", text)
    assert json.loads(json.dumps(saxpy.to_dict()))["warnings"][0]["metric"] == "useful_bandwidth_gbps"
    assert "Above the peak" in report_html(saxpy) and str(w).split(":")[0] in report_html(saxpy)


def test_below_the_peak_no_warning_and_the_check_itself():
    r = gpusim.simulate("saxpy", "a100", n=4096)
    assert r.warnings == [] and "above peak" not in r.summary_table()
    assert above_peak("x", 10.0, 10.0, "GB/s", "why") is None and above_peak("x", None, 10.0, "GB/s", "w") is None
    w = above_peak("x", 12.0, 10.0, "GB/s", "because")
    assert str(w) == "x 12.0 GB/s is 120% of the 10 GB/s peak: because"
    assert [w.metric for w in kernel_warnings({"achieved_gflops": 300.0, "achieved_gflops_pct": 150.0})] == [
        "achieved_gflops"]


def test_sweep_rows_carry_the_warning(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "saxpy", "--set", "n=1048576", "--jobs", "1", "--no-cache", "--csv", str(out)]) == 0
    import pandas as pd

    row = pd.read_csv(out).iloc[0]
    assert row["useful_bandwidth_pct"] > 100 and row["warnings"].startswith("useful_bandwidth_gbps ")
    assert main(["sweep", "saxpy", "--set", "n=1048576", "--jobs", "1", "--no-cache"]) == 0
    assert "above peak (the CSV's warnings column):\n  point 0 (a100): useful_bandwidth_gbps" in capsys.readouterr().out
