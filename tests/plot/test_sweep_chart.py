"""Sweep charts from tables in the sweep's contract columns: x chosen automatically, one line per label,
error rows skipped and counted, a heatmap for two parameters under one label."""

import json

import numpy as np
import pytest

from gpusim.errors import GpusimError
from gpusim.plot import load_input, save_figure, sweep_figure
from gpusim.plot.common import NOTE_GID
from tests.plot.helpers import assert_png, assert_svg, error_row

CYCLES = {("a100", 64): 900, ("a100", 128): 800, ("a100", 256): 850,
          ("gtx980", 64): 3000, ("gtx980", 128): 2500, ("gtx980", 256): 2700}


def row(point, config, block, n=4096, cycles=None, gflops=None):
    return {"point": point, "workload": "saxpy", "config": config, "config_hash": None, "label": config,
            "block": block, "n": n, "warp_scheduler": "gto", "status": "ok", "error": None, "verified": True,
            "cached": False, "wall_seconds": 0.1, "cycles": cycles, "kernel_seconds": 1e-6,
            "achieved_gflops": gflops, "warp_states_pct.selected": 10.0, "verdict": "latency-bound"}


@pytest.fixture
def lines_table(tmp_path):
    rows = [row(i, c, b, cycles=v, gflops=v / 100) for i, ((c, b), v) in enumerate(CYCLES.items())]
    rows.append(error_row(len(rows), block=2048, n=4096))
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"points": rows}))
    return load_input(path)


def test_one_line_per_label_over_block(lines_table, tmp_path):
    fig = sweep_figure(lines_table)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "block size (threads)" and ax.get_ylabel() == "cycles"  # not "cycles (cycles)"
    assert ax.get_title() == "cycles vs block: saxpy on a100, gtx980"
    # an honest axis: from zero to a little above the largest value, not fitted to the data's range
    assert ax.get_ylim() == pytest.approx((0, 3000 * 1.08))
    assert [line.get_label() for line in ax.lines] == ["a100", "gtx980"]
    assert ax.lines[1].get_xydata().tolist() == [[64, 3000], [128, 2500], [256, 2700]]
    [note] = [t for t in fig.texts if t.get_gid() == NOTE_GID]
    assert note.get_text() == "1 point(s) with status error skipped"
    save_figure(fig, tmp_path / "s.svg")
    assert_svg(tmp_path / "s.svg")


def test_metric_choice(lines_table):
    ax = sweep_figure(lines_table, metric="achieved_gflops").axes[0]
    assert ax.get_ylabel() == "achieved_gflops (GFLOP/s)"
    assert ax.lines[0].get_xydata()[:, 1].tolist() == [9.0, 8.0, 8.5]


def test_unknown_metric_names_the_file(lines_table):
    with pytest.raises(GpusimError, match=r"sweep.json: the sweep table has no column nope"):
        sweep_figure(lines_table, metric="nope")


def test_heatmap_for_two_params_under_one_label(tmp_path):
    rows = [row(i, "a100", b, n=n, cycles=b + n) for i, (b, n) in enumerate(
        [(64, 1024), (128, 1024), (256, 1024), (64, 4096), (128, 4096), (256, 4096)])]
    path = tmp_path / "grid.csv"
    with open(path, "w") as fh:
        fh.write(",".join(rows[0]) + "\n")
        fh.writelines(",".join("" if v is None else str(v) for v in r.values()) + "\n" for r in rows)
    fig = sweep_figure(load_input(path))
    ax = fig.axes[0]
    assert np.asarray(ax.images[0].get_array()).tolist() == [[1088, 1152, 1280], [4160, 4224, 4352]]
    assert ax.get_xlabel() == "block size (threads)" and ax.get_ylabel() == "n"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1024", "4096"]
    assert "a100" in ax.get_title()
    assert fig.axes[1].get_ylabel() == "cycles"  # the colour bar
    assert ax.images[0].norm.vmin == 0 and ax.images[0].norm.vmax == 4352  # the colour scale starts at zero
    save_figure(fig, tmp_path / "h.png")
    assert_png(tmp_path / "h.png")


def test_grid_is_x_when_block_does_not_vary(tmp_path):
    rows = [row(i, "a100", 256, cycles=c) | {"grid": g} for i, (g, c) in enumerate([(108, 900), (216, 1000)])]
    path = tmp_path / "g.json"
    path.write_text(json.dumps(rows))
    ax = sweep_figure(load_input(path)).axes[0]
    assert ax.get_xlabel() == "grid size (blocks)" and ax.lines[0].get_xydata().tolist() == [[108, 900], [216, 1000]]


def test_nothing_varies(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps([row(0, "a100", 256, cycles=5)]))
    with pytest.raises(GpusimError, match="one.json: nothing varies between the points"):
        sweep_figure(load_input(path))


def test_small_spread_is_drawn_flat(tmp_path):
    """Three points 0.3 % apart (the issue's 1068-1071 cycles) are drawn as the flat line they are."""
    rows = [row(i, "a100", b, cycles=c) for i, (b, c) in enumerate([(128, 1068), (256, 1068), (512, 1071)])]
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(rows))
    ax = sweep_figure(load_input(path)).axes[0]
    low, high = ax.get_ylim()
    assert low == 0 and (1071 - 1068) / (high - low) < 0.01
