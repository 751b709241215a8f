"""Dispatch to the DRAM request scheduling policy chosen in YAML (`dram.scheduler`: its index in
`gpusim.config.vocab.DRAM_SCHEDULERS`)."""

from gpusim.config.vocab import DRAM_SCHEDULERS
from gpusim.timing.jit import njit
from gpusim.timing.policies import dram_fcfs as fcfs
from gpusim.timing.policies import dram_fr_fcfs as fr_fcfs

FCFS, FR_FCFS = (DRAM_SCHEDULERS.index(n) for n in ("fcfs", "fr_fcfs"))


@njit
def may_overtake(policy, prev_row, prev_until, overtaken, row, t, cap):
    if policy == FR_FCFS:
        return fr_fcfs.may_overtake(prev_row, prev_until, overtaken, row, t, cap)
    return fcfs.may_overtake(prev_row, prev_until, overtaken, row, t, cap)
