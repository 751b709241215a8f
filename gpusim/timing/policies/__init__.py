"""Policies, one file each, chosen by name in YAML (the names are in `gpusim.config.vocab`):

- warp schedulers `scheduler_<name>.py`: `pick(...)` chooses among a sub-partition's eligible warps,
  `on_long_latency(...)` hears of a warp that waits on global memory or a barrier;
- cache replacement `replacement_<name>.py`: `on_hit`, `on_fill` and `victim` over one cache set's
  per-way metadata.

`scheduler.py` and `replacement.py` here dispatch on the policy's index in the vocabulary; the
compiled engine calls only those two."""
