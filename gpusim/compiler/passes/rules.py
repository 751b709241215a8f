"""Rewrite rules on the pattern engine (passes/pattern.py) beyond the algebraic simplifications:

| kind | before | after |
|---|---|---|
| transpose-matmul | matmul(transpose(a), b), matmul(a, transpose(b)) (the transpose swaps the | matmul_t(a, b) |
| | last two axes only; matmul_t's operands too, toggling its flag) | {trans_a, trans_b} |

The matmul template reads a transposed operand with swapped strides in its tile loads
(lower/matmul.py), so the transpose is never written to memory: one kernel and one round trip of the
operand fewer. A transpose that moves other axes too is left alone (what remains would still be a
transpose kernel), and so is one still read by another node (it stays for that node; the matmul reads
its input directly). simplify() applies these rules after its own (TRANSPOSE_RULES)."""

from __future__ import annotations

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.passes.pattern import Match, P, Rule, V


def swaps_last_two(graph: Graph, node: Node) -> bool:
    """Whether transpose `node` swaps its last two axes and keeps the others in place."""
    perm = tuple(node.attrs["perm"])
    r = len(perm)
    return r >= 2 and perm == (*range(r - 2), r - 1, r - 2)


def _fold(new: Graph, node: Node, m: Match) -> str | None:
    flags = [bool(node.attrs["trans_a"]), bool(node.attrs["trans_b"])] if node.op == "matmul_t" else [False, False]
    inputs = list(node.inputs)
    for i, name in enumerate(inputs):
        t = new[name]
        if t.op == "transpose" and swaps_last_two(new, t):
            inputs[i], flags[i] = t.inputs[0], not flags[i]
    if inputs == list(node.inputs):
        return None
    if not any(flags):
        return new.matmul(*inputs, name=node.name).name
    return new.emit("matmul_t", inputs, {"trans_a": flags[0], "trans_b": flags[1]}, name=node.name).name


_T = P("transpose", V(), where=swaps_last_two)
TRANSPOSE_RULES = [Rule("transpose-matmul", P(op, *operands), _fold)
                   for op in ("matmul", "matmul_t") for operands in ((_T, V()), (V(), _T))]
