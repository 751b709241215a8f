"""The timing model: a SimPy discrete-event GPU that turns per-warp instruction streams into cycles."""

from gpusim.timing.counters import KernelTiming, SMCounters
from gpusim.timing.decode import WARP_STATES
from gpusim.timing.gpu import GPU

__all__ = ["GPU", "KernelTiming", "SMCounters", "WARP_STATES"]
