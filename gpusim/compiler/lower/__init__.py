"""Lowering: each node of an (optimised) graph to a kernel in the project's ISA, generated from a
parameterised template (one a file: elementwise, matmul, reduce, transpose) with its launch, and the
kernels run one after another on the functional executor. See docs/compiler.md.

    >>> from gpusim.compiler import models, run_pipeline
    >>> from gpusim.compiler.lower import lower
    >>> graph, _ = run_pipeline(models.mlp2(32, 64, 128, 10))
    >>> [(k.template, k.launch.grid) for k in lower(graph)]
    [('matmul', (8, 2, 1)), ('matmul', (1, 2, 1))]
"""

from gpusim.compiler.lower.kernel import Kernel, Template, Work
from gpusim.compiler.lower.lowering import TEMPLATES, lower, lower_node, template_of
from gpusim.compiler.lower.region import Region, region_of
from gpusim.compiler.lower.run import run_kernels

__all__ = ["TEMPLATES", "Kernel", "Region", "Template", "Work", "lower", "lower_node", "region_of", "run_kernels",
           "template_of"]
