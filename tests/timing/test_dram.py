"""The DRAM controller alone (gpusim/timing/dram.py and policies/dram_*.py): addresses in, reply cycles
out, each expectation derived by hand in a comment.

a100 (gpusim/data/configs/a100.yaml): 10 controllers x 8 channels (HBM2 pseudo-channels) x 16 banks,
1 KB rows, 256-byte interleave; at 1410 MHz tRCD = tRP = tCL = 14 ns = 19.74 cycles, tRAS 34 ns =
47.94, tWTR 8 ns = 11.28, tRTW 4 ns = 5.64, tREFI 3900 ns = 5499, tRFC 160 ns = 225.6. One channel's
bus moves 1555 GB/s x 0.97 / 1.41 GHz / 80 = 13.372 B a cycle. dram.latency_cycles (400) is a 32-byte
read to a precharged bank: fixed + tRCD + tCL + 32 / 13.372, so fixed = 400 - 39.48 - 2.393. Refresh
adds its average to every request: W = tRFC^2 / (2 tREFI) = 225.6^2 / (2 x 5499) = 4.628 cycles, and
stretches a bank's busy time per access by 1 / (1 - 160 / 3900)."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.config import load_config
from gpusim.timing import dram as _dram
from tests.timing.helpers import FLAT_DRAM

NS = 1.41  # cycles per ns at 1410 MHz
BUS = 1555 * 0.97 / 1.41 / 80
T0 = 1000.0
W = (160 * NS) ** 2 / (2 * 3900 * NS)
STRETCH = 1 / (1 - 160 / 3900)


@pytest.fixture(scope="module")
def a100():
    return load_config("a100")


def _with(**o):
    return load_config("a100", overrides={f"dram.{k}": v for k, v in o.items()})


def _row_addr(cfg, row, column=0):
    """An address in bank 0 of channel 0 of controller 0, `row`, byte `column` of the row. Controller 0
    owns every 10th 256-byte chunk; its local address is (chunk // 10) x 256 + offset; a local page of
    1 KB, with rest = page // 8, is channel (page + rest + rest // 8) % 8, bank (rest ^ row) % 16 and row
    rest // 16. Bank 0 of row r: rest = 16 r + r % 16; channel 0: page % 8 = -(rest + rest // 8) % 8."""
    rest = 16 * row + row % 16
    page = 8 * rest + (-(rest + rest // 8)) % 8
    local = page * 1024 + column
    return (local // 256) * 256 * 10 + local % 256


def test_address_mapping(a100):
    d = _dram.make_dram(a100)
    # consecutive 256-byte chunks go round the controllers
    assert [int(_dram.locate(d, k * 256)[0]) for k in range(12)] == [*range(10), 0, 1]
    # within controller 0, 1 KB (four of its chunks) stays in one row of one bank, then the next channel
    first = [_dram.locate(d, k * 2560) for k in range(4)]
    assert len({(int(c), int(b), int(r)) for _, c, b, r in first}) == 1
    assert int(_dram.locate(d, 4 * 2560)[1]) == 1
    # the channel rotates with the bank-set: the first page of every bank-set (rest = page // 8) starts
    # on a different channel, so a stride of whole bank-sets spreads over all eight
    assert sorted(int(_dram.locate(d, k * 8 * 1024 // 256 * 2560)[1]) for k in range(8)) == list(range(8))
    for r in (0, 1, 5, 17):
        ctrl, ch, b, row = _dram.locate(d, _row_addr(a100, r))
        assert (int(ctrl), int(ch), int(b), int(row)) == (0, 0, 0, r)


def test_row_hit_miss_and_conflict_latencies(a100):
    d = _dram.make_dram(a100)
    lat = a100.dram.latency_cycles
    burst = 32 / BUS
    # precharged bank: dram.latency_cycles exactly
    assert _dram.read(d, _row_addr(a100, 0), T0, 32) == pytest.approx(T0 + W + lat)
    # the same row again, once the bank is idle: a row hit, tRCD faster
    t = T0 + 1000
    assert _dram.read(d, _row_addr(a100, 0, 64), t, 32) == pytest.approx(t + W + lat - 14 * NS)
    # another row of the same bank: precharge (tRAS has long passed), activate: tRP slower
    t = T0 + 2000
    assert _dram.read(d, _row_addr(a100, 1), t, 32) == pytest.approx(t + W + lat + 14 * NS)
    # and at once back to row 0 under FCFS-like conditions (no FR-FCFS overtaking: the switch is past):
    # the precharge waits for tRAS after row 1's activation at t + tRP
    t2 = t + 14 * NS + 14 * NS + burst + 1.0  # row 1's column done; its switch long started
    back = _dram.read(d, _row_addr(a100, 0), t2, 32)
    act1 = t + W + 14 * NS
    pre = max(t2 + W, act1 + 34 * NS)
    assert back == pytest.approx(pre + 14 * NS + 14 * NS + 14 * NS + burst + (lat - 28 * NS - burst))
    assert (d.row_misses.sum(), d.row_hits.sum(), d.row_conflicts.sum()) == (1, 1, 2)


def _stream(cfg, addresses, gap=1.0):
    d = _dram.make_dram(cfg)
    back = [_dram.read(d, a, T0 + k * gap, 128) for k, a in enumerate(addresses)]
    return max(back), d


def test_row_friendly_stream_beats_row_conflicting_one(a100):
    n = 32
    # friendly: 8 lines of one row, then the next row of the next... here: 4 rows of bank 0, 8 lines each
    friendly = [_row_addr(a100, k // 8, 128 * (k % 8)) for k in range(n)]
    # conflicting: every read a different row of bank 0
    conflicting = [_row_addr(a100, k) for k in range(n)]
    t_friendly, d1 = _stream(a100, friendly)
    t_conflict, d2 = _stream(a100, conflicting)
    assert int(d1.row_hits.sum()) == n - 4 and int(d2.row_hits.sum()) == 0
    # each conflict waits tRAS after the previous activation, then tRP: activations >= 48 ns apart
    assert t_conflict >= T0 + (n - 1) * 48 * NS
    # the friendly stream: 4 activations, 28 hits one 128-byte burst (9.57 cycles) apart, + latency
    assert t_friendly <= T0 + W + 4 * 48 * NS + n * 128 / BUS * STRETCH + a100.dram.latency_cycles + 14 * NS
    assert (t_conflict - T0) > 2 * (t_friendly - T0)


def test_fr_fcfs_beats_fcfs_on_a_mixed_stream(a100):
    # two streams interleaved into one bank: row 0 and row 1, 16 lines each, one request a cycle
    n = 32
    mixed = [_row_addr(a100, k % 2, 128 * ((k // 2) % 8)) for k in range(n)]
    t_fr, d_fr = _stream(_with(scheduler="fr_fcfs"), mixed)
    t_fc, d_fc = _stream(_with(scheduler="fcfs"), mixed)
    # FCFS switches rows on every request; FR-FCFS serves row 0's requests on the open row ahead of
    # the one booked switch, and row 1's after it
    assert int(d_fc.row_conflicts.sum()) == n - 1
    assert int(d_fr.row_conflicts.sum()) == 1
    assert (t_fr - T0) < (t_fc - T0) / 2
    # the overtaking is capped at dram.queue_depth requests per switch
    t_cap, d_cap = _stream(_with(scheduler="fr_fcfs", queue_depth=2), mixed)
    assert int(d_cap.row_conflicts.sum()) > int(d_fr.row_conflicts.sum())
    assert t_fr < t_cap


def test_write_read_turnaround_idles_the_bus():
    cfg = load_config("a100", overrides={**FLAT_DRAM, "dram.t_wtr_ns": 8, "dram.t_rtw_ns": 4})
    d = _dram.make_dram(cfg)
    bus = 1555 * 0.97 / 1.41 / 10  # one channel a controller
    s = 128 / bus
    # all to controller 0, at once: write, read, read, write, read; writes are posted (back at once)
    step = 2560
    assert _dram.write(d, 0, 0.0, 128) == 0.0
    _dram.read(d, step, 0.0, 128)
    _dram.read(d, 2 * step, 0.0, 128)
    _dram.write(d, 3 * step, 0.0, 128)
    _dram.read(d, 4 * step, 0.0, 128)
    # with write_batch_requests 1 every write is a batch: the bus turns to writes and back each time
    assert d.channel.free_at[0] == pytest.approx(5 * s + 2 * (4 + 8) * NS)


def test_writes_turn_the_bus_round_once_a_batch(a100):
    d = _dram.make_dram(a100)
    wb = a100.dram.write_batch_requests
    s = 32 / BUS
    for k in range(2 * wb):
        assert _dram.write(d, _row_addr(a100, 0, 32 * (k % 32)), T0, 32) == T0  # posted
    # two batches on channel 0: 2 wb bursts and two turnaround pairs (tRTW 4 ns + tWTR 8 ns)
    assert d.channel.free_at[0] == pytest.approx(T0 + W + 2 * wb * s + 2 * (4 + 8) * NS)
    assert int(d.bytes_written.sum()) == 32 * 2 * wb


def test_refresh_costs_its_average(a100):
    d = _dram.make_dram(a100)
    none = _dram.make_dram(_with(t_refi_ns=0, t_rfc_ns=0))
    # every read waits W more than without refresh
    assert _dram.read(d, _row_addr(a100, 0), T0, 32) - _dram.read(none, _row_addr(a100, 0), T0, 32) == \
        pytest.approx(W)
    # back-to-back row hits in one bank: each holds it its burst, stretched by 1 / (1 - tRFC / tREFI)
    for dd in (d, none):
        for k in range(1, 9):
            _dram.read(dd, _row_addr(a100, 0, 32 * k), T0, 128)
    burst = 128 / BUS
    assert d.bank_free[0] - none.bank_free[0] == pytest.approx(W + (32 / BUS + 8 * burst) * (STRETCH - 1))


# -- the data bus as a FIFO server: a DRAM without its bank model (helpers.FLAT_DRAM) -----------------

B = 32  # bytes a read: dram.latency_cycles after its bus slot starts


@pytest.fixture(scope="module")
def flat():
    return load_config("a100", overrides=FLAT_DRAM)


def _service(cfg):
    # a100: 1555 GB/s x 0.97, over 1.41 GHz and 10 controllers (one channel each) = 106.98 B/cycle
    return B / (1555 * 0.97 / 1.41 / 10)


def test_dram_back_to_back_reads_are_served_in_order(flat):
    d = _dram.make_dram(flat)
    s = _service(flat)
    lat = flat.dram.latency_cycles
    step = flat.dram.interleave_bytes * flat.dram.controllers  # all to controller 0
    n = 8
    back = [_dram.read(d, k * step, 0.0, B) for k in range(n)]
    assert back == pytest.approx([k * s + lat for k in range(n)], rel=1e-12)
    assert d.bytes_read.tolist() == [n * B] + [0] * 9
    assert d.channel.requests.tolist() == [n] + [0] * 9
    assert d.channel.queue_cycles[0] == pytest.approx(s * n * (n - 1) / 2)  # 0 + s + 2s + ...


def test_dram_controllers_serve_in_parallel(flat):
    d = _dram.make_dram(flat)
    back = [_dram.read(d, k * flat.dram.interleave_bytes, 0.0, B) for k in range(10)]
    assert back == pytest.approx([flat.dram.latency_cycles] * 10)
    assert d.channel.queue_cycles.tolist() == [0.0] * 10
    assert _dram.read(d, 10 * flat.dram.interleave_bytes, 0.0, B) == pytest.approx(
        _service(flat) + flat.dram.latency_cycles)


def _starts(cfg, arrivals):
    d = _dram.make_dram(cfg)
    back = np.array([_dram.read(d, 0, float(t), B) for t in arrivals])
    return back - cfg.dram.latency_cycles, d  # when each read's bus slot started


def _littles_law(arrivals, starts):
    """(mean number waiting, arrival rate x mean wait) over [first arrival, last start], the queue
    length sampled on a fine grid (independently of the per-request waits)."""
    arrivals, starts = np.asarray(arrivals, float), np.asarray(starts, float)
    t0, t1 = arrivals[0], starts[-1]
    grid = np.linspace(t0, t1, 200_001)[:-1] + (t1 - t0) / 400_000
    waiting = np.searchsorted(arrivals, grid, side="right") - np.searchsorted(starts, grid, side="right")
    return waiting.mean(), len(arrivals) / (t1 - t0) * (starts - arrivals).mean()


def test_dram_below_service_rate_keeps_unloaded_latency(flat):
    s = _service(flat)
    arrivals = np.arange(500) * (1.25 * s)  # 80 % load
    starts, d = _starts(flat, arrivals)
    assert starts == pytest.approx(arrivals, abs=1e-9)
    assert d.channel.queue_cycles[0] == 0.0


def test_dram_above_service_rate_queue_grows_linearly(flat):
    s = _service(flat)
    gap = 0.8 * s  # 125 % load
    n = 500
    arrivals = np.arange(n) * gap
    starts, d = _starts(flat, arrivals)
    waits = starts - arrivals
    assert waits == pytest.approx(np.arange(n) * (s - gap), rel=1e-9, abs=1e-9)
    mean_queue, lam_w = _littles_law(arrivals, starts)
    assert mean_queue == pytest.approx(lam_w, rel=0.01)
    assert mean_queue == pytest.approx((n - 1) * (1 - gap / s) / 2, rel=0.02)


def test_dram_littles_law_under_random_load(flat):
    s = _service(flat)
    rng = np.random.default_rng(7)
    arrivals = np.cumsum(rng.exponential(s / 0.9, size=4000))  # Poisson arrivals, 90 % load
    starts, _ = _starts(flat, arrivals)
    assert (starts >= arrivals - 1e-9).all() and (np.diff(starts) >= s - 1e-9).all()
    mean_queue, lam_w = _littles_law(arrivals, starts)
    assert mean_queue > 1.0
    assert mean_queue == pytest.approx(lam_w, rel=0.01)


def test_dram_queue_with_the_bank_model_obeys_littles_law(a100):
    # the full model, row hits in bank 0's row 0 at 90 % of one channel's bus (94 % of the bank's
    # refresh-stretched time): the bank is the server
    s = 32 / BUS
    rng = np.random.default_rng(3)
    arrivals = T0 + np.cumsum(rng.exponential(s / 0.9, size=2000))
    d = _dram.make_dram(a100)
    back = np.array([_dram.read(d, _row_addr(a100, 0, 32 * (k % 32)), float(t), 32) for k, t in enumerate(arrivals)])
    # a row hit's data: bus slot end (start + s) or column + tCL + burst, whichever later, + fixed
    starts = back - W - (a100.dram.latency_cycles - 14 * NS)  # row hits: latency - tRCD after the start
    assert (starts >= arrivals - 1e-6).all()
    mean_queue, lam_w = _littles_law(arrivals, starts)
    assert mean_queue == pytest.approx(lam_w, rel=0.02)
