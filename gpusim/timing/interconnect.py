"""The crossbar between the SMs and the L2 slices. It routes each line to its slice — lines spread by
their number, hashed so that power-of-two strides still use every slice — and carries requests there
and data back: `interconnect.latency_cycles` each way and, where `interconnect.port_bytes_per_cycle`
is set, one FIFO port per slice moving that many bytes a cycle (0: the slices' own data ports are the
only limit). Both are 0 on the shipped configs, whose L2 hit latency and slice bandwidth are measured
from the SM and so include the crossbar."""

from __future__ import annotations

from typing import NamedTuple

from gpusim.config import Config
from gpusim.timing.fifo import Fifos, make_fifos, serve
from gpusim.timing.jit import njit, struct_type


class Interconnect(NamedTuple):
    port: Fifos  # one per slice (used when bytes_per_cycle > 0)
    slices: int
    latency: int
    bytes_per_cycle: float


struct_type(Interconnect)


def make_interconnect(cfg: Config) -> Interconnect:
    ic = cfg.interconnect
    return Interconnect(make_fifos(cfg.l2.slices), cfg.l2.slices, ic.latency_cycles, float(ic.port_bytes_per_cycle))


@njit
def slice_of(noc, line):
    return (line ^ (line >> 7) ^ (line >> 13)) % noc.slices


@njit
def to_slice(noc, t):
    """When a request sent at `t` reaches its slice."""
    return t + noc.latency


@njit
def to_sm(noc, sl, t, nbytes):
    """When `nbytes` leaving slice `sl` at `t` reach the SM."""
    if noc.bytes_per_cycle > 0:
        t = serve(noc.port, sl, t, nbytes / noc.bytes_per_cycle) + nbytes / noc.bytes_per_cycle
    return t + noc.latency
