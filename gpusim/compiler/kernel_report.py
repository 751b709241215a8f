"""Per-kernel report of a compilation (`gpusim compile MODEL --report [FILE]`): for every kernel of the
optimised graph, the operators it runs (a fused node's body), the template and its parameters (the
tile choice), its simulated cycles (the timing model through SimulatedCost, cached; the compile's own
estimates when its cost model is the simulated one) and its bottleneck, the analytical model's
bounding term: `latency` (one warp's dependent chain, times the waves), `issue` (the SM's issue
throughput) or `memory` (DRAM bytes over bandwidth). The tile column holds every template parameter
(the tensor-core template's `num_stages` among them); a matmul on f16, bf16 or i8 operands left on the
CUDA-core template gets a note saying why (lowering.select)."""

from __future__ import annotations

from typing import Any

from gpusim.compiler.cost.analytical import terms
from gpusim.compiler.cost.base import CostModel
from gpusim.compiler.driver import CompileReport
from gpusim.compiler.lower import Kernel
from gpusim.compiler.lower.lowering import select
from gpusim.compiler.printer import fused_ops
from gpusim.config import Config


def bottleneck(kernel: Kernel, cfg: Config) -> str:
    """The analytical model's bounding term for `kernel` on `cfg`: latency, issue or memory."""
    t = terms(kernel, cfg)
    return max((t.waves * t.chain, "latency"), (t.waves * t.throughput, "issue"), (t.memory, "memory"))[1]


def kernel_rows(report: CompileReport, cfg: Config, sim: CostModel) -> list[dict[str, Any]]:
    """One dict per optimised kernel (module docstring), in launch order."""
    kernels = list(report.optimised.kernels)
    if report.cost == sim.name:
        simulated = list(report.optimised.estimates)
    else:
        simulated = sim.costs(kernels, cfg)
    rows = []
    graph = report.optimised.graph
    for k, e in zip(kernels, simulated, strict=True):
        rows.append({"kernel": k.name, "node": k.node.name,
                     "ops": fused_ops(k.node) if k.node.op == "fused" else [k.node.op],
                     "template": k.template, "params": dict(k.params),
                     "simulated_cycles": None if e is None else e.kernel_cycles,
                     "bottleneck": bottleneck(k, cfg), "note": select(graph, k.node, cfg)[1]})
    return rows


def format_rows(rows: list[dict[str, Any]]) -> str:
    """The rows as a text table, with the total simulated cycles."""
    table = [("kernel", "fused ops", "template", "tile", "sim cycles", "bottleneck")]
    for r in rows:
        tile = " ".join(f"{p}={int(v) if isinstance(v, bool) else v}" for p, v in r["params"].items())
        cycles = "-" if r["simulated_cycles"] is None else f"{r['simulated_cycles']:,.0f}"
        table.append((r["kernel"], "+".join(r["ops"]), r["template"], tile, cycles, r["bottleneck"]))
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.rjust(w) if i == 4 else c.ljust(w) for i, (c, w) in enumerate(zip(t, widths, strict=True)))
             .rstrip() for t in table]
    total = sum(r["simulated_cycles"] or 0 for r in rows)
    notes = [f"{r['kernel']}: CUDA-core template: {r['note']}" for r in rows if r.get("note")]
    return "\n".join([*lines, f"{len(rows)} kernels, {total:,.0f} simulated cycles (execution, launch overheads "
                                   "not included)", *notes])
