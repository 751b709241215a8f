"""The compiler: a graph IR with a builder, verifier, printer and numpy reference evaluator; graph passes
(constant folding, simplification, CSE, DCE, fusion) run by a pass manager; ONNX import; text and
Graphviz export; example models; lowering to ISA kernels from templates (lower/), cost models (cost/),
the autotuner (tune.py) and the end-to-end driver (driver.py). See docs/compiler.md; docs/architecture.md
draws its layers. Importing the package imports every layer, so every operator's rules registered from
above the operator table (control flow's) are in place before any graph is built.

    >>> from gpusim.compiler import models, run_pipeline
    >>> graph, report = run_pipeline(models.mlp2(32, 64, 128, 10))
    >>> [n.attrs["kind"] for n in graph.nodes.values() if n.op == "fused"]
    ['epilogue', 'epilogue']
"""

from gpusim.compiler import models
from gpusim.compiler.control_flow import emit_if, emit_loop, unroll_loops
from gpusim.compiler.control_flow_run import run_control_flow
from gpusim.compiler.cost import AnalyticalCost, CalibratedCost, CostModel, Estimate, SimulatedCost, cost_based_fusion
from gpusim.compiler.dot import to_dot
from gpusim.compiler.driver import CompileReport, compile_graph, load_model
from gpusim.compiler.errors import CompilerError, GraphError
from gpusim.compiler.evaluate import evaluate
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower import Kernel, lower, lower_node, run_kernels
from gpusim.compiler.onnx_import import import_onnx
from gpusim.compiler.ops import OPS, Kind, kind_of
from gpusim.compiler.passes.base import Change
from gpusim.compiler.passes.cse import eliminate_common_subexpressions
from gpusim.compiler.passes.dce import eliminate_dead_code
from gpusim.compiler.passes.fold import fold_constants
from gpusim.compiler.passes.fuse import Alternative, FusionCandidate, fuse, fuse_when_legal
from gpusim.compiler.passes.manager import DEFAULT_PIPELINE, PassReport, PipelineReport, run_pipeline
from gpusim.compiler.passes.simplify import simplify
from gpusim.compiler.printer import format_graph
from gpusim.compiler.tensor import DTYPES, TensorType
from gpusim.compiler.tune import Tuner, TuneResult
from gpusim.compiler.verify import verify

__all__ = [
    "DEFAULT_PIPELINE", "DTYPES", "OPS", "Alternative", "AnalyticalCost", "CalibratedCost", "Change", "CompileReport",
    "CompilerError", "CostModel", "Estimate", "FusionCandidate", "Graph", "GraphError", "Kernel", "Kind", "Node",
    "PassReport", "PipelineReport", "SimulatedCost", "TensorType", "TuneResult", "Tuner", "compile_graph",
    "cost_based_fusion", "eliminate_common_subexpressions", "eliminate_dead_code", "emit_if", "emit_loop", "evaluate",
    "fold_constants", "format_graph", "fuse", "fuse_when_legal", "import_onnx", "kind_of", "load_model", "lower",
    "lower_node", "models", "run_control_flow", "run_kernels", "run_pipeline", "simplify", "to_dot", "unroll_loops",
    "verify",
]
