"""The warps' instruction streams as the engine reads them: one window per warp (a "handle"), in a
pool that the feeder (gpusim/timing/feeder.py) appends to as the functional executor runs further,
compacts, and grows. Handle `h`'s instructions not yet issued are pc[pos[h]:end[h]]; `done[h]`: its
stream has no more. An instruction's memory access, if any, is `acc[i]` (an index into the access
plans: lo/hi, and for global accesses their lines lines[lo:hi] with sector masks and atomic depths).
`flag[i]` marks an instruction at which the warp's set of active threads changed (not by an exit): a
divergent branch's first side, the switch to its other side, the reconvergence.

The engine needs a warp's next instruction and the one after it (to know, on issue, whether the warp
retires); a warp that has fewer left and more to come is "hungry", and the engine stops at its next
safe point for the feeder to pull more."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.timing.jit import njit, struct_type


class Streams(NamedTuple):
    pos: np.ndarray  # per handle: pool index of its next instruction
    end: np.ndarray  # per handle: end of its window
    done: np.ndarray  # per handle (bool): nothing more will come
    hungry_flag: np.ndarray  # per handle (bool): listed in `hungry`
    pc: np.ndarray  # pool: the instruction's pc (int32)
    acc: np.ndarray  # pool: its access plan, or -1 (int32)
    flag: np.ndarray  # pool (bool): the warp's active threads differ from its previous instruction's
    a_lo: np.ndarray  # per access plan (int32)
    a_hi: np.ndarray  # (int32)
    lines: np.ndarray
    masks: np.ndarray
    ops: np.ndarray
    hungry: np.ndarray  # handles that need more instructions (count in nhungry[0])
    nhungry: np.ndarray


struct_type(Streams)


@njit
def check_hunger(st, h):
    """List handle `h` as hungry if it holds fewer than two instructions and more will come."""
    if st.end[h] - st.pos[h] < 2 and not st.done[h] and not st.hungry_flag[h]:
        st.hungry_flag[h] = True
        st.hungry[st.nhungry[0]] = h
        st.nhungry[0] += 1


@njit
def advance(st, h):
    """Handle `h`'s next instruction becomes its current one."""
    st.pos[h] += 1
