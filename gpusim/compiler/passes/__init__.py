"""Graph passes, one a file: constant folding, algebraic simplification, common sub-expression
elimination, dead-code elimination, fusion; and the pass manager that runs them as a pipeline.
Every pass is `(graph) -> (new graph, changes)` and leaves its input untouched."""

from gpusim.compiler.passes.base import Change, Pass
from gpusim.compiler.passes.cse import eliminate_common_subexpressions
from gpusim.compiler.passes.dce import eliminate_dead_code
from gpusim.compiler.passes.fold import fold_constants
from gpusim.compiler.passes.fuse import Alternative, FusionCandidate, ShouldFuse, fuse, fuse_when_legal
from gpusim.compiler.passes.manager import DEFAULT_PIPELINE, PASSES, PassReport, PipelineReport, run_pipeline
from gpusim.compiler.passes.simplify import simplify

__all__ = [
    "DEFAULT_PIPELINE", "PASSES", "Alternative", "Change", "FusionCandidate", "Pass", "PassReport",
    "PipelineReport", "ShouldFuse", "eliminate_common_subexpressions", "eliminate_dead_code", "fold_constants",
    "fuse", "fuse_when_legal", "run_pipeline", "simplify",
]
