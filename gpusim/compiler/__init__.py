"""The compiler: a graph IR with a builder, verifier, printer and numpy reference evaluator; graph passes
(constant folding, simplification, CSE, DCE, fusion) run by a pass manager; ONNX import; text and
Graphviz export; example models; lowering to ISA kernels from templates (lower/), cost models (cost/),
the autotuner (tune.py) and the end-to-end driver (driver.py). See docs/compiler.md; docs/architecture.md
draws its layers. The public names below are imported on first use (PEP 562), so that importing one
module of the compiler, or the package, loads only what that module needs (`gpusim compile --help`
answers without the timing engine). Control flow's type rules and numpy semantics, which the operator
table takes from the layers above it, are registered on importing the package (control_flow.py and
evaluate.py need numpy only); its host run, by control_flow_run.py, which every caller of that run
imports (the table's placeholder says so otherwise).

    >>> from gpusim.compiler import models, run_pipeline
    >>> graph, report = run_pipeline(models.mlp2(32, 64, 128, 10))
    >>> [n.attrs["kind"] for n in graph.nodes.values() if n.op == "fused"]
    ['epilogue', 'epilogue']
"""

from __future__ import annotations

import sys
import types

# the layers that fill in the operator table's rules for `if` and `loop` (gpusim.compiler.ops.register)
from gpusim.compiler import control_flow  # noqa: F401
from gpusim.compiler.evaluate import evaluate  # noqa: F401  (public: in __all__)
from gpusim.compiler.verify import verify  # noqa: F401
from gpusim.lazy import attribute

# Public functions named as their modules: the package's attribute is the function, as `from gpusim.compiler
# import lower` has always given, though importing the submodule later binds it to the package's name.
_FUNCTIONS_NAMED_AS_MODULES = ("evaluate", "lower", "verify")


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        if name in _FUNCTIONS_NAMED_AS_MODULES and isinstance(value, types.ModuleType):
            return  # the import system binding gpusim.compiler.lower (the module) over the function
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

# The public names and the modules that define them, imported on first use.
_LAZY = {
    **dict.fromkeys(["emit_if", "emit_loop", "unroll_loops"], "gpusim.compiler.control_flow"),
    "run_control_flow": "gpusim.compiler.control_flow_run",
    **dict.fromkeys(["AnalyticalCost", "CalibratedCost", "CostModel", "Estimate", "SimulatedCost",
                     "cost_based_fusion"], "gpusim.compiler.cost"),
    "to_dot": "gpusim.compiler.dot",
    **dict.fromkeys(["CompileReport", "compile_graph", "load_model"], "gpusim.compiler.driver"),
    **dict.fromkeys(["CompilerError", "GraphError"], "gpusim.compiler.errors"),
    **dict.fromkeys(["Graph", "Node"], "gpusim.compiler.ir"),
    **dict.fromkeys(["Kernel", "lower", "lower_node", "run_kernels"], "gpusim.compiler.lower"),
    "import_onnx": "gpusim.compiler.onnx_import",
    **dict.fromkeys(["OPS", "Kind", "kind_of"], "gpusim.compiler.ops"),
    "Change": "gpusim.compiler.passes.base",
    "eliminate_common_subexpressions": "gpusim.compiler.passes.cse",
    "eliminate_dead_code": "gpusim.compiler.passes.dce",
    "fold_constants": "gpusim.compiler.passes.fold",
    **dict.fromkeys(["Alternative", "FusionCandidate", "fuse", "fuse_when_legal"], "gpusim.compiler.passes.fuse"),
    **dict.fromkeys(["DEFAULT_PIPELINE", "PassReport", "PipelineReport", "run_pipeline"],
                    "gpusim.compiler.passes.manager"),
    "simplify": "gpusim.compiler.passes.simplify",
    "format_graph": "gpusim.compiler.printer",
    **dict.fromkeys(["DTYPES", "TensorType"], "gpusim.compiler.tensor"),
    **dict.fromkeys(["TuneResult", "Tuner"], "gpusim.compiler.tune"),
}

__all__ = sorted([*_LAZY, "evaluate", "models", "verify"])


def __getattr__(name: str):
    return attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
