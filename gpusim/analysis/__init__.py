"""Analyses computed from a configuration and a kernel's resources, without simulating: occupancy
(and, later, roofline and crossover)."""

from gpusim.config.occupancy import Occupancy, occupancy

__all__ = ["Occupancy", "occupancy"]
