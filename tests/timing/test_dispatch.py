"""The GigaThread engine: the first wave fills every SM up to occupancy; after that each block starts
`block_dispatch_cycles` after a block retires on the same SM — also when the SM has run ahead of SimPy's
clock (short blocks: here most blocks of the grid have no elements and exit at once)."""

from __future__ import annotations

import gpusim


def test_each_later_block_starts_dispatch_cycles_after_one_retires_on_its_sm():
    cfg = gpusim.load_config("gtx980")
    r = gpusim.simulate("stream_copy", cfg, n=4096, grid=512)
    d = cfg.launch.block_dispatch_cycles
    by_sm: dict[int, list[dict]] = {}
    for row in r.timeline:
        by_sm.setdefault(row["sm"], []).append(row)
    later = 0
    for rows in by_sm.values():
        ends = sorted(x["end"] for x in rows)
        for x in rows:
            if x["start"] != d:  # not the first wave
                later += 1
                assert x["start"] - d in ends, (x, ends)
    assert later > 0
    # 32 blocks per SM, 16 of them at once: two short waves, not hundreds of cycles of idle slots
    assert r.kernel["cycles"] < 1000
