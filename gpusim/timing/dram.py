"""Memory controllers and their DRAM channels. Addresses are interleaved over the controllers every
`interleave_bytes`; each controller's channel is a FIFO server whose service time per request is the
request's bytes over its share of the (sustained) bandwidth. Under load requests queue, so bandwidth
saturates and latency grows; unloaded, a read returns `dram.latency_cycles` after it was sent.

A controller receives the request's address (`read`, `write`): the channel is chosen from it here,
and a bank/row timing model has what it needs to replace the FIFO channel."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.timing.fifo import Fifos, make_fifos, serve
from gpusim.timing.jit import njit, struct_type


class Dram(NamedTuple):
    channel: Fifos
    bytes_read: np.ndarray  # int64 per controller
    bytes_written: np.ndarray
    interleave: int
    controllers: int
    bytes_per_cycle: float  # one controller's sustained share of the bandwidth
    latency: int
    peak_bytes_per_cycle: float


struct_type(Dram)


def make_dram(cfg: Config) -> Dram:
    d = cfg.dram
    per_cycle = d.bandwidth_gbps * d.efficiency / (cfg.chip.clock_mhz / 1000.0) / d.controllers
    n = d.controllers
    return Dram(make_fifos(n), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), d.interleave_bytes, n,
                per_cycle, d.latency_cycles, d.bandwidth_gbps / (cfg.chip.clock_mhz / 1000.0))


@njit
def controller_of(d, address):
    return (address // d.interleave) % d.controllers


@njit
def read(d, address, t, nbytes):
    """A read of `nbytes` at `address` sent at `t`: the cycle its data is back at the SM."""
    c = controller_of(d, address)
    start = serve(d.channel, c, t, nbytes / d.bytes_per_cycle)
    d.bytes_read[c] += nbytes
    return start + d.latency


@njit
def write(d, address, t, nbytes):
    """A write-back of `nbytes` at `address` at `t`: the cycle the channel has taken it."""
    c = controller_of(d, address)
    service = nbytes / d.bytes_per_cycle
    start = serve(d.channel, c, t, service)
    d.bytes_written[c] += nbytes
    return start + service
