"""Stall stacked bars, unit-utilisation bars and memory traffic: bar heights equal the metrics of the
results (or sweep rows) they draw."""

import numpy as np
import pytest

from gpusim.config import load_config
from gpusim.errors import GpusimError
from gpusim.plot import (
    KernelPoint,
    SweepTable,
    memory_figure,
    result_points,
    save_figure,
    stalls_figure,
    sweep_points,
    units_figure,
)
from gpusim.plot.common import NOTE_GID
from gpusim.plot.memory import traffic_bytes
from gpusim.timing.decode import PORTS
from tests.plot.helpers import assert_png, assert_svg, error_row, sweep_row


def bars_by_label(ax):
    """legend label -> bar heights, from the axes' BarContainers."""
    return {c.get_label(): [r.get_height() for r in c] for c in ax.containers}


def test_stalls_in_cycles_per_issued_instruction(saxpy, matmul):
    """The default: each state's warp-cycles per issued instruction, so the bars' heights differ as the
    kernels' latencies do (a 100%-stacked bar would draw them alike)."""
    fig = stalls_figure(result_points([saxpy, matmul]))
    ax = fig.axes[0]
    assert ax.get_ylabel() == "warp-cycles per issued instruction"
    heights = bars_by_label(ax)
    for i, r in enumerate((saxpy, matmul)):
        k = r.kernel
        total = sum(h[i] for h in heights.values())
        assert total == pytest.approx(k["warp_cycles_per_issued_instruction"])
        per = k["warp_states"]["long_scoreboard"] / k["warp_instructions"]
        assert heights["long_scoreboard"][i] == pytest.approx(per)
        assert f"{total:.1f}" in [t.get_text() for t in ax.texts]
    with pytest.raises(GpusimError, match=r"unknown stall scale 'x' \(choose cycles or pct\)"):
        stalls_figure(result_points([saxpy]), scale="x")


def test_stalls_one_stacked_bar_per_result(saxpy, matmul, tmp_path):
    points = result_points([saxpy, matmul])
    fig = stalls_figure(points, scale="pct")
    ax = fig.axes[0]
    assert ax.get_title() == "Warp states (stall reasons) on a100"
    assert ax.get_ylabel() == "share of resident warp-cycles (%)" and ax.get_xlabel() == "kernel"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["saxpy n=4096 block=256", "matmul_tiled n=32"]
    heights = bars_by_label(ax)
    for i, r in enumerate((saxpy, matmul)):
        shares = r.kernel["warp_states_pct"]
        assert {s: h[i] for s, h in heights.items()} == pytest.approx({s: v for s, v in shares.items() if s in heights})
        assert sum(h[i] for h in heights.values()) == pytest.approx(100.0)
    assert "barrier" in heights and "no_instruction" not in heights  # states at 0 everywhere are left out
    save_figure(fig, tmp_path / "s.png")
    assert_png(tmp_path / "s.png")


def test_stalls_per_sweep_point_with_a_note_for_errors(saxpy, matmul):
    rows = [sweep_row(saxpy, 0), error_row(1, block=2048, n=4096), {**sweep_row(matmul, 2), "workload": "saxpy"}]
    table = SweepTable("t.csv", rows, list(dict.fromkeys(c for r in rows for c in r)))
    fig = stalls_figure(sweep_points(table), scale="pct", notes=["1 point(s) with status error skipped"])
    heights = bars_by_label(fig.axes[0])
    assert heights["long_scoreboard"] == pytest.approx([saxpy.kernel["warp_states_pct"]["long_scoreboard"],
                                                        matmul.kernel["warp_states_pct"]["long_scoreboard"]])
    [note] = [t for t in fig.texts if t.get_gid() == NOTE_GID]
    assert note.get_text() == "1 point(s) with status error skipped"


def test_units_bars(saxpy, matmul, tmp_path):
    fig = units_figure(result_points([saxpy, matmul]))
    ax = fig.axes[0]
    assert ax.get_title() == "Execution-unit utilisation on a100"
    assert ax.get_ylabel() == "utilisation (% of peak, active cycles)"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(PORTS) + ["issue\nslots"]
    heights = bars_by_label(ax)
    want = [saxpy.kernel["unit_utilisation_pct"][u] for u in PORTS] + [saxpy.kernel["issue_slot_utilisation_pct"]]
    assert heights["saxpy n=4096 block=256"] == pytest.approx(want)
    save_figure(fig, tmp_path / "u.svg")
    assert_svg(tmp_path / "u.svg")


def test_memory_traffic_and_hit_rates(saxpy, matmul, tmp_path):
    a100 = load_config("a100")
    points = result_points([saxpy, matmul])
    fig = memory_figure(points, [a100, a100])
    traffic, rates = fig.axes[:2]
    assert "a100" in fig.get_suptitle()
    assert traffic.get_ylabel() == "traffic (bytes)" and rates.get_ylabel() == "sector hit rate (%)"
    k = saxpy.kernel
    l1 = (k["l1_hit_sectors"] + k["l1_miss_sectors"]) * 32
    l2 = (k["l2_read_sectors"] + k["l2_write_sectors"]) * 32
    dram = k["dram_bytes_read"] + k["dram_bytes_written"]
    assert traffic_bytes(points[0], a100) == (l1, l2, dram)
    assert bars_by_label(traffic)["saxpy n=4096 block=256"] == [l1, l2, dram]
    assert bars_by_label(rates)["matmul_tiled n=32"] == pytest.approx([matmul.kernel["l1_hit_rate_pct"],
                                                                         matmul.kernel["l2_hit_rate_pct"]])
    save_figure(fig, tmp_path / "m.png")
    assert_png(tmp_path / "m.png")


def test_memory_without_hit_rate_draws_na(saxpy):
    [p] = result_points([saxpy])
    p = KernelPoint(p.label, {**p.kernel, "l2_hit_rate_pct": None}, "a100")
    fig = memory_figure([p], [load_config("a100")])
    assert np.isnan(bars_by_label(fig.axes[1])[p.label][1])
    assert "n/a" in [t.get_text() for t in fig.axes[1].texts]


def test_speed_of_light_bars(saxpy, matmul, tmp_path):
    """Nsight's Speed Of Light: compute and memory throughput first, then the units behind them; each bar
    is the kernel's own metric (L1/shared: its bytes over 32 banks x 4 B per SM per cycle)."""
    from gpusim.plot import sol_figure

    a100 = load_config("a100")
    fig = sol_figure(result_points([saxpy, matmul]), [a100, a100])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[:3] == ["compute\n(SM)", "memory", "issue\nslots"]
    assert labels[-4:] == ["L1/shared", "L2", "DRAM\nbandwidth", "DRAM\nbusy"]
    heights = bars_by_label(ax)
    for label, r in zip(heights, (saxpy, matmul), strict=True):
        k = r.kernel
        h = dict(zip(labels, heights[label], strict=True))
        assert h["compute\n(SM)"] == pytest.approx(k["compute_throughput_pct"])
        assert h["memory"] == pytest.approx(k["memory_throughput_pct"])
        assert h["DRAM\nbusy"] == pytest.approx(k["dram_busy_pct"])
        l1 = k["global_sectors"] * 32 + k["shared_wavefronts"] * 128
        assert h["L1/shared"] == pytest.approx(100 * l1 / (128 * k["sms"] * k["cycles"]))
    [line] = [ln for ln in ax.lines if ln.get_gid() == "sol_threshold"]
    assert list(line.get_ydata()) == [60, 60]
    save_figure(fig, tmp_path / "sol.svg")
