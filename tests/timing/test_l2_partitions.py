"""The L2's two partitions and the link between them (gpusim/timing/l2.py, interconnect.py), on the
a100 config: 80 slices in two partitions of 40; 7 GPCs of 16 SMs, GPCs 0-3 near partition 0 and 4-6
near partition 1 (GPC g -> g x 2 // 7), so SM 0 is near partition 0 and SM 107 near partition 1. A near
hit is l2.hit_latency_cycles (200); a line whose home is the far partition crosses the link both ways:
200 + 2 x interconnect.partition_latency_cycles (105) = 410 (its 128 bytes take the link into the
requesting partition 0.05 cycles, within the hit's latency). Requests 10,000 cycles apart queue nowhere."""

from __future__ import annotations

import pytest

from gpusim.config import load_config
from gpusim.timing import dram as _dram
from gpusim.timing import interconnect as _noc
from gpusim.timing import l2 as _l2

ALL = 0b1111  # a whole 128-byte line


@pytest.fixture
def chip():
    cfg = load_config("a100")
    return cfg, _l2.make_l2(cfg), _noc.make_interconnect(cfg), _dram.make_dram(cfg)


def _line_homed_in(noc, partition):
    return next(x for x in range(1000, 100000) if _noc.home_slice(noc, x) // noc.per_partition == partition)


def _read(chip, sm, line, t):
    _, l2, noc, d = chip
    return _l2.read(l2, noc, d, _noc.slice_of(noc, sm, line), t, line, ALL) - t


def test_sms_are_near_their_gpcs_partition(chip):
    cfg, _, noc, _ = chip
    parts = _noc.sm_partitions(cfg)
    assert parts[0] == 0 and parts[63] == 0 and parts[64] == 1 and parts[107] == 1
    assert (parts == 0).sum() == 64 and (parts == 1).sum() == 44
    # a request goes to the near partition's slice in the home slice's place
    line = _line_homed_in(noc, 1)
    home = _noc.home_slice(noc, line)
    assert _noc.slice_of(noc, 107, line) == home
    assert _noc.slice_of(noc, 0, line) == home - 40


def test_near_and_far_hits_take_the_configured_latencies(chip):
    cfg, l2, noc, _ = chip
    near, cross = cfg.l2.hit_latency_cycles, cfg.interconnect.partition_latency_cycles
    line = _line_homed_in(noc, 1)
    _read(chip, 107, line, 10_000.0)  # SM 107 (near the home) brings the line in from DRAM
    assert _read(chip, 107, line, 20_000.0) == near  # a near hit at its home
    # SM 0: its partition lacks the line, the far home has it
    assert _read(chip, 0, line, 30_000.0) == pytest.approx(near + 2 * cross)
    assert int(l2.far.sum()) == 4
    # the near partition kept a copy: now a near hit
    assert _read(chip, 0, line, 40_000.0) == near
    # a line homed near SM 0 is a near hit for it from the start (after DRAM)
    mine = _line_homed_in(noc, 0)
    _read(chip, 0, mine, 50_000.0)
    assert _read(chip, 0, mine, 60_000.0) == near
    assert int(l2.far.sum()) == 4


def test_a_write_at_the_home_drops_the_far_copy(chip):
    cfg, l2, noc, d = chip
    near, cross = cfg.l2.hit_latency_cycles, cfg.interconnect.partition_latency_cycles
    line = _line_homed_in(noc, 1)
    _read(chip, 107, line, 10_000.0)
    _read(chip, 0, line, 20_000.0)  # partition 0 now has a copy
    assert _read(chip, 0, line, 30_000.0) == near
    # SM 0 writes: the write goes to the home (crossing both ways), which drops partition 0's copy
    t = 40_000.0
    ack = _l2.write(l2, noc, d, _noc.slice_of(noc, 0, line), t, line, 0b0001, 0) - t
    assert ack == near + 2 * cross
    assert _read(chip, 0, line, 50_000.0) == pytest.approx(near + 2 * cross)


def test_one_partition_routes_every_line_to_its_home():
    cfg = load_config("gtx980")
    noc = _noc.make_interconnect(cfg)
    assert cfg.l2.partitions == 1
    for line in range(0, 5000, 37):
        assert _noc.slice_of(noc, 0, line) == _noc.slice_of(noc, 15, line) == _noc.home_slice(noc, line)


def test_partitions_must_split_the_slices_evenly():
    from gpusim.errors import ConfigError

    with pytest.raises(ConfigError, match="80 slices do not split evenly into 3 partitions"):
        load_config("a100", overrides={"l2.partitions": 3})
    with pytest.raises(ConfigError, match="partition 2 does not exist"):
        load_config("a100", overrides={"interconnect.gpc_partitions": [0, 0, 0, 1, 1, 1, 2]})
