"""The roofline chart: roofs at the config's peaks, ridges where they meet, kernels at flops / DRAM bytes
(or flops / bytes_moved) and their achieved GFLOP/s, log-log axes."""

import pytest

from gpusim.analysis import roofline
from gpusim.config import load_config
from gpusim.plot import KernelPoint, result_points, roofline_figure, save_figure
from gpusim.plot.common import NOTE_GID
from tests.plot.helpers import assert_png


@pytest.fixture(scope="module")
def a100():
    return load_config("a100")


def lines(ax, gid):
    return [line for line in ax.lines if line.get_gid() == gid]


def test_roofs_ridges_and_kernels(a100, saxpy, matmul, tmp_path):
    points = result_points([saxpy, matmul])
    fig = roofline_figure(a100, points)
    ax = fig.axes[0]
    roof = roofline(a100)
    assert "a100" in ax.get_title()
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "arithmetic intensity (FLOP/byte: flops / DRAM bytes)"
    assert ax.get_ylabel() == "performance (GFLOP/s)"
    [fp32] = lines(ax, "fp32_roof")
    assert list(fp32.get_ydata()) == pytest.approx([19491.84, 19491.84])
    [dram] = lines(ax, "dram_roof")
    (x0, y0), (x1, y1) = dram.get_xydata()
    assert y0 / x0 == pytest.approx(1555) and (x1, y1) == pytest.approx((roof.dram_ridge, 19491.84))
    [l2] = lines(ax, "l2_roof")
    (x0, y0), (x1, _) = l2.get_xydata()
    assert y0 / x0 == pytest.approx(7219.2) and x1 == pytest.approx(2.7)
    assert lines(ax, "dram_ridge")[0].get_xydata()[0] == pytest.approx((roof.dram_ridge, 19491.84))
    assert lines(ax, "l2_ridge")[0].get_xydata()[0] == pytest.approx((2.7, 19491.84))
    kernels = lines(ax, "kernel")
    assert [k.get_label() for k in kernels] == [p.label for p in points]
    for k, r in zip(kernels, (saxpy, matmul), strict=True):
        m = r.kernel
        assert k.get_xydata()[0] == pytest.approx((m["flops"] / (m["dram_bytes_read"] + m["dram_bytes_written"]),
                                                   m["achieved_gflops"]))
    assert [t.get_text() for t in ax.texts if t.get_text() in ("saxpy n=4096 block=256", "matmul_tiled n=32")]
    save_figure(fig, tmp_path / "r.png")
    assert_png(tmp_path / "r.png")


def test_intensity_from_bytes_moved(a100, saxpy):
    fig = roofline_figure(a100, result_points([saxpy]), intensity="moved")
    [k] = lines(fig.axes[0], "kernel")
    assert k.get_xydata()[0][0] == pytest.approx(saxpy.kernel["flops"] / saxpy.kernel["bytes_moved"])
    assert "bytes_moved" in fig.axes[0].get_xlabel()


def test_kernels_without_flops_are_named_in_a_note(a100, saxpy):
    copy = KernelPoint("stream_copy n=65536", {**saxpy.kernel, "flops": None, "achieved_gflops": None}, "a100")
    fig = roofline_figure(a100, [copy, *result_points([saxpy])])
    assert len(lines(fig.axes[0], "kernel")) == 1
    [note] = [t for t in fig.texts if t.get_gid() == NOTE_GID]
    assert "not placed: stream_copy n=65536" in note.get_text()


def test_hierarchical_roofline_places_each_kernel_at_l1_l2_and_dram(a100, saxpy, matmul):
    """Nsight's hierarchical roofline: the L1 roof (108 SMs x 32 banks x 4 B x 1.41 GHz) and each kernel
    three times, by flops over its bytes at each level."""
    fig = roofline_figure(a100, result_points([saxpy, matmul]), intensity="hierarchical")
    ax = fig.axes[0]
    [l1] = lines(ax, "l1_roof")
    (x0, y0), _ = l1.get_xydata()
    assert y0 / x0 == pytest.approx(108 * 32 * 4 * 1.41)
    assert roofline(a100).l1_ridge == pytest.approx(1.0)
    for level in ("L1", "L2", "DRAM"):
        assert len(lines(ax, f"kernel_{level}")) == 2
    m = matmul.kernel
    l1_bytes = m["global_sectors"] * 32 + m["shared_wavefronts"] * 128
    l2_bytes = (m["l2_read_sectors"] + m["l2_write_sectors"]) * 32
    dram_bytes = m["dram_bytes_read"] + m["dram_bytes_written"]
    got = {lv: lines(ax, f"kernel_{lv}")[1].get_xydata()[0] for lv in ("L1", "L2", "DRAM")}
    assert got["L1"] == pytest.approx((m["flops"] / l1_bytes, m["achieved_gflops"]))
    assert got["L2"] == pytest.approx((m["flops"] / l2_bytes, m["achieved_gflops"]))
    assert got["DRAM"] == pytest.approx((m["flops"] / dram_bytes, m["achieved_gflops"]))
    # more bytes nearer the SM: intensity grows from L1 out to DRAM for a tiled matmul
    assert got["L1"][0] < got["L2"][0] <= got["DRAM"][0]
    assert ax.get_title().startswith("Hierarchical roofline of a100")


def test_tensor_core_roofs_per_precision(a100, saxpy):
    """The A100 whitepaper's tensor peaks: 312 TFLOP/s f16 and bf16, 156 tf32, 624 TOPS int8; none on the
    GTX 980 (no tensor cores)."""
    ax = roofline_figure(a100, result_points([saxpy])).axes[0]
    tops = {p: lines(ax, f"tensor_{p}_roof")[0].get_ydata()[0] for p in ("f16", "bf16", "tf32", "s8")}
    assert tops == pytest.approx({"f16": 311869.44, "bf16": 311869.44, "tf32": 155934.72, "s8": 623738.88})
    assert ax.get_ylim()[1] >= tops["s8"]
    gtx = roofline_figure(load_config("gtx980"), result_points([saxpy])).axes[0]
    assert not [line for line in gtx.lines if (line.get_gid() or "").startswith("tensor_")]
