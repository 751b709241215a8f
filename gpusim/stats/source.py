"""Per-source-line results, Nsight Compute's Source page: per instruction (pc) the warp and thread
instructions executed, the memory requests, sectors and wavefronts and, from the timing model, the
warp states charged to it; per source line the same, summed over the line's instructions. A line is
the CUDA source line of the instruction's `loc` (PTX `.loc`) when it has one, else its line in the
kernel's own file (.sasm or .ptx). See docs/stats.md, "Source view".

The functional counters come from the warps' instruction streams as they are executed
(`tallied`, around the executor's batch sources), so the same counts arrive in functional and timing
mode; global sectors and shared wavefronts are planned with the timing model's own address stage, so
they are the sectors and wavefronts the timing model counts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gpusim.config.vocab import WARP_STATES
from gpusim.functional.executor import ExecResult, Executor
from gpusim.functional.stats import PcStats
from gpusim.isa.program import Program
from gpusim.timing.coalescer import Coalescer
from gpusim.timing.decode import GLOBAL_ATOM, GLOBAL_LD, GLOBAL_ST, SHARED, SHFL, decode
from gpusim.timing.ldst import AddressStage
from gpusim.timing.shared_memory import BankMap

SELECTED = WARP_STATES.index("selected")
WIDTH = 120  # the printed view's width (columns)


# -- counting -------------------------------------------------------------------------------------

class _Planner:
    """Adds each chunk's per-pc counts to a PcStats: the functional ones (`PcStats.tally`) and the
    sectors and wavefronts the timing model's LD/ST address stage plans for its accesses."""

    def __init__(self, program: Program, cfg):
        self.stats = PcStats.zeros(len(program))
        self.stage = AddressStage(decode(program, cfg), Coalescer(cfg.l1.line_size_bytes, cfg.l1.sector_size_bytes),
                                  BankMap(cfg))

    def add(self, chunk) -> None:
        s = self.stats
        s.tally(chunk)
        acc = chunk.accesses
        if acc is None or not acc.pcs.size:
            return
        plans = self.stage.plan(acc.rows, acc.pcs)
        n = s.sectors.size
        shared = self.stage.kind[acc.pcs] == SHARED
        # a global row's lines are lines[lo:hi]: its sectors, the bits of their sector masks
        ends = np.concatenate(([0], np.cumsum(np.bitwise_count(plans.masks), dtype=np.int64)))
        g = ~shared
        per_row = np.zeros(shared.size, np.int64)
        per_row[g] = ends[plans.hi[g]] - ends[plans.lo[g]]
        s.sectors += np.bincount(acc.pcs, weights=per_row, minlength=n).astype(np.int64)
        s.wavefronts += np.bincount(acc.pcs, weights=np.where(shared, plans.lo, 0), minlength=n).astype(np.int64)
        s.ideal_wavefronts += np.bincount(acc.pcs, weights=np.where(shared, plans.hi, 0),
                                          minlength=n).astype(np.int64)


class _Tallied:
    """A batch source (`Executor.stream_batches`) whose chunks are counted on their way to the timing
    model."""

    def __init__(self, src, planner: _Planner):
        self.src, self.planner = src, planner
        self.first_block, self.nblocks, self.wpb = src.first_block, src.nblocks, src.wpb

    def advance(self):
        chunk = self.src.advance()
        if chunk is not None:
            self.planner.add(chunk)
        return chunk


def tallied(sources: Iterable, program: Program, cfg) -> tuple[Iterator, PcStats]:
    """The executor's batch sources, each counting its instructions per pc into the PcStats returned
    (complete once the sources are exhausted)."""
    planner = _Planner(program, cfg)
    return (_Tallied(src, planner) for src in sources), planner.stats


def execute_per_pc(program: Program, launch, params: dict, memory, *, cfg,
                   max_steps_per_warp: int | None = None) -> ExecResult:
    """`gpusim.functional.execute` with per-instruction counters (`result.stats.per_pc`): the launch
    run through its instruction streams, batch by batch, each chunk counted and dropped."""
    ex = Executor(program, launch, params, memory, cfg=cfg, max_steps_per_warp=max_steps_per_warp, record=True)
    sources, per_pc = tallied(ex.stream_batches(), program, cfg)
    for src in sources:
        while src.advance() is not None:
            pass
    ex.stats.per_pc = per_pc
    return ExecResult(program, launch, ex.stats)


# -- tables ---------------------------------------------------------------------------------------

_SUMMED = ("warp_instructions", "thread_instructions", "global_requests", "global_sectors", "global_bytes",
           "shared_requests", "shared_wavefronts", "shared_ideal_wavefronts", "shared_bytes")


def where(program: Program, pc: int) -> tuple[str, int]:
    """The source line instruction `pc` is reported on: its CUDA `loc` if it has one, else its line in
    the kernel's file."""
    ins = program.instructions[pc]
    return ins.loc if ins.loc is not None else (program.source, ins.line)


def pc_records(program: Program, per_pc: PcStats, pc_states: np.ndarray | None = None, cfg=None
               ) -> list[dict[str, Any]]:
    """One record per instruction: pc, `file` and `line` (where it is reported), `asm_line` (its
    line in the kernel's file), `instruction` (its text), the counters and, with `pc_states` (the
    timing's), `samples` (warp-cycles charged to it), `samples_pct` (of the kernel's), its top stall
    and `warp_states.<state>` for every state."""
    kinds = [ti.kind for ti in decode(program, cfg)] if cfg is not None else None
    total = int(pc_states.sum()) if pc_states is not None else 0
    out = []
    for ins in program.instructions:
        pc = ins.pc
        file, line = where(program, pc)
        n = int(per_pc.warp_instructions[pc])
        kind = kinds[pc] if kinds is not None else None
        is_global = kind in (GLOBAL_LD, GLOBAL_ST, GLOBAL_ATOM) if kinds is not None else ins.space == "global"
        is_shared = kind in (SHARED, SHFL) if kinds is not None else ins.space == "shared"
        # bytes the threads loaded or stored, as ExecStats counts them (atomics count as requests only)
        width = _width(ins) if ins.opcode in ("ld", "st") else 0
        lanes = int(per_pc.access_lanes[pc])
        r: dict[str, Any] = {
            "pc": pc, "file": file, "line": line, "asm_line": ins.line, "instruction": ins.text.strip() or ins.mnemonic,
            "warp_instructions": n, "thread_instructions": int(per_pc.thread_instructions[pc]),
            "global_requests": n if is_global else 0,
            "global_sectors": int(per_pc.sectors[pc]) if is_global else 0,
            "global_bytes": lanes * width if is_global else 0,
            # (a shuffle is one wavefront through the shared-memory pipe, as the timing model counts it)
            "shared_requests": n if is_shared else 0,
            "shared_wavefronts": (n if kind == SHFL else int(per_pc.wavefronts[pc])) if is_shared else 0,
            "shared_ideal_wavefronts": (n if kind == SHFL else int(per_pc.ideal_wavefronts[pc])) if is_shared else 0,
            "shared_bytes": lanes * width if is_shared else 0,
        }
        r.update(_samples(pc_states[pc] if pc_states is not None else None, total))
        out.append(r)
    return out


def line_records(pcs: list[dict[str, Any]], *, whole_files: bool = True) -> list[dict[str, Any]]:
    """One record per source line, in file then line order: `file`, `line`, `text` (the line itself),
    `pcs` (how many instructions it has), the counters summed over its instructions, and the
    samples, their share, top stall and `warp_states.<state>` when the instructions have them. With
    `whole_files`, every line of each file that has instructions, those without any carrying only
    file, line and text (None elsewhere), as the Source page lists a whole file."""
    timed = bool(pcs) and pcs[0]["samples"] is not None
    total = sum(r["samples"] for r in pcs) if timed else 0
    by_line: dict[tuple[str, int], list[dict[str, Any]]] = {}
    files: list[str] = []
    for r in pcs:
        by_line.setdefault((r["file"], r["line"]), []).append(r)
        if r["file"] not in files:
            files.append(r["file"])
    out = []
    for f in files:
        text = read_lines(f)
        have = sorted(ln for (g, ln) in by_line if g == f)
        # (a file that cannot be read: its lines with instructions, shown by their instructions' text)
        numbers = range(1, max(len(text), have[-1]) + 1) if whole_files and text else have
        for ln in numbers:
            rows = by_line.get((f, ln))
            shown = text[ln - 1] if ln <= len(text) else "; ".join(x["instruction"] for x in rows or ())
            r: dict[str, Any] = {"file": f, "line": ln, "text": shown}
            if rows is None:
                r.update(dict.fromkeys(("pcs", *_SUMMED), None))
                r.update(_samples(None, 0) if timed else {})
            else:
                r["pcs"] = len(rows)
                for k in _SUMMED:
                    r[k] = sum(x[k] for x in rows)
                if timed:
                    states = np.array([[x[f"warp_states.{s}"] for s in WARP_STATES] for x in rows]).sum(axis=0)
                    r.update(_samples(states, total))
            if not timed:
                r.update(_samples(None, 0))
            out.append(r)
    return out


def _samples(states: np.ndarray | None, total: int) -> dict[str, Any]:
    """The warp-state columns of one instruction or line (None without timing)."""
    if states is None:
        return {"samples": None, "samples_pct": None, "top_stall": None, "top_stall_pct": None,
                **{f"warp_states.{s}": None for s in WARP_STATES}}
    n = int(states.sum())
    top = _top_stalls(states, 1)
    return {"samples": n, "samples_pct": 100.0 * n / total if total else 0.0,
            "top_stall": top[0][0] if top else None, "top_stall_pct": top[0][1] if top else None,
            **{f"warp_states.{s}": int(v) for s, v in zip(WARP_STATES, states.tolist(), strict=True)}}


def _top_stalls(states, k: int) -> list[tuple[str, float]]:
    """The `k` largest states other than `selected` (issuing is not a stall), as (name, % of all the
    line's samples); `selected` alone if nothing else."""
    states = np.asarray(states)
    n = states.sum()
    if not n:
        return []
    order = [i for i in np.argsort(-states, kind="stable").tolist() if states[i] and i != SELECTED]
    if not order:
        order = [SELECTED]
    return [(WARP_STATES[i], 100.0 * float(states[i]) / n) for i in order[:k]]


def read_lines(path: str) -> list[str]:
    """The lines of a source file ([] if it cannot be read; tabs expanded)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    return [ln.expandtabs(4) for ln in text.splitlines()]


def _width(ins) -> int:
    from gpusim.isa.types import TYPES

    t = TYPES.get(ins.types[0]) if ins.types else None
    return t.bytes if t is not None else 0


# -- the printed view -----------------------------------------------------------------------------

def format_source(lines: list[dict[str, Any]], *, title: str = "", width: int = WIDTH) -> str:
    """The Source page in `width` columns: per line the warp instructions (`inst`), active threads per
    instruction (`thr`), its share of the warp-state samples (`samp%`) and its top stalls (% of the line's
    samples), memory requests (`req`), global sectors per request (`sec/rq`), shared wavefronts per
    request (`wf/rq`), then the line. Lines without instructions are printed plainly."""
    timed = any(r.get("samples") is not None for r in lines)
    has_global = any(r["global_requests"] for r in lines)
    has_shared = any(r["shared_requests"] for r in lines)
    cols = [("line", 5), ("inst", 6), ("thr", 4)] + ([("samp%", 5), ("top stalls (% of line)", 22)] if timed else [])
    cols += [("req", 6)] + [("sec/rq", 6)] * has_global + [("wf/rq", 5)] * has_shared
    head = " ".join(f"{n:>{w}}" if n != "top stalls (% of line)" else f"{n:<{w}}" for n, w in cols)
    out = [title] if title else []
    last_file = None
    for r in lines:
        if r["file"] != last_file:
            last_file = r["file"]
            out += [f"-- {last_file}", head + "  source"]
        cells = [f"{r['line']:>5}"]
        if r["warp_instructions"] is None:
            blank = " " * (len(head) - 6)
            out.append(_fit(f"{cells[0]} {blank}  {r['text']}", width))
            continue
        n = r["warp_instructions"]
        cells += [f"{_compact(n):>6}", f"{r['thread_instructions'] / n:>4.1f}" if n else f"{'-':>4}"]
        if timed:
            cells += [f"{r['samples_pct']:>5.1f}", f"{_stall_cell(r, 22):<22}"]
        req = r["global_requests"] + r["shared_requests"]
        cells.append(f"{_compact(req) if req else '':>6}")
        if has_global:
            cells.append(f"{r['global_sectors'] / r['global_requests']:>6.1f}" if r["global_requests"] else " " * 6)
        if has_shared:
            cells.append(f"{r['shared_wavefronts'] / r['shared_requests']:>5.1f}" if r["shared_requests"] else " " * 5)
        out.append(_fit(" ".join(cells) + "  " + r["text"], width))
    return "\n".join(out)


def _stall_cell(r: dict[str, Any], w: int) -> str:
    """The line's top stalls that fit in `w` columns: 'long_scoreboard 93 wait 5' (% of its samples)."""
    if not r["samples"]:
        return ""
    states = [r[f"warp_states.{s}"] for s in WARP_STATES]
    text = ""
    for name, pct in _top_stalls(states, 3):
        part = f"{name} {pct:.0f}"
        if not text:
            text = part[:w]
        elif len(text) + 1 + len(part) <= w:
            text += " " + part
        else:
            break
    return text


def _compact(n: int) -> str:
    """A count in at most 6 characters: 123456, 1.23M, 45.6G."""
    if n < 1_000_000:
        return f"{n}"
    for div, suffix in ((1e9, "G"), (1e6, "M")):
        if n >= div:
            v = n / div
            return f"{v:.2f}{suffix}" if v < 10 else f"{v:.1f}{suffix}" if v < 100 else f"{v:.0f}{suffix}"
    return f"{n}"


def _fit(s: str, width: int) -> str:
    s = s.rstrip()
    return s if len(s) <= width else s[:width - 1] + "…"
