"""The simulation's watchdog: stops a kernel that runs past its cycle limit and says which warps were
still resident, at which instruction, and what each was waiting for (in Nsight Compute's state names)."""

from __future__ import annotations

from collections import Counter

from gpusim.config.vocab import WARP_STATES
from gpusim.errors import SimulationLimitError
from gpusim.isa import Program
from gpusim.timing.jit import NEVER

SHOWN = 8  # warps described one by one; the rest are counted by (pc, state)


def stuck_warps(M, program: Program, now: int) -> list[dict]:
    """One record per resident warp: SM, block, warp, pc, source line, the state it waits in and until when."""
    out = []
    S, P, W, st, code = M.sms, M.P, M.W, M.streams, M.code
    for s in range(S.t.size):
        for g in range(s * S.nsp, (s + 1) * S.nsp):
            for k in range(int(P.nw[g])):
                w = int(P.warps[g, k])
                h = int(W.h[w])
                pc = int(st.pc[st.pos[h]]) if st.pos[h] < st.end[h] else None
                ins = program.instructions[pc] if pc is not None else None
                b = int(W.blk[w])
                ready = int(W.ready[w])
                if w in S.blk_wait[b, :S.blk_nwait[b]].tolist():
                    state, until = "barrier", None
                elif ready == NEVER:
                    state, until = "lg_throttle", None  # a global access waiting for the memory system
                elif ready > now:
                    regs = [r for r in code.deps[code.dep_off[W.pc[w]]:code.dep_off[W.pc[w] + 1]].tolist()
                            if W.sb_ready[w, r] == ready]
                    state = WARP_STATES[int(W.sb_reason[w, regs[0]])] if regs else "wait"
                    until = ready
                else:
                    state, until = "not_selected", None
                out.append({"sm": s, "block": int(S.blk_id[b]), "warp": int(W.index[w]), "pc": pc,
                            "line": ins.line if ins else None, "instruction": ins.text if ins else None,
                            "state": state, "until": until})
    return out


def limit_error(M, program: Program, now: int, limit: int) -> SimulationLimitError:
    """The error for a kernel stopped at cycle `now` by its limit `limit`, with the stuck warps described.
    """
    stuck = stuck_warps(M, program, now)
    within = f"max_cycles={limit:,}"
    lines = [f"kernel {program.name} did not finish within {within} (stopped at cycle {now:,}); "
             f"{len(stuck)} warps still resident on {len({s['sm'] for s in stuck})} SMs"]
    for s in stuck[:SHOWN]:
        until = f" until cycle {s['until']:,}" if s["until"] is not None else ""
        lines.append(f"  SM {s['sm']} block {s['block']} warp {s['warp']}: pc {s['pc']} "
                     f"(line {s['line']}: {s['instruction']}) {s['state']}{until}")
    rest = Counter((s["pc"], s["state"]) for s in stuck[SHOWN:])
    for (pc, state), n in rest.most_common(SHOWN):
        lines.append(f"  ... {n} more warps at pc {pc} in {state}")
    lines.append("raise max_cycles if the kernel is meant to run longer")
    return SimulationLimitError("\n".join(lines), cycle=now, stuck=stuck)
