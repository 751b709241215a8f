"""The occupancy calculator's three charts: curves equal occupancy() along each resource, the kernel's
point sits at its own occupancy, the title names config and limiter; `--plot` and `plot --kind occupancy`."""

import json

import pytest

from gpusim.analysis import occupancy
from gpusim.cli import main as cli_main
from gpusim.config import load_config
from gpusim.errors import GpusimError
from gpusim.plot import kernel_resources, occupancy_figure, render, save_figure
from tests.plot.helpers import assert_png, assert_svg


@pytest.fixture(autouse=True)
def _plot_commands_only(monkeypatch):
    """Sibling subcommands are being written; build the parser from the two this file runs."""
    monkeypatch.setattr(cli_main, "SUBCOMMANDS", ["occupancy", "plot"])


@pytest.fixture(scope="module")
def a100():
    return load_config("a100")


def gid(ax, name):
    return next(line for line in ax.lines if line.get_gid() == name)


def test_three_panels_with_the_kernel_marked(a100, tmp_path):
    fig = occupancy_figure(a100, 256, 64, 16384, name="k")
    axes = [ax for ax in fig.axes if ax.get_xlabel()]
    assert [ax.get_xlabel() for ax in axes] == ["block size (threads)", "registers per thread (32-bit)",
                                               "shared memory per block (bytes)"]
    assert axes[0].get_ylabel() == "active warps per SM (warps)"
    occ = occupancy(a100, 256, 64, 16384)
    title = fig.get_suptitle()
    assert "a100" in title and f"limited by {occ.limiter}" in title and "50%" in title
    for ax, x0 in zip(axes, (256, 64, 16384), strict=True):
        assert tuple(gid(ax, "kernel").get_xydata()[0]) == (x0, occ.active_warps_per_sm)
    blocks = gid(axes[0], "curve").get_xydata()
    assert blocks[0, 0] == 32 and blocks[-1, 0] == 1024 and len(blocks) == 32
    assert all(y == occupancy(a100, int(b), 64, 16384).active_warps_per_sm for b, y in blocks)
    regs = gid(axes[1], "curve").get_xydata()
    assert regs[-1, 0] == 255 and regs[127, 1] == occupancy(a100, 256, 128, 16384).active_warps_per_sm
    smem = gid(axes[2], "curve").get_xydata()
    assert smem[0, 0] == 0 and smem[-1, 0] <= a100.sm.max_shared_memory_per_block_optin_bytes
    assert all(y == occupancy(a100, 256, 64, int(s)).active_warps_per_sm for s, y in smem[::50])
    save_figure(fig, tmp_path / "o.svg")
    assert_svg(tmp_path / "o.svg")


def test_limiter_by_registers(a100):
    fig = occupancy_figure(load_config("gtx980"), 128, 200, 0)
    assert "gtx980" in fig.get_suptitle() and "limited by registers" in fig.get_suptitle()


def test_kernel_resources_from_timing_and_functional_results(saxpy):
    d = saxpy.to_dict()
    theo = d["theoretical_occupancy"]
    assert kernel_resources(d) == (256, theo["regs_per_thread"], 0)
    functional = {k: v for k, v in d.items() if k not in ("theoretical_occupancy", "kernel")}
    assert kernel_resources(functional) == kernel_resources(d)  # re-loaded from the workload
    with pytest.raises(GpusimError, match="no theoretical_occupancy"):
        kernel_resources({"params": {}})


def test_occupancy_command_plot(tmp_path, capsys):
    out = tmp_path / "occ.png"
    assert cli_main.main(["occupancy", "--workload", "matmul_tiled", "--plot", str(out)]) == 0
    assert "limited by" in capsys.readouterr().out
    assert_png(out)


def test_plot_kind_occupancy_from_a_result(tmp_path, result_files, capsys):
    theo = json.loads(result_files["matmul"].read_text())["theoretical_occupancy"]
    fig = render("occupancy", [result_files["matmul"]])
    assert "matmul_tiled" in fig.get_suptitle() and f"limited by {theo['limiter']}" in fig.get_suptitle()
    assert tuple(gid(fig.axes[1], "kernel").get_xydata()[0]) == (theo["regs_per_thread"], theo["active_warps_per_sm"])
    out = tmp_path / "o.png"
    assert cli_main.main(["plot", str(result_files["matmul"]), "--kind", "occupancy", "-o", str(out)]) == 0
    assert_png(out)
    assert capsys.readouterr().out.startswith(f"wrote {out}")
