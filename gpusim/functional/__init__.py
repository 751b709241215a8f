"""Functional execution: real values lane by lane, SIMT divergence, per-warp instruction streams."""

from gpusim.functional.executor import ExecResult, block_streams, execute
from gpusim.functional.launch import Launch
from gpusim.functional.memory import GlobalMemory
from gpusim.functional.stats import ExecStats
from gpusim.functional.stream import BlockStream, WarpStream

__all__ = ["BlockStream", "ExecResult", "ExecStats", "GlobalMemory", "Launch", "WarpStream",
           "block_streams", "execute"]
