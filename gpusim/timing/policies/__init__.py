"""Policies, one file each, chosen by name in YAML (the names are in `gpusim.config.vocab`):

- warp schedulers `scheduler_<name>.py`: `pick(...)` chooses among a sub-partition's eligible warps,
  `on_long_latency(...)` hears of a warp that waits on global memory or a barrier;
- cache replacement `replacement_<name>.py`: `on_hit`, `on_fill` and `victim` over one cache set's
  per-way metadata;
- DRAM request schedulers `dram_<name>.py`: `may_overtake(...)` says whether a request may be served
  on a bank's open row ahead of an older request's row switch.

`scheduler.py`, `replacement.py` and `dram_scheduler.py` here dispatch on the policy's index in the
vocabulary; the compiled engine calls only those."""
