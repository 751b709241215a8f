"""The crossbar between the SMs and the L2 slices, and the link between the L2's partitions.

Routing. A line's home slice is fixed by its number — lines spread over all `l2.slices`, hashed so
that power-of-two strides still use every slice — and the slices split evenly, in slice order, into
`l2.partitions` partitions; the home slice's partition is the line's home partition. Each SM is near
one partition (its GPC's: `interconnect.gpc_partitions`, by default the GPCs split evenly in order).
An SM sends every request to its near partition, to the slice there that holds the home slice's
place (`slice_of`): with one partition that is the home slice itself. The near partition keeps copies
of lines whose home is a far partition, as the A100's and H100's L2s do (NVIDIA A100 whitepaper: each
partition "localizes and caches data for memory accesses from SMs in the GPCs directly connected");
a request that misses them crosses to the home partition (`l2.py`).

Costs. `interconnect.latency_cycles` each way between an SM and its slice, and, where
`interconnect.port_bytes_per_cycle` is set, one FIFO port per slice moving that many bytes a cycle
towards the SMs. Both are 0 on the shipped configs, whose near L2 hit latency and slice bandwidth are
measured from the SM and so include the crossbar. Crossing to a far partition adds
`interconnect.partition_latency_cycles` each way, and the data coming back passes the link into the
requesting partition, a FIFO port moving `interconnect.partition_bytes_per_cycle` (0: no limit)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.timing.fifo import Fifos, make_fifos, serve
from gpusim.timing.jit import njit, struct_type


class Interconnect(NamedTuple):
    port: Fifos  # one per slice (used when bytes_per_cycle > 0)
    link: Fifos  # one per partition: data crossing into it from the far partitions
    near: np.ndarray  # int64 per SM: the first slice of its near partition
    slices: int
    per_partition: int  # slices in one partition
    latency: int
    bytes_per_cycle: float
    cross_latency: int
    cross_bytes_per_cycle: float


struct_type(Interconnect)


def sm_partitions(cfg: Config) -> np.ndarray:
    """The near L2 partition of each SM: its GPC's (`interconnect.gpc_partitions`, or the GPCs split
    evenly in order when that is not given); SM s is in GPC s // chip.sms_per_gpc."""
    chip, parts = cfg.chip, cfg.l2.partitions
    gpc = np.arange(chip.sm_count) // chip.sms_per_gpc
    table = cfg.interconnect.gpc_partitions
    if table:
        return np.asarray(table, dtype=np.int64)[gpc]
    return gpc * parts // chip.gpcs


def make_interconnect(cfg: Config) -> Interconnect:
    ic, l2 = cfg.interconnect, cfg.l2
    spp = l2.slices // l2.partitions
    return Interconnect(make_fifos(l2.slices), make_fifos(l2.partitions), sm_partitions(cfg) * spp, l2.slices, spp,
                        ic.latency_cycles, float(ic.port_bytes_per_cycle), ic.partition_latency_cycles,
                        float(ic.partition_bytes_per_cycle))


@njit
def home_slice(noc, line):
    """The slice that owns `line` (its partition is the line's home)."""
    return (line ^ (line >> 7) ^ (line >> 13)) % noc.slices


@njit
def slice_of(noc, sm, line):
    """The slice in SM `sm`'s near partition that a request for `line` goes to."""
    return noc.near[sm] + home_slice(noc, line) % noc.per_partition


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


@njit
def cross_back(noc, sl, t, done, nbytes):
    """When `nbytes` a far partition has ready at `done` reach slice `sl`'s partition, and the reply the
    SM: the link into that partition is booked at `t` (the request's arrival, in time order, as its
    FIFO server needs), the data leaves at the later of the slot's end and `done`, and the crossing's
    latency is added both ways."""
    if noc.cross_bytes_per_cycle > 0:
        service = nbytes / noc.cross_bytes_per_cycle
        slot = serve(noc.link, sl // noc.per_partition, t, service) + service
        if slot > done:
            done = slot
    return done + 2 * noc.cross_latency
