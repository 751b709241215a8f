"""The timing model's vocabulary, in one place: execution-unit classes (a sub-partition's issue
ports), instruction kinds, warp states in Nsight Compute's names, and the names of the policies a
config may choose. The config schema's choices, the CLI's choices, the timing model's tables and the
docs are all generated from these tuples; nothing else spells them out."""

from __future__ import annotations

# Issue ports of a sub-partition, one per execution-unit class in the config (`units.<name>`).
PORTS = ("fp32", "int", "fp64", "sfu", "ldst", "branch", "sync", "tensor")
PORT = {name: i for i, name in enumerate(PORTS)}

# Instruction kinds the SM treats differently on issue.
# (cp.async copies are global loads; cp_commit / cp_wait: cp.async.commit_group and wait_group / wait_all)
KINDS = ("alu", "global_ld", "global_st", "global_atom", "shared", "shfl", "branch", "barrier", "exit",
         "cp_commit", "cp_wait")
KIND = {name: i for i, name in enumerate(KINDS)}

# Warp states, in Nsight Compute's names (smsp__pcsamp_warps_issue_stalled_*): every resident
# warp-cycle is accounted to exactly one of them.
WARP_STATES = ("selected", "not_selected", "long_scoreboard", "short_scoreboard", "wait",
               "math_pipe_throttle", "mio_throttle", "lg_throttle", "barrier", "branch_resolving",
               "no_instruction", "drain")
STATE = {name: i for i, name in enumerate(WARP_STATES)}

# Policies, chosen by name in YAML. Each name is one file under gpusim/timing/policies/ (the
# warp-scheduler policies `scheduler_<name>.py`, the replacement policies `replacement_<name>.py`);
# the timing model dispatches on the name's index here.
SCHEDULER_POLICIES = ("lrr", "gto", "two_level", "oldest_first")
SCHEDULER_POLICY_DOCS = {
    "lrr": "loose round robin: the first eligible warp after the one issued last, in age order",
    "gto": "greedy then oldest: the warp issued last while it stays eligible, else the oldest",
    "two_level": "two-level: round robin among an active set of `active_warps_two_level` warps; a "
                 "warp waiting on global memory or a barrier leaves the set (Narasiman et al., MICRO 2011)",
    "oldest_first": "strict oldest first: always the oldest eligible warp, with no greedy preference "
                    "(the baseline of Rogers et al., MICRO 2012)",
}
REPLACEMENT_POLICIES = ("lru", "fifo", "srrip")
REPLACEMENT_POLICY_DOCS = {
    "lru": "least recently used: a hit makes the line the most recent; the least recent is evicted",
    "fifo": "first in, first out: the line allocated earliest is evicted; hits change nothing",
    "srrip": "static re-reference interval prediction with 2-bit counters (Jaleel et al., ISCA 2010): "
             "lines enter with a long re-reference prediction, a hit makes it near",
}
DRAM_SCHEDULERS = ("fcfs", "fr_fcfs")
DRAM_SCHEDULER_DOCS = {
    "fcfs": "first come, first served: each bank serves its requests in arrival order",
    "fr_fcfs": "first ready, first come first served (Rixner et al., ISCA 2000): a request to a bank's open "
               "row overtakes an older one that must switch rows (at most `queue_depth` in a row)",
}

# Opcode names a config's `opcodes:` table may list (per-opcode latency and throughput). THE opcode table
# is `gpusim/isa/opcodes.py`, a layer above: it checks on import that its opcodes are exactly these.
OPCODE_NAMES = ("mov", "cvt", "cvta", "add", "add3", "sub", "mul", "mad", "fma", "fadd", "fmul", "div", "rem", "min",
                "max", "abs", "neg", "copysign", "testp", "and", "or", "xor", "not", "shl", "shr", "popc", "setp",
                "selp", "rcp", "sqrt", "rsqrt", "sin", "cos", "ex2", "lg2", "ld", "st", "atom", "red", "cp", "mma",
                "ldmatrix", "shfl", "vote", "bra", "exit", "bar", "membar", "fence")
