"""Memory controllers, their channels and banks: an address-aware DRAM model.

Address mapping (`locate`). Addresses are interleaved over the `dram.controllers` every
`dram.interleave_bytes`. Within a controller the chunks it owns are contiguous, and that local
address splits, low bits first, into the column within a row (`dram.row_bytes`), the channel of the
controller (`dram.channels_per_controller`: HBM pseudo-channels, GDDR5 32-bit channels), the bank
(`dram.banks_per_channel`) and the row. The bank number is XORed with the row's low bits (permutation-
based interleaving, Zhang et al., MICRO 2000), so that addresses one bank-set apart fall in different
banks rather than conflicting in one. A streaming access therefore reads a whole row of one bank
(row hits), then moves to the next channel, then to the next bank.

Banks (`_column`). Each bank keeps one row open (open-page policy). A request for the open row is a
row hit: its column command issues when the bank is free. A request to a closed bank activates its
row first (tRCD); one to a bank with another row open must also close that row — not before tRAS
after it was opened — and precharge (tRP), a row conflict. The bank is then busy for the request's
burst. Which request a bank serves first is the scheduling policy's (`dram.scheduler`,
gpusim/timing/policies/dram_*.py): FCFS, or FR-FCFS, where a request for the open row overtakes an
older row switch.

Data bus. Each channel's bus moves `bandwidth_gbps * efficiency / (controllers x channels)` bytes a
cycle; its slots are handed out in arrival order (a FIFO server, fifo.py), and a request's data is
back at the later of its bus slot's end and its bank's column time + tCL + burst: bandwidth is the
bus's, latency the bank's, and banks overlap. When the bus changes direction it idles tWTR (write to
read) or tRTW (read to write). Writes (the L2's write-backs) are posted: the controller buffers them,
`dram.write_batch_requests` a channel, and drains a full buffer at once, so the bus turns around once
per batch, as a real controller's write queue does.

Refresh (`_refresh`). Every tREFI each bank is refreshed for tRFC: its row closes and nothing starts
in it in that window. The banks' refreshes are staggered over the interval (per-bank refresh, as HBM
controllers do), so a channel never stops as a whole.

Latency. `dram.latency_cycles` is the unloaded load-to-use latency of a 32-byte read that finds its
bank precharged (tRCD + tCL + a 32-byte burst, plus the fixed trip from the SM through the L2 and the
controller); a row hit is tRCD faster, a row conflict tRP (or more, waiting for tRAS) slower. Timings
are given in ns in the config and converted to SM cycles once, in `make_dram`."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.config.vocab import DRAM_SCHEDULERS
from gpusim.timing.fifo import Fifos, make_fifos, serve
from gpusim.timing.jit import njit, struct_type
from gpusim.timing.policies import dram_scheduler

CLOSED = -1  # a bank with no open row


class Dram(NamedTuple):
    channel: Fifos  # per channel (controller * channels_per_controller + channel): its data bus
    open_row: np.ndarray  # int64 per bank (channel * banks + bank): the row it has open, CLOSED
    bank_free: np.ndarray  # float64: when the bank may take its next column command for the open row
    act_at: np.ndarray  # float64: when the open row was activated (tRAS counts from it)
    prev_row: np.ndarray  # int64: the row open before the latest booked row switch
    prev_free: np.ndarray  # float64: when that row's last column was done
    prev_until: np.ndarray  # float64: when the switch's precharge starts
    overtaken: np.ndarray  # int64: requests that overtook that switch (FR-FCFS)
    last_write: np.ndarray  # bool per channel: its bus last moved write data
    refresh_k: np.ndarray  # int64 per bank: the last refresh interval it has seen
    wbuf_bank: np.ndarray  # (channels, write_batch) int64: posted writes' banks
    wbuf_row: np.ndarray  # (channels, write_batch) int64: and rows
    wbuf_bytes: np.ndarray  # (channels, write_batch) int64: and sizes
    wcount: np.ndarray  # int64 per channel: posted writes not yet drained
    row_hits: np.ndarray  # int64 per channel: requests (reads and writes)
    row_misses: np.ndarray  # bank closed: activate
    row_conflicts: np.ndarray  # another row open: precharge and activate
    bytes_read: np.ndarray  # int64 per controller
    bytes_written: np.ndarray
    interleave: int
    controllers: int
    per_controller: int  # channels of one controller
    banks: int  # banks of one channel
    total_banks: int
    row_bytes: int
    bytes_per_cycle: float  # one channel's bus
    fixed: float  # the read latency outside the DRAM array (latency_cycles - tRCD - tCL - a 32 B burst)
    t_rcd: float  # DRAM timings, SM cycles
    t_rp: float
    t_ras: float
    t_cl: float
    t_wtr: float
    t_rtw: float
    t_refi: float
    t_rfc: float
    policy: int  # index in vocab.DRAM_SCHEDULERS
    cap: int  # FR-FCFS: most requests overtaking one row switch (dram.queue_depth)
    write_batch: int
    latency: int
    peak_bytes_per_cycle: float


struct_type(Dram)


def cycles_of_ns(cfg: Config, ns: float) -> float:
    """A DRAM timing in ns as SM cycles: the one place the model converts them."""
    return ns * cfg.chip.clock_mhz / 1000.0


def fixed_latency(cfg: Config) -> float:
    """The part of `dram.latency_cycles` outside the DRAM array: the trip from the SM through the L2
    and the controller, and back (negative when the configured timings exceed the latency)."""
    d = cfg.dram
    bus = d.bandwidth_gbps * d.efficiency / (cfg.chip.clock_mhz / 1000.0) / (d.controllers * d.channels_per_controller)
    return d.latency_cycles - cycles_of_ns(cfg, d.t_rcd_ns + d.t_cl_ns) - 32 / bus


def make_dram(cfg: Config) -> Dram:
    d = cfg.dram
    clock_ghz = cfg.chip.clock_mhz / 1000.0
    nch = d.controllers * d.channels_per_controller
    nb = nch * d.banks_per_channel
    per_cycle = d.bandwidth_gbps * d.efficiency / clock_ghz / nch
    wb = d.write_batch_requests
    ns = lambda x: cycles_of_ns(cfg, x)  # noqa: E731
    f = lambda n, v: np.full(n, v, dtype=np.float64)  # noqa: E731
    i = lambda n, v=0: np.full(n, v, dtype=np.int64)  # noqa: E731
    return Dram(make_fifos(nch), i(nb, CLOSED), f(nb, 0.0), f(nb, -1e18), i(nb, CLOSED), f(nb, 0.0), f(nb, 0.0),
                i(nb), np.zeros(nch, np.bool_), i(nb, -1), np.zeros((nch, wb), np.int64),
                np.zeros((nch, wb), np.int64), np.zeros((nch, wb), np.int64), i(nch), i(nch), i(nch), i(nch),
                i(d.controllers), i(d.controllers), d.interleave_bytes, d.controllers, d.channels_per_controller,
                d.banks_per_channel, nb, d.row_bytes, per_cycle, max(0.0, fixed_latency(cfg)), ns(d.t_rcd_ns),
                ns(d.t_rp_ns), ns(d.t_ras_ns), ns(d.t_cl_ns), ns(d.t_wtr_ns), ns(d.t_rtw_ns), ns(d.t_refi_ns),
                ns(d.t_rfc_ns), DRAM_SCHEDULERS.index(d.scheduler), d.queue_depth, wb, d.latency_cycles,
                d.bandwidth_gbps / clock_ghz)


@njit
def controller_of(d, address):
    return (address // d.interleave) % d.controllers


@njit
def locate(d, address):
    """(controller, channel, bank, row) of `address`: the channel and bank as indices over the chip."""
    chunk = address // d.interleave
    ctrl = chunk % d.controllers
    local = (chunk // d.controllers) * d.interleave + address % d.interleave
    page = local // d.row_bytes
    ch = ctrl * d.per_controller + page % d.per_controller
    rest = page // d.per_controller
    row = rest // d.banks
    bank = (rest ^ row) % d.banks
    return ctrl, ch, ch * d.banks + bank, row


@njit
def _refresh(d, b, t):
    """Apply bank `b`'s refreshes up to `t` (each closes its row); returns when a request arriving at
    `t` may start (after a refresh in progress)."""
    if d.t_refi <= 0.0:
        return t
    offset = b * d.t_refi / d.total_banks  # the banks' refreshes staggered over the interval
    if t < offset:
        return t
    k = int((t - offset) // d.t_refi)
    end = offset + k * d.t_refi + d.t_rfc
    if k > d.refresh_k[b]:
        d.refresh_k[b] = k
        d.open_row[b] = CLOSED
        d.prev_row[b] = CLOSED
        if d.bank_free[b] < end:
            d.bank_free[b] = end
    return end if t < end else t


@njit
def _column(d, ch, b, row, t, burst):
    """Book the column access of a request for `row` in bank `b` arriving at `t`, its burst `burst`
    cycles long; returns when its column command issues."""
    if d.open_row[b] == row:
        col = d.bank_free[b] if d.bank_free[b] > t else t
        d.row_hits[ch] += 1
    elif dram_scheduler.may_overtake(d.policy, d.prev_row[b], d.prev_until[b], d.overtaken[b], row, t, d.cap):
        # served on the row still open, ahead of the booked switch, which it pushes back
        col = d.prev_free[b] if d.prev_free[b] > t else t
        d.prev_free[b] = col + burst
        push = col + burst - d.prev_until[b]
        if push > 0:
            d.prev_until[b] += push
            d.act_at[b] += push
            d.bank_free[b] += push
        d.overtaken[b] += 1
        d.row_hits[ch] += 1
        return col
    elif d.open_row[b] == CLOSED:
        act = d.bank_free[b] if d.bank_free[b] > t else t
        col = act + d.t_rcd
        d.open_row[b] = row
        d.act_at[b] = act
        d.row_misses[ch] += 1
    else:
        pre = d.bank_free[b] if d.bank_free[b] > t else t
        if d.act_at[b] + d.t_ras > pre:
            pre = d.act_at[b] + d.t_ras
        d.prev_row[b] = d.open_row[b]
        d.prev_free[b] = d.bank_free[b]
        d.prev_until[b] = pre
        d.overtaken[b] = 0
        act = pre + d.t_rp
        col = act + d.t_rcd
        d.open_row[b] = row
        d.act_at[b] = act
        d.row_conflicts[ch] += 1
    d.bank_free[b] = col + burst
    return col


@njit
def _bus(d, ch, t, burst, is_write):
    """Book a burst on channel `ch`'s data bus for a request that arrived at `t` (slots in arrival
    order; a change of direction idles the bus for the turnaround first); returns the slot's end."""
    if is_write != d.last_write[ch]:
        floor = d.channel.free_at[ch] + (d.t_rtw if is_write else d.t_wtr)
        if floor > t:
            t = floor
        d.last_write[ch] = is_write
    return serve(d.channel, ch, t, burst) + burst


@njit
def read(d, address, t, nbytes):
    """A read of `nbytes` at `address` sent at `t`: the cycle its data is back at the SM."""
    ctrl, ch, b, row = locate(d, address)
    t = _refresh(d, b, t)
    burst = nbytes / d.bytes_per_cycle
    col = _column(d, ch, b, row, t, burst)
    slot = _bus(d, ch, t, burst, False)
    data = col + d.t_cl + burst
    d.bytes_read[ctrl] += nbytes
    return (slot if slot > data else data) + d.fixed


@njit
def write(d, address, t, nbytes):
    """A write-back of `nbytes` at `address` at `t`: posted in its channel's write buffer (returns
    `t`, when the controller has taken it); a full buffer is drained to the banks at once."""
    ctrl, ch, b, row = locate(d, address)
    d.bytes_written[ctrl] += nbytes
    n = d.wcount[ch]
    d.wbuf_bank[ch, n] = b
    d.wbuf_row[ch, n] = row
    d.wbuf_bytes[ch, n] = nbytes
    d.wcount[ch] = n + 1
    if n + 1 >= d.write_batch:
        for i in range(n + 1):
            wb = d.wbuf_bank[ch, i]
            t0 = _refresh(d, wb, t)
            burst = d.wbuf_bytes[ch, i] / d.bytes_per_cycle
            _column(d, ch, wb, d.wbuf_row[ch, i], t0, burst)
            _bus(d, ch, t0, burst, True)
        d.wcount[ch] = 0
    return t
