"""The pass manager: runs a named pipeline of passes, verifying the graph before the first and after
every pass, and reports what each pass changed and the node counts before and after.

    >>> graph, report = run_pipeline(models.mlp2(32, 64, 128, 10))   # doctest: +SKIP
    >>> print(report)                                                # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from gpusim.compiler.errors import CompilerError, GraphError
from gpusim.compiler.ir import Graph
from gpusim.compiler.passes.base import Change, Pass
from gpusim.compiler.passes.cse import eliminate_common_subexpressions
from gpusim.compiler.passes.dce import eliminate_dead_code
from gpusim.compiler.passes.fold import fold_constants
from gpusim.compiler.passes.fuse import ShouldFuse, fuse, fuse_when_legal
from gpusim.compiler.passes.simplify import simplify
from gpusim.compiler.verify import verify

PASSES: dict[str, Pass] = {
    "fold": fold_constants,
    "simplify": simplify,
    "cse": eliminate_common_subexpressions,
    "dce": eliminate_dead_code,
    "fuse": fuse,
}
DEFAULT_PIPELINE = ("fold", "simplify", "cse", "dce", "fuse")


@dataclass(frozen=True, slots=True)
class PassReport:
    """What one pass did: its changes, and the graph's node count before and after it."""

    name: str
    nodes_before: int
    nodes_after: int
    changes: tuple[Change, ...]

    @property
    def counts(self) -> dict[str, int]:
        """Changes counted by kind."""
        return dict(Counter(c.kind for c in self.changes))


@dataclass(frozen=True, slots=True)
class PipelineReport:
    """One PassReport per pass run, in order."""

    passes: tuple[PassReport, ...]

    @property
    def nodes_before(self) -> int:
        return self.passes[0].nodes_before

    @property
    def nodes_after(self) -> int:
        return self.passes[-1].nodes_after

    def __str__(self) -> str:
        lines = [f"pipeline: {' -> '.join(p.name for p in self.passes)}; nodes {self.nodes_before} -> "
                 f"{self.nodes_after}"]
        for p in self.passes:
            counts = ", ".join(f"{k} {n}" for k, n in p.counts.items()) or "no changes"
            lines.append(f"{p.name:<9} nodes {p.nodes_before:>3} -> {p.nodes_after:<3} {counts}")
            lines.extend(f"    {c.description}" for c in p.changes)
        return "\n".join(lines)


def run_pipeline(graph: Graph, pipeline: Sequence[str] = DEFAULT_PIPELINE, *,
                 should_fuse: ShouldFuse = fuse_when_legal) -> tuple[Graph, PipelineReport]:
    """Run the passes named in `pipeline` (names of PASSES) on `graph`; `should_fuse` decides fusion.
    Returns the final graph and the report; CompilerError for an unknown pass or a pass that breaks
    the graph (the verifier's message)."""
    unknown = [name for name in pipeline if name not in PASSES]
    if unknown or not pipeline:
        raise CompilerError(f"unknown pass(es) {', '.join(unknown) or '(empty pipeline)'}; "
                            f"the passes are {', '.join(PASSES)}")
    verify(graph)
    reports = []
    for name in pipeline:
        run = partial(fuse, should_fuse=should_fuse) if name == "fuse" else PASSES[name]
        new, changes = run(graph)
        try:
            verify(new)
        except GraphError as e:
            raise CompilerError(f"pass '{name}' produced an invalid graph: {e}") from e
        reports.append(PassReport(name, len(graph), len(new), tuple(changes)))
        graph = new
    return graph, PipelineReport(tuple(reports))
