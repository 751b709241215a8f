"""Charts (matplotlib Figures, no pyplot): one function a chart, each taking results and returning a
Figure; `save_figure` writes one as PNG or SVG atomically. See docs/plots.md."""

from gpusim.plot.io import KernelPoint, SweepTable, load_input, result_points, save_figure, sweep_points
from gpusim.plot.memory import memory_figure
from gpusim.plot.occupancy import kernel_resources, occupancy_figure
from gpusim.plot.render import KINDS, render
from gpusim.plot.roofline import roofline_figure
from gpusim.plot.sol import sol_figure
from gpusim.plot.stalls import stalls_figure
from gpusim.plot.sweep import sweep_figure
from gpusim.plot.timeline import timeline_figure
from gpusim.plot.units import units_figure

__all__ = ["KINDS", "KernelPoint", "SweepTable", "kernel_resources", "load_input", "memory_figure",
           "occupancy_figure", "render", "result_points", "roofline_figure", "save_figure", "sol_figure",
           "stalls_figure", "sweep_figure", "sweep_points", "timeline_figure", "units_figure"]
