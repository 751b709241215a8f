"""Constant folding: a node whose inputs are all constants becomes a constant (computed by the reference
evaluator) under its own name. Walking in topological order folds whole constant-only subgraphs; the
constants they read are left for dead-code elimination."""

from __future__ import annotations

from gpusim.compiler.evaluate import evaluate_node
from gpusim.compiler.ir import Graph
from gpusim.compiler.passes.base import Change, constant_value, rewrite
from gpusim.compiler.printer import format_node


def fold_constants(graph: Graph) -> tuple[Graph, list[Change]]:
    """Fold every node computed from constants only. Change kind: `fold`."""
    changes: list[Change] = []

    def rule(new: Graph, node) -> str | None:
        values = [constant_value(new, i) for i in node.inputs]
        if not values or any(v is None for v in values):
            return None
        changes.append(Change("fold", f"{format_node(node)} -> constant"))
        return new.constant(evaluate_node(node, values), node.dtype, name=node.name).name

    return rewrite(graph, rule), changes
