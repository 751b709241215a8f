"""The L2: a chip-wide sectored, set-associative cache split into slices, the slices into partitions
(`l2.partitions`). Each slice has a data port (a FIFO server moving `slice_bandwidth_bytes_per_cycle`),
its own sets, and serves reads, writes and atomics. Every line has a home slice (interconnect.py); an
SM's read goes to the slice of its near partition in the home's place, which keeps copies of lines
whose home is far: sectors it lacks come across the link from the home slice when that is far
(`interconnect.partition_latency_cycles` each way), and from DRAM when the home lacks them too.
Writes and atomics are performed at the home slice (the point of coherence), which drops the other
partitions' copies. With one partition every slice is its lines' home and none of this applies.
A write-back L2 keeps written sectors dirty and writes them to DRAM when their line is evicted.
The replacement policy is `l2.replacement` (gpusim/timing/policies/).

`prefill_dirty` starts the L2 in the steady state of a long kernel whose data overflows it: every set
full of lines no kernel address maps to (negative line numbers), a given fraction of them dirty, so
that every line the kernel allocates evicts one, and writes it back when it is dirty."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.config.vocab import REPLACEMENT_POLICIES
from gpusim.timing import dram as _dram
from gpusim.timing import interconnect as _noc
from gpusim.timing import tags as _tags
from gpusim.timing.fifo import Fifos, make_fifos, serve
from gpusim.timing.jit import njit, struct_type
from gpusim.timing.policies import replacement_srrip as srrip
from gpusim.timing.tags import Tags, make_tags


class L2(NamedTuple):
    port: Fifos  # each slice's data port
    tags: Tags  # rows: slice * nsets + set
    hits: np.ndarray  # sectors, per slice
    misses: np.ndarray
    writes: np.ndarray
    atomics: np.ndarray  # lane operations
    far: np.ndarray  # sectors a near slice lacked whose home is a far partition (fetched across the link)
    service: np.ndarray  # float64: the data port's time to move n sectors
    slices: int
    partitions: int
    per_partition: int  # slices in one partition
    nsets: int
    line_bytes: int
    sector_bytes: int
    hit_latency: int
    write_back: bool
    rmw: float  # port cycles per sector read-modified-written (a partial write, an atomic's update)
    atomic_op: float  # cycles per lane of an atomic on its busiest address
    spill: bool  # l2.partition_policy spill: lines cached where used, victims spill to the next partition


struct_type(L2)


def make_l2(cfg: Config) -> L2:
    l2 = cfg.l2
    nsets = max(1, l2.size_bytes // (l2.slices * l2.line_size_bytes * l2.ways))
    # requests come from the L1s, whose masks hold at most an L1 line's sectors
    most = max(l2.line_size_bytes // l2.sector_size_bytes, cfg.l1.line_size_bytes // cfg.l1.sector_size_bytes)
    service = np.array([n * l2.sector_size_bytes / l2.slice_bandwidth_bytes_per_cycle for n in range(most + 1)])
    n = l2.slices
    z = lambda: np.zeros(n, dtype=np.int64)  # noqa: E731
    return L2(make_fifos(n), make_tags(n * nsets, l2.ways, REPLACEMENT_POLICIES.index(l2.replacement)),
              z(), z(), z(), z(), z(), service, n, l2.partitions, n // l2.partitions, nsets, l2.line_size_bytes,
              l2.sector_size_bytes, l2.hit_latency_cycles, l2.write_policy == "write_back",
              float(l2.rmw_sector_cycles), float(l2.atomic_op_cycles),
              l2.partition_policy == "spill" and l2.partitions > 1)


@njit
def popcount(x):
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


@njit
def prefetch_line(c, noc, line):
    """Start loading `line`'s set in the slice at its home's place in every partition (a read looks in
    the near one, a write or an atomic in all of them; a hint: no value changes)."""
    offset = _noc.home_slice(noc, line) % c.per_partition
    for p in range(c.partitions):
        _tags.prefetch_set(c.tags, _row(c, p * c.per_partition + offset, line))


@njit
def _lookup(c, d, sl, t, line, mask):
    """Touch `line` in slice `sl` at `t`, allocating it if absent (the victim written back to DRAM
    when dirty), and mark the sectors of `mask` valid. Returns the sectors of `mask` it lacked."""
    tg = c.tags
    row = sl * c.nsets + (line // c.slices) % c.nsets
    way = _tags.find(tg, row, line)
    if way >= 0:
        _tags.touch(tg, row, way)
        valid = tg.valid[row, way]
    else:
        way, victim, dirty = _tags.allocate(tg, row, line)
        if victim != _tags.EMPTY and dirty:
            _dram.write(d, victim * c.line_bytes, t, popcount(dirty) * c.sector_bytes)
        valid = 0
    tg.valid[row, way] = valid | mask
    return mask & ~valid, row, way


@njit
def read(c, noc, d, sl, t, line, mask):
    """Read the sectors `mask` of `line` at slice `sl` of the requesting SM's near partition, requested
    at `t`: the cycle they are back at the SM (before the crossbar's way back, `interconnect.to_sm`).
    Sectors the slice lacks come from the line's home slice when that is in a far partition (crossing
    the link both ways; they are then kept here too), else, or when the home lacks them too, from DRAM."""
    nsec = popcount(mask)
    start = serve(c.port, sl, t, c.service[nsec])
    if c.spill:
        return _read_spill(c, noc, d, sl, start, line, mask, nsec)
    missing, row, way = _lookup(c, d, sl, start, line, mask)
    done = start + c.hit_latency
    if not missing:
        c.hits[sl] += nsec
        return done
    nmiss = popcount(missing)
    c.hits[sl] += nsec - nmiss
    home = _noc.home_slice(noc, line)
    if home == sl:  # this is the line's home: DRAM
        c.misses[sl] += nmiss
        back = _dram.read(d, line * c.line_bytes, start, nmiss * c.sector_bytes)
        return back if back > done else done
    c.far[sl] += nmiss
    # the home's port and DRAM are booked in arrival order (their FIFO servers need requests in time
    # order); the crossing's latency, both ways, is added to the reply
    fstart = serve(c.port, home, start, c.service[nmiss])
    lacking, _, _ = _lookup(c, d, home, fstart, line, missing)
    fdone = fstart + c.hit_latency
    if lacking:
        nlack = popcount(lacking)
        c.misses[home] += nlack
        c.hits[home] += nmiss - nlack
        back = _dram.read(d, line * c.line_bytes, fstart, nlack * c.sector_bytes)
        if back > fdone:
            fdone = back
    else:
        c.hits[home] += nmiss
    return _noc.cross_back(noc, sl, fstart, fdone, nmiss * c.sector_bytes)


# -- partition policy `spill` -----------------------------------------------------------------------
# A line is cached in the partition whose SMs read it: a read looks in its near slice, then in the slice
# at the same place in every other partition (across the link), then DRAM, and keeps what it fetched near.
# A line evicted from a partition moves into the next partition's slice at the same place unless another
# partition holds it already (a victim cache: one SM's working set reaches twice a partition at the far
# latency, as the H200's pointer chase shows: near up to ~30 MiB, far from 34 to 57 MiB, DRAM past 60);
# a line evicted there is written back when dirty and goes no further. Writes and atomics are performed at
# the line's home slice (by address: the point of coherence, where same-address atomics serialise), after
# the other partitions' copies are invalidated (their dirty sectors merged).


@njit
def _row(c, sl, line):
    return sl * c.nsets + (line // c.slices) % c.nsets


@njit
def _other(c, sl, p):
    """The slice at `sl`'s place in partition `p`."""
    return p * c.per_partition + sl % c.per_partition


@njit
def _spill_victim(c, d, sl, t, victim, vvalid, vdirty):
    """`victim` left slice `sl` at `t` with sectors `vvalid` (`vdirty` dirty): merge it into a copy another
    partition holds, else move it into the next partition's slice at the same place (that slice's own victim
    written back when dirty)."""
    tg = c.tags
    here = sl // c.per_partition
    for p in range(c.partitions):
        if p != here:
            o = _other(c, sl, p)
            orow = _row(c, o, victim)
            ow = _tags.find(tg, orow, victim)
            if ow >= 0:
                tg.valid[orow, ow] |= vvalid
                tg.dirty[orow, ow] |= vdirty
                return
    o = _other(c, sl, (here + 1) % c.partitions)
    nvalid = popcount(vvalid)
    serve(c.port, o, t, c.service[nvalid])  # the victim's data written into the next partition's slice
    orow = _row(c, o, victim)
    ow, old, odirty = _tags.allocate(tg, orow, victim)
    if old != _tags.EMPTY and odirty:
        _dram.write(d, old * c.line_bytes, t, popcount(odirty) * c.sector_bytes)
    tg.valid[orow, ow] = vvalid
    tg.dirty[orow, ow] = vdirty


@njit
def _near_line(c, d, sl, t, line):
    """The way of `line` in slice `sl` (allocated if absent, the victim spilled). Returns (row, way)."""
    tg = c.tags
    row = _row(c, sl, line)
    way = _tags.find(tg, row, line)
    if way >= 0:
        _tags.touch(tg, row, way)
        return row, way
    vvalid = _tags.victim_valid(tg, row)
    way, victim, vdirty = _tags.allocate(tg, row, line)
    if victim != _tags.EMPTY:
        _spill_victim(c, d, sl, t, victim, vvalid | vdirty, vdirty)
    return row, way


@njit
def _read_spill(c, noc, d, sl, start, line, mask, nsec):
    tg = c.tags
    row = _row(c, sl, line)
    way = _tags.find(tg, row, line)
    valid = 0
    if way >= 0:
        _tags.touch(tg, row, way)
        valid = tg.valid[row, way]
    missing = mask & ~valid
    done = start + c.hit_latency
    c.hits[sl] += nsec - popcount(missing)
    if not missing:
        return done
    here = sl // c.per_partition
    fdone = done
    found = 0
    for p in range(c.partitions):
        if p == here or not (missing & ~found):
            continue
        o = _other(c, sl, p)
        orow = _row(c, o, line)
        ow = _tags.find(tg, orow, line)
        if ow >= 0:
            got = missing & ~found & tg.valid[orow, ow]
            if got:
                _tags.touch(tg, orow, ow)
                fstart = serve(c.port, o, start, c.service[popcount(got)])
                if fstart + c.hit_latency > fdone:
                    fdone = fstart + c.hit_latency
                found |= got
    c.far[sl] += popcount(found)
    c.hits[sl] += popcount(found)
    if way < 0:  # kept near from now on (the probe came first; the victim leaves after it)
        row, way = _near_line(c, d, sl, start, line)
    tg.valid[row, way] |= mask
    lacking = missing & ~found
    if lacking:
        nlack = popcount(lacking)
        c.misses[sl] += nlack
        # asked of the other partitions first: DRAM's reply crosses back too
        back = _dram.read(d, line * c.line_bytes, start, nlack * c.sector_bytes)
        if back > fdone:
            fdone = back
    return _noc.cross_back(noc, sl, start, fdone, popcount(missing) * c.sector_bytes)


@njit
def _home_of(c, noc, sl, line):
    """The home slice of `line` (the point of coherence, by address) for a write or an atomic sent
    through slice `sl`, and the crossing to it and back (0 when `sl` is in the home's partition)."""
    home = _noc.home_slice(noc, line)
    return home, 0 if home // c.per_partition == sl // c.per_partition else 2 * noc.cross_latency


@njit
def _claim(c, d, sl, t, line):
    """For a write or an atomic at slice `sl`: the line's way there, the other partitions' copies
    invalidated and their dirty sectors merged. Returns (row, way, the copies' valid sectors)."""
    tg = c.tags
    row, way = _near_line(c, d, sl, t, line)
    here = sl // c.per_partition
    got = 0
    for p in range(c.partitions):
        if p != here:
            o = _other(c, sl, p)
            orow = _row(c, o, line)
            ow = _tags.find(tg, orow, line)
            if ow >= 0:
                got |= tg.valid[orow, ow]
                tg.dirty[row, way] |= tg.dirty[orow, ow]
                _tags.invalidate(tg, orow, ow)
    tg.valid[row, way] |= got
    return row, way, got


@njit
def _at_home(c, noc, sl, line):
    """The home slice of `line`, for a write or an atomic arriving at slice `sl`, after dropping the
    copies other partitions keep of it (the home is the point of coherence). Returns (home, the
    crossing latency to it and back: 0 when `sl` is the home). The home's port is booked when the
    request reaches `sl` (arrival order, as its FIFO server needs); the crossing is added to the reply."""
    home = _noc.home_slice(noc, line)
    if c.partitions == 1:
        return home, 0
    tg = c.tags
    offset = home % c.per_partition
    for p in range(c.partitions):
        s = p * c.per_partition + offset
        if s != home:
            row = s * c.nsets + (line // c.slices) % c.nsets
            way = _tags.find(tg, row, line)
            if way >= 0:
                _tags.invalidate(tg, row, way)
    return home, 0 if home == sl else 2 * noc.cross_latency


@njit
def _rmw_service(c, nsec, nrmw):
    """The data port's time for `nsec` sectors of which `nrmw` are read-modified-written."""
    full = c.service[nsec - nrmw]
    rmw = nrmw * c.rmw
    fast = c.service[nsec] - full  # the same sectors moved whole
    return full + (rmw if rmw > fast else fast)


@njit
def write(c, noc, d, sl, t, line, mask, partial):
    """Write the sectors `mask` of `line` at its home slice, sent through slice `sl`; the sectors of
    `partial` are written only in part, so the slice merges them into the sector it holds (a
    read-modify-write, `l2.rmw_sector_cycles` each). Returns the cycle the write is acknowledged."""
    if c.spill:
        sl, cross = _home_of(c, noc, sl, line)
        nsec = popcount(mask)
        start = serve(c.port, sl, t, _rmw_service(c, nsec, popcount(partial & mask)))
        row, way, _ = _claim(c, d, sl, start, line)
        c.tags.valid[row, way] |= mask
        c.writes[sl] += nsec
        if c.write_back:
            c.tags.dirty[row, way] |= mask
        else:
            _dram.write(d, line * c.line_bytes, start, nsec * c.sector_bytes)
        return start + c.hit_latency + cross
    sl, cross = _at_home(c, noc, sl, line)
    nsec = popcount(mask)
    start = serve(c.port, sl, t, _rmw_service(c, nsec, popcount(partial & mask)))
    missing, row, way = _lookup(c, d, sl, start, line, mask)
    c.writes[sl] += nsec
    if c.write_back:
        c.tags.dirty[row, way] |= mask
    else:
        _dram.write(d, line * c.line_bytes, start, nsec * c.sector_bytes)
    return start + c.hit_latency + cross


@njit
def atomic(c, noc, d, sl, t, line, mask, operations):
    """Perform a warp's atomics on `line` at its home slice (sent through slice `sl`), after fetching any
    missing sectors: each sector touched is read-modified-written (`l2.rmw_sector_cycles`), and the
    `operations` lanes on the busiest address are applied one after another (`l2.atomic_op_cycles`
    apart); the port is held for the longer. Returns the cycle the old values are back at the SM."""
    if c.spill:
        sl, cross = _home_of(c, noc, sl, line)
    else:
        sl, cross = _at_home(c, noc, sl, line)
    nsec = popcount(mask)
    service = _rmw_service(c, nsec, nsec)
    serial = operations * c.atomic_op
    if serial > service:
        service = serial
    start = serve(c.port, sl, t, service)
    if c.spill:
        row, way, got = _claim(c, d, sl, start, line)
        missing = mask & ~c.tags.valid[row, way]
        c.tags.valid[row, way] |= mask
    else:
        missing, row, way = _lookup(c, d, sl, start, line, mask)
    ready = start
    if missing:
        ready = _dram.read(d, line * c.line_bytes, start, popcount(missing) * c.sector_bytes)
        ready -= c.hit_latency  # the DRAM latency already counts the trip from the SM
    c.atomics[sl] += operations
    if c.write_back:
        c.tags.dirty[row, way] |= mask
    if start > ready:
        ready = start
    return ready + service + c.hit_latency + cross


def kernel_dirty_sectors(c: L2) -> int:
    """Dirty sectors of the kernel's own lines (the foreign lines of `prefill_dirty` excluded)."""
    own = (c.tags.tag >= 0) & (c.tags.dirty != 0)
    return int(np.bitwise_count(c.tags.dirty[own]).sum())


def prefill_dirty(c: L2, dirty_fraction: float = 1.0) -> int:
    """Fill every set of every slice with `ways` lines that belong to no address (negative line
    numbers), all sectors valid, `dirty_fraction` f of the lines dirty (whole lines). The dirty lines
    are spread so that every set holds f x ways of them (within one) and, for each way, a fraction f
    of the sets has it dirty, with no pattern in the set number: way w of set t of slice i is dirty
    when frac(w f + p) >= 1 - f, the phase p = frac((i x nsets + t) x golden ratio). A kernel's first
    allocations in any subset of the sets (a power-of-two stride, one parity) therefore evict dirty
    lines at the fraction f. Allocated in way order, so the kernel's first allocations evict them in
    that order, and their write-backs spread over the memory controllers. Returns the dirty bytes
    added. Call before the kernel's first access."""
    if not 0.0 <= dirty_fraction <= 1.0:
        raise ValueError(f"dirty_fraction {dirty_fraction} is not within [0, 1]")
    tg = c.tags
    n, S, ways = c.nsets, c.slices, tg.ways
    full = (1 << (c.line_bytes // c.sector_bytes)) - 1
    f = dirty_fraction
    if c.partitions > 1 and not c.spill:
        # a partition also holds clean copies of read lines homed elsewhere, and a written line lives
        # only at its home (a write drops the copies): if every partition's SMs read the kernel's lines
        # alike, lines of which a fraction f are written fill a partition at (1 - f) read lines to f / P
        # written ones, a dirty share of (f / P) / (1 - f + f / P). Taken halfway from f: measured on
        # the sampling suite's L2-overflowing a100 kernels, f itself overstates the write-backs (+7 to
        # +9 % cycles) and the even-sharing share understates them (-5 to -10 %; docs/sampling.md).
        f = (f + f / (c.partitions * (1.0 - f) + f)) / 2
    golden = (5 ** 0.5 - 1) / 2
    i, w, k = (a.ravel() for a in np.meshgrid(np.arange(S), np.arange(ways), np.arange(n), indexing="ij"))
    cnum = w * n + k
    q = -1 - cnum  # the line's number divided by the slice count: its set is q % nsets
    row = i * n + q % n
    tg.tag[row, w] = q * S + (i + cnum) % S
    tg.valid[row, w] = full
    # allocated in (slice, way, set) order: the replacement policy sees them filled in that order
    stamps = tg.clock[0] + 1 + np.arange(row.size)
    tg.clock[0] += row.size
    tg.meta[row, w] = stamps if tg.policy != REPLACEMENT_POLICIES.index("srrip") else srrip.LONG
    if not (c.write_back and f > 0):
        return 0
    phase = ((i * n + q % n) * golden) % 1.0
    dirty = (w * f + phase) % 1.0 >= 1.0 - f
    tg.dirty[row[dirty], w[dirty]] = full
    return int(dirty.sum()) * c.line_bytes
