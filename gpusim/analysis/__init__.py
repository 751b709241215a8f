"""Analyses computed from a configuration and a kernel's resources, without simulating: occupancy and
the roofline (and, later, crossover)."""

from gpusim.analysis.roofline import Roofline, arithmetic_intensity, l2_bandwidth_gbps, roofline
from gpusim.config.occupancy import Occupancy, occupancy

__all__ = ["Occupancy", "Roofline", "arithmetic_intensity", "l2_bandwidth_gbps", "occupancy", "roofline"]
