"""Shared memory: a scratchpad of `banks` banks, each `bank_width_bytes` wide. Lanes of a warp that
touch distinct words of one bank are served in separate wavefronts (a bank conflict); lanes reading
the same word share it (broadcast); an atomic's lanes on one address are combined into one update (the
SASS's ATOMS.POPC.INC / ATOMS.ADD), its distinct addresses in one bank take a pass each. A 128-bit access is
served `shared_memory.wide_access_lanes` lanes at a time (a half-warp on the A100 and H200), each group's
wavefronts its busiest bank's words, a broadcast shared only within a group. The SM's
shared-memory pipe serves one wavefront per cycle; a
conflicted access's own wavefronts (its replays) are `shared_memory.replay_cycles` apart, so a lone
warp's n-way conflict costs latency + replay x (n - 1) while many warps still get one wavefront a cycle."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpusim.config import Config
from gpusim.timing.jit import njit, struct_type


class SharedMemoryPipes(NamedTuple):
    """Every SM's shared-memory pipe: when it takes its next wavefront, and its counters."""

    free_at: np.ndarray  # int64 per SM
    requests: np.ndarray
    wavefronts: np.ndarray
    ideal_wavefronts: np.ndarray
    latency: int
    replay: int  # cycles each further wavefront of one access adds to its latency
    atomic_replay: int  # pipe cycles of each further pass of an atomic (a read-modify-write of a bank)


struct_type(SharedMemoryPipes)


def make_shared_memory(cfg: Config, sms: int) -> SharedMemoryPipes:
    z = lambda: np.zeros(sms, dtype=np.int64)  # noqa: E731
    sm_ = cfg.shared_memory
    return SharedMemoryPipes(z(), z(), z(), z(), sm_.latency_cycles, sm_.replay_cycles, sm_.atomic_replay_cycles)


@njit
def access(m, sm, t, wavefronts, ideal, atomic=False):
    """Serve one warp access at cycle `t` on SM `sm`; returns the cycle its data is usable. The pipe
    takes one wavefront a cycle; one access's replays follow each other `replay` cycles apart. An
    atomic's passes after the first each hold the pipe `atomic_replay` cycles (a read-modify-write of
    the bank its conflicting addresses share)."""
    start = m.free_at[sm] if m.free_at[sm] > t else t
    step = m.atomic_replay if atomic else 1
    m.free_at[sm] = start + 1 + step * (wavefronts - 1)
    m.requests[sm] += 1
    m.wavefronts[sm] += wavefronts
    m.ideal_wavefronts[sm] += ideal
    gap = m.replay if m.replay > step else step
    return start + m.latency + gap * (wavefronts - 1)


class BankMap:
    """How a warp's shared-memory addresses fall on the banks (the LD/ST address stage uses it)."""

    def __init__(self, cfg: Config):
        spec = cfg.shared_memory
        self.banks = spec.banks
        self.bank_width = spec.bank_width_bytes
        self.wide_lanes = spec.wide_access_lanes  # a 128-bit access: lanes served together (0: the warp)

    def wavefronts_of(self, rows: np.ndarray, width: int) -> tuple[list[int], list[int]]:
        """`wavefront_arrays` as lists."""
        wave, ideal = self.wavefront_arrays(rows, width)
        return wave.tolist(), ideal.tolist()

    def wavefront_arrays(self, rows: np.ndarray, width: int, sel: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Per row of per-lane byte addresses (-1: inactive) accessing `width` bytes each (or per row
        `sel` of them): the wavefronts the access needs (the most distinct words any one bank serves;
        at least 1), and the wavefronts a conflict-free access of as many bytes would need."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        sel = np.arange(rows.shape[0]) if sel is None else np.asarray(sel, dtype=np.int64)
        group = self.wide_lanes if width >= 16 and self.wide_lanes else rows.shape[1]
        return bank_wavefronts(rows, sel, max(1, width // self.bank_width), self.bank_width, self.banks, width, group)


_SLOTS = 256  # the rows `bank_wavefronts` keeps with their results (a power of two)
# each lane's weight in a row's hash: odd, 16 bits, spread (rows that differ by a constant shift, a block's
# warps side by side, fall in different slots)
_LANE_WEIGHTS = ((np.arange(64, dtype=np.int64) * 0x9E3779B1) >> 8 & 0xFFFF) | 1
_STAMPS = 2048  # the words a group's stamp table tells apart without a clash (8 KiB of 4-byte words)


@njit
def _group_stamped(rows, r, g0, g1, shift, banks, count, stamp, key, tag):
    """Lanes g0 .. g1 of row `r`, one bank word each (word: address >> shift; bank: word mod `banks`, a power
    of two): the most distinct words any one bank serves, the active lanes, and whether two distinct words
    fell on one slot of the stamp table (then the caller maps the group the exact way). A word is new to the
    group where its slot does not hold it under `tag`; `count` (per bank) is left zero."""
    most = 0
    n = 0
    clash = False
    for lane in range(g0, g1):
        a = rows[r, lane]
        if a < 0:
            continue
        n += 1
        w = a >> shift
        s = w & (_STAMPS - 1)
        hit = stamp[s] == tag
        same = hit & (key[s] == w)
        clash = clash | (hit & (key[s] != w))
        stamp[s] = tag
        key[s] = w
        b = w & (banks - 1)
        c = count[b] + 1 - int(same)
        count[b] = c
        most = max(most, c)
    for b in range(banks):
        count[b] = 0
    return most, n, clash


@njit
def bank_wavefronts(rows, sel, words_per_lane, bank_width, banks, width, group):
    m = sel.size
    lanes = rows.shape[1]
    wave = np.empty(m, np.int64)
    ideal = np.empty(m, np.int64)
    # per bank, the distinct words this access reads from it (lanes reading one word share it)
    seen = np.empty((banks, lanes * words_per_lane), np.int64)
    count = np.zeros(banks, np.int64)
    touched = np.empty(lanes * words_per_lane, np.int64)
    pow2 = (banks & (banks - 1)) == 0 and (bank_width & (bank_width - 1)) == 0
    shift = 0
    while (1 << shift) < bank_width:
        shift += 1
    # Rows repeat (at one pc, each block's warps use the same shared addresses as every other block's): a row
    # equal to one kept in a small table (by a hash of its addresses) takes that one's result
    slot_row = np.full(_SLOTS, -1, np.int64)
    slot_hash = np.zeros(_SLOTS, np.int64)
    slot_wave = np.zeros(_SLOTS, np.int64)
    slot_ideal = np.zeros(_SLOTS, np.int64)
    # one word a lane, banks and their width powers of two (the usual access): repeated words found in a table
    # of the words a group has read, stamped with the group's tag (no branch on the addresses' values)
    fast = words_per_lane == 1 and pow2
    stamp = np.full(_STAMPS, -1, np.int64)
    key = np.zeros(_STAMPS, np.int64)
    tag = 0
    for i in range(m):
        r = sel[i]
        h = 0
        for lane in range(lanes):  # (each lane's term on its own, under 2^40: no overflow, jitted or not)
            h += (rows[r, lane] & 0xFFFFFF) * _LANE_WEIGHTS[lane]
        slot = (h ^ (h >> 11) ^ (h >> 23) ^ (h >> 35)) & (_SLOTS - 1)
        q = slot_row[slot]
        if q >= 0 and slot_hash[slot] == h:
            diff = 0
            for lane in range(lanes):
                diff |= rows[q, lane] ^ rows[r, lane]
            if diff == 0:
                wave[i] = slot_wave[slot]
                ideal[i] = slot_ideal[slot]
                continue
        total = 0
        active = 0
        # the lanes are served `group` at a time, each group's wavefronts its busiest bank's words
        for g0 in range(0, lanes, group):
            g1 = min(g0 + group, lanes)
            most = 0
            if fast:
                most, n, clash = _group_stamped(rows, r, g0, g1, shift, banks, count, stamp, key, tag)
                tag += 1
                if not clash:
                    active += n
                    total += most
                    continue
                most = 0
            nt = 0
            prev = -1
            for lane in range(g0, g1):
                a = rows[r, lane]
                if a < 0:
                    continue
                active += 1
                if most == 0:
                    most = 1
                w0 = (a >> shift) if pow2 else a // bank_width
                if w0 == prev:
                    continue  # the previous lane's word(s): a broadcast
                prev = w0
                for k in range(words_per_lane):
                    w = w0 + k
                    b = (w & (banks - 1)) if pow2 else w % banks
                    c = count[b]
                    new = True
                    for j in range(c):
                        if seen[b, j] == w:
                            new = False
                            break
                    if new:
                        if c == 0:
                            touched[nt] = b
                            nt += 1
                        seen[b, c] = w
                        count[b] = c + 1
                        if c + 1 > most:
                            most = c + 1
            for j in range(nt):
                count[touched[j]] = 0
            total += most
        wave[i] = max(total, 1)
        nbytes = active * width
        ideal[i] = max(-(-nbytes // (banks * bank_width)), 1)
        slot_row[slot], slot_hash[slot], slot_wave[slot], slot_ideal[slot] = r, h, wave[i], ideal[i]
    return wave, ideal

