"""The block timeline: one bar per block on its SM, waves coloured, the kernel's end and the last dispatch
marked."""

import pytest

from gpusim import simulate
from gpusim.plot import save_figure, timeline_figure
from gpusim.plot.timeline import block_waves
from tests.plot.helpers import assert_png


@pytest.fixture(scope="module")
def waves():
    """40 blocks of 256 threads on 4 SMs (8 resident each): two waves, the second partial."""
    return simulate("saxpy", "a100", overrides={"chip.sm_count": 4}, n=40 * 256)


def test_one_bar_per_block(saxpy, tmp_path):
    fig = timeline_figure(saxpy)
    ax = fig.axes[0]
    assert len(ax.patches) == len(saxpy.timeline) == 16
    assert ax.get_xlabel() == "time (cycles)" and ax.get_ylabel() == "SM (index)"
    assert "saxpy on a100" in ax.get_title() and "16 blocks in 1 wave" in ax.get_title()
    bars = sorted((round(p.get_y()), p.get_x(), p.get_width()) for p in ax.patches)
    assert bars == sorted((b["sm"], b["start"], b["end"] - b["start"]) for b in saxpy.timeline)
    [end] = [line for line in ax.lines if line.get_gid() == "kernel_end"]
    assert list(end.get_xdata()) == [saxpy.cycles, saxpy.cycles]
    save_figure(fig, tmp_path / "t.png")
    assert_png(tmp_path / "t.png")


def test_waves_and_tail(waves):
    slots, wave, nslots = block_waves(waves.timeline)
    assert max(wave.values()) == 1 and sum(1 for w in wave.values() if w == 1) == 8
    assert nslots == {0: 8, 1: 8, 2: 8, 3: 8}
    fig = timeline_figure(waves.to_dict())
    ax = fig.axes[0]
    assert len(ax.patches) == 40 and "2 waves" in ax.get_title()
    colours = {p.get_facecolor() for p in ax.patches}
    assert len(colours) == 2
    [last] = [line for line in ax.lines if line.get_gid() == "last_dispatch"]
    assert last.get_xdata()[0] == max(b["start"] for b in waves.timeline)
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["wave 1", "wave 2"]
