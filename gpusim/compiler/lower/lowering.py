"""Lowering a graph: every node that computes something becomes one kernel from its template."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpusim.compiler.errors import CompilerError
from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.lower import attention, conv, elementwise, gather, matmul, mma, reduce, transpose
from gpusim.compiler.lower.kernel import Kernel, Template
from gpusim.compiler.lower.region import kernel_name, region_of
from gpusim.compiler.ops import OPS, Kind, kind_of
from gpusim.compiler.verify import verify
from gpusim.config import Config

TEMPLATES: dict[str, Template] = {t.name: t for t in (elementwise.TEMPLATE, matmul.TEMPLATE, reduce.TEMPLATE,
                                                     transpose.TEMPLATE, gather.TEMPLATE, conv.TEMPLATE,
                                                     attention.TEMPLATE, mma.TEMPLATE)}
GATHERS = ("remap", "concat")  # injective operators lowered by the gather template
NO_KERNEL = ("parameter", "constant", "reshape")  # inputs, values, views
_BY_KIND = {"elementwise": "elementwise", "epilogue": "matmul", "reduction": "reduce",
            Kind.ELEMENTWISE: "elementwise", Kind.BROADCAST: "elementwise", Kind.OUT_FUSABLE: "matmul",
            Kind.REDUCTION: "reduce", Kind.INJECTIVE: "transpose"}


def template_of(node: Node) -> Template | None:
    """The template that lowers `node`; None for a node that needs no kernel (a parameter, a constant,
    a reshape: a view of its input)."""
    if node.op in NO_KERNEL:
        return None
    if OPS[node.op].run_on_host is not None:
        raise CompilerError(f"node %{node.name} ({node.op}): control flow is not one kernel; run the graph with "
                            "gpusim.compiler.control_flow_run.run_control_flow")
    if node.op in GATHERS:
        return TEMPLATES["gather"]
    if node.op == "conv" or node.op == "fused" and any(n.op == "conv" for n in node.attrs["body"].nodes.values()):
        return TEMPLATES["conv"]  # an implicit GEMM on the matmul template, its epilogue fused
    if node.op == "fused_attention":
        return TEMPLATES["attention"]
    if kind_of(node.op) is Kind.OPAQUE and node.op != "fused":
        raise CompilerError(f"node %{node.name}: no kernel template lowers {node.op}")
    return TEMPLATES[_BY_KIND[node.attrs["kind"] if node.op == "fused" else kind_of(node.op)]]


def select(graph: Graph, node: Node, cfg: Config | None = None) -> tuple[Template | None, str | None]:
    """The template that lowers `node` on `cfg`, and for a matmul left on the CUDA-core template although
    its operands are f16, bf16 or i8, why (mma.unsupported). A matmul (with its epilogue) whose operands
    the config's tensor unit takes goes to the tensor-core template; without a config, or on one without
    a tensor unit (gtx980), every matmul stays on the CUDA-core template."""
    template = template_of(node)
    if template is not matmul.TEMPLATE:
        return template, None
    region = region_of(graph, node)
    reason = mma.unsupported(region, cfg)
    if reason is None:
        return mma.TEMPLATE, None
    return template, reason if mma.operands(region)[0] in mma.MMA else None


def lower_node(graph: Graph, node: Node, params: Mapping[str, Any] | None = None,
               cfg: Config | None = None) -> Kernel:
    """The kernel computing `node` of `graph` on `cfg` (the template `select` picks), its template's
    defaults overridden by `params`."""
    template, _ = select(graph, node, cfg)
    if template is None:
        raise CompilerError(f"node %{node.name} ({node.op}) needs no kernel")
    region = region_of(graph, node)
    chosen = template.default(region)
    unknown = sorted(set(params or {}) - set(chosen))
    if unknown:
        raise CompilerError(f"node %{node.name}: unknown {template.name} parameter(s) {', '.join(unknown)}; "
                            f"its parameters are {', '.join(chosen)}")
    return template.generate(region, {**chosen, **(params or {})}, kernel_name(node.name))


def lower(graph: Graph, params_per_node: Mapping[str, Mapping[str, Any]] | None = None,
          cfg: Config | None = None) -> list[Kernel]:
    """One kernel per computing node of `graph`, in topological order, for `cfg` (which decides where the
    tensor-core template applies: `select`); `params_per_node` (node name -> template parameters)
    overrides the templates' defaults."""
    verify(graph)
    params_per_node = dict(params_per_node or {})
    unknown = sorted(set(params_per_node) - set(graph.nodes))
    if unknown:
        raise CompilerError(f"parameters for unknown node(s) {', '.join('%' + u for u in unknown)}")
    return [lower_node(graph, n, params_per_node.get(n.name), cfg) for n in graph.topo_order()
            if template_of(n) is not None]
