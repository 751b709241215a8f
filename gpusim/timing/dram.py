"""Memory controllers, their channels and banks: an address-aware DRAM model.

Address mapping (`locate`). Addresses are interleaved over the `dram.controllers` every
`dram.interleave_bytes`. Within a controller the chunks it owns are contiguous, and that local
address splits, low bits first, into the column within a row (`dram.row_bytes`), the channel of the
controller (`dram.channels_per_controller`: HBM pseudo-channels, GDDR5 32-bit channels), the bank
(`dram.banks_per_channel`) and the row. The channel digit is rotated by the higher digits (a hashed
channel select), so that a stride of whole bank-sets (a transpose's tiles written back) spreads over the
channels instead of camping on one; the bank number is XORed with the row's low bits (permutation-
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
bus's, latency the bank's, and banks overlap. Writes (the L2's write-backs) are posted — the L2 does
not wait for them — and a controller groups them, `dram.write_batch_requests` at a time a channel, as
its write queue does: the bus turns from reads to writes and back once a batch, idling tRTW + tWTR,
charged to the batch's first write.

Refresh, by its average. Every tREFI each bank is busy for tRFC (per-bank refresh, staggered over the
banks, as HBM controllers do, so a channel never stops as a whole). The model charges what that costs
on average rather than where each refresh falls: a request arriving at a random time meets its bank's
refresh with probability tRFC / tREFI and then waits half of it, so every request waits
tRFC^2 / (2 tREFI) more (a100: 4.6 cycles); and a bank can work only 1 - tRFC / tREFI of the time, so
its busy time per access is stretched by 1 / (1 - tRFC / tREFI). A phase-exact refresh would make a
short run's cycles depend on which requests happen to meet a refresh window — hundreds of cycles for
a few requests — which the sampled simulation's extrapolation (docs/sampling.md) cannot tell from a
trend. Rows closed by refresh are not modelled.

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
    wcount: np.ndarray  # int64 per channel: writes of its current batch so far
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
    refresh_wait: float  # the average wait for a refresh: tRFC^2 / (2 tREFI)
    refresh_stretch: float  # a bank's busy time per access, stretched: 1 / (1 - tRFC / tREFI)
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
    ns = lambda x: cycles_of_ns(cfg, x)  # noqa: E731
    share = d.t_rfc_ns / d.t_refi_ns if d.t_refi_ns > 0 else 0.0
    wait = share * ns(d.t_rfc_ns) / 2
    stretch = 1.0 / (1.0 - share)
    f = lambda n, v: np.full(n, v, dtype=np.float64)  # noqa: E731
    i = lambda n, v=0: np.full(n, v, dtype=np.int64)  # noqa: E731
    return Dram(make_fifos(nch), i(nb, CLOSED), f(nb, 0.0), f(nb, -1e18), i(nb, CLOSED), f(nb, 0.0), f(nb, 0.0),
                i(nb), i(nch), i(nch), i(nch), i(nch),
                i(d.controllers), i(d.controllers), d.interleave_bytes, d.controllers, d.channels_per_controller,
                d.banks_per_channel, nb, d.row_bytes, per_cycle, max(0.0, fixed_latency(cfg)), ns(d.t_rcd_ns),
                ns(d.t_rp_ns), ns(d.t_ras_ns), ns(d.t_cl_ns), ns(d.t_wtr_ns), ns(d.t_rtw_ns), wait,
                stretch, DRAM_SCHEDULERS.index(d.scheduler), d.queue_depth, d.write_batch_requests, d.latency_cycles,
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
    rest = page // d.per_controller
    # the channel is the page's low digit rotated by the higher ones (a hashed channel select): a
    # stride of whole bank-sets, as a transpose's or a tiled kernel's rows are, spreads over every
    # channel instead of camping on one
    ch = ctrl * d.per_controller + (page + rest + rest // d.per_controller) % d.per_controller
    row = rest // d.banks
    bank = (rest ^ row) % d.banks
    return ctrl, ch, ch * d.banks + bank, row


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
        busy = burst * d.refresh_stretch
        d.prev_free[b] = col + busy
        push = col + busy - d.prev_until[b]
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
    d.bank_free[b] = col + burst * d.refresh_stretch
    return col


@njit
def read(d, address, t, nbytes):
    """A read of `nbytes` at `address` sent at `t`: the cycle its data is back at the SM."""
    ctrl, ch, b, row = locate(d, address)
    t += d.refresh_wait
    burst = nbytes / d.bytes_per_cycle
    col = _column(d, ch, b, row, t, burst)
    slot = serve(d.channel, ch, t, burst) + burst  # the bus's slots in arrival order
    data = col + d.t_cl + burst
    d.bytes_read[ctrl] += nbytes
    return (slot if slot > data else data) + d.fixed


@njit
def write(d, address, t, nbytes):
    """A write-back of `nbytes` at `address` at `t`, posted: returns `t` (the L2 does not wait). Its
    bank and bus time are booked now; the first write of each batch of `write_batch_requests` on its
    channel also holds the bus for the turnarounds to writes and back (tRTW + tWTR)."""
    ctrl, ch, b, row = locate(d, address)
    d.bytes_written[ctrl] += nbytes
    t0 = t + d.refresh_wait
    burst = nbytes / d.bytes_per_cycle
    _column(d, ch, b, row, t0, burst)
    n = d.wcount[ch]
    serve(d.channel, ch, t0, burst + (d.t_rtw + d.t_wtr if n == 0 else 0.0))
    d.wcount[ch] = n + 1 if n + 1 < d.write_batch else 0
    return t
