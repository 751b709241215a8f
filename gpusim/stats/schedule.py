"""Which warp each scheduler picked, cycle by cycle, and why the others did not issue (`gpusim step
--schedule`): the timing model's view of one block, beside the functional stepper's SIMT view.

The timing model keeps an issue log for SM 0 when asked (`timed_execute(..., issue_log=N)`): every
pick of a sub-partition's scheduler with the state of each other ready warp at that cycle (not_selected:
its unit was free and another warp was chosen; a throttle state: its unit was busy), and every wait
as an interval in its Nsight Compute warp state (long_scoreboard for a load's result, barrier,
branch_resolving, ...). This module turns the log into one row per pick, naming each warp of the
sub-partition and its state at that cycle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpusim.config.vocab import STATE, WARP_STATES
from gpusim.isa.program import Program

SELECTED = STATE["selected"]
LAUNCH = -1  # gpusim.timing.subpartition.LAUNCH


@dataclass
class Pick:
    """One issue: at `cycle`, sub-partition `subpartition` of SM 0 issued `warp`'s instruction `pc`."""

    cycle: int
    subpartition: int
    block: int
    warp: int  # warp index within its block
    pc: int
    others: dict[tuple[int, int], tuple[str, int]] = field(default_factory=dict)  # (block, warp) -> (state, pc)


def picks(issue_log: np.ndarray, subpartitions: int) -> list[Pick]:
    """The picks of an issue log (`KernelTiming.issue_log`), in cycle order, each with the state of
    every other resident warp of its sub-partition at that cycle ("-" when no state covers it: the warp
    has just become resident or is between a memory instruction's issue and its access)."""
    slot: dict[int, tuple[int, int]] = {}  # warp slot -> (block, warp), as launches assign them
    home: dict[tuple[int, int], int] = {}  # (block, warp) -> its sub-partition
    waits: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}  # -> (from, to, state, pc)
    out: list[Pick] = []
    by_cycle: dict[tuple[int, int], Pick] = {}
    for t0, t1, g, w, pc, state in issue_log.tolist():
        if state == LAUNCH:
            slot[w] = (pc, t1)  # (a launch's entry: the block in pc, its warp in "to")
            home[(pc, t1)] = g
            continue
        who = slot.get(w)
        if who is None:
            continue
        if state == SELECTED:
            p = Pick(t0, g % subpartitions, who[0], who[1], pc)
            out.append(p)
            by_cycle[(g, t0)] = p
        elif t1 == t0 + 1 and (g, t0) in by_cycle and who not in by_cycle[(g, t0)].others:
            by_cycle[(g, t0)].others[who] = (WARP_STATES[state], pc)  # a ready warp, not picked
        if state != SELECTED and t1 > t0:
            waits.setdefault(who, []).append((t0, t1, state, pc))
    for p in out:
        g = home[(p.block, p.warp)]
        for who, sp in home.items():
            if sp != g or who == (p.block, p.warp) or who in p.others:
                continue
            state = next(((WARP_STATES[s], pc) for a, b, s, pc in waits.get(who, []) if a <= p.cycle < b), None)
            if state is not None:
                p.others[who] = state
    out.sort(key=lambda p: (p.cycle, p.subpartition))
    return out


def format_picks(ps: Sequence[Pick], program: Program, *, limit: int | None = None) -> str:
    """One line per pick: cycle, sub-partition, the warp issued and its instruction, then each other
    warp of that sub-partition with its state (and the instruction it waits on)."""
    lines = [f"{'cycle':>7} {'sp':>2}  {'issued':<6} {'pc':>4}  {'instruction':<34} others: warp state (pc)"]
    multi = len({p.block for p in ps}) > 1
    name = (lambda b, w: f"b{b}w{w}") if multi else (lambda b, w: f"w{w}")
    for p in ps[:limit]:
        text = program.instructions[p.pc].text.strip()
        others = ", ".join(f"{name(*who)} {st} ({pc})" for who, (st, pc) in sorted(p.others.items()))
        lines.append(f"{p.cycle:>7} {p.subpartition:>2}  {name(p.block, p.warp):<6} {p.pc:>4}  "
                     f"{text[:34]:<34} {others or '-'}")
    return "\n".join(lines)
