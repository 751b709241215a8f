"""The simulation's watchdog: stops a kernel that runs past its cycle limit and says which warps were
still resident, at which instruction, and what each was waiting for (in Nsight Compute's state names)."""

from __future__ import annotations

from collections import Counter

from gpusim.errors import SimulationLimitError
from gpusim.isa import Program
from gpusim.timing.decode import WARP_STATES
from gpusim.timing.warp import INF

SHOWN = 8  # warps described one by one; the rest are counted by (pc, state)


def stuck_warps(sms: list, program: Program, now: int) -> list[dict]:
    """One record per resident warp: SM, block, warp, pc, source line, the state it waits in and until when."""
    out = []
    for sm in sms:
        for sp in sm.sps:
            for w in sp.warps:
                pc = w.code[w.pos].pc if w.pos < len(w.code) else None
                ins = program.instructions[pc] if pc is not None else None
                if w in w.block.waiting:
                    state, until = "barrier", None
                elif w.ready == INF:
                    state, until = "lg_throttle", None  # a global access waiting for the memory system
                elif w.ready > now:
                    regs = [r for r in w.info.deps if w.scoreboard.ready[r] == w.ready]
                    state = WARP_STATES[w.scoreboard.reason[regs[0]]] if regs else "wait"
                    until = w.ready
                else:
                    state, until = "not_selected", None
                out.append({"sm": sm.index, "block": w.block.id, "warp": w.index, "pc": pc,
                            "line": ins.line if ins else None, "instruction": ins.text if ins else None,
                            "state": state, "until": until})
    return out


def limit_error(sms: list, program: Program, now: int, limit: int, horizon: bool = False) -> SimulationLimitError:
    """The error for a kernel stopped at cycle `now` by its limit `limit`, with the stuck warps described.
    `horizon`: the limit is the longest kernel the timing model simulates, not the caller's max_cycles."""
    stuck = stuck_warps(sms, program, now)
    within = f"the {limit:,} cycles the timing model simulates at most" if horizon else f"max_cycles={limit:,}"
    lines = [f"kernel {program.name} did not finish within {within} (stopped at cycle {now:,}); "
             f"{len(stuck)} warps still resident on {len({s['sm'] for s in stuck})} SMs"]
    for s in stuck[:SHOWN]:
        until = f" until cycle {s['until']:,}" if s["until"] is not None else ""
        lines.append(f"  SM {s['sm']} block {s['block']} warp {s['warp']}: pc {s['pc']} "
                     f"(line {s['line']}: {s['instruction']}) {s['state']}{until}")
    rest = Counter((s["pc"], s["state"]) for s in stuck[SHOWN:])
    for (pc, state), n in rest.most_common(SHOWN):
        lines.append(f"  ... {n} more warps at pc {pc} in {state}")
    lines.append("simulate a shorter launch, or sample it (--sample auto) if the workload can be sampled" if horizon
                 else "raise max_cycles if the kernel is meant to run longer")
    return SimulationLimitError("\n".join(lines), cycle=now, stuck=stuck)
