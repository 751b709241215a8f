"""Rewrite rules on the pattern engine (passes/pattern.py) beyond the algebraic simplifications:

| kind | before | after |
|---|---|---|
| transpose-matmul | matmul(transpose(a), b), matmul(a, transpose(b)) (the transpose swaps the | matmul_t(a, b) |
| | last two axes only; matmul_t's operands too, toggling its flag) | {trans_a, trans_b} |

The matmul template reads a transposed operand with swapped strides in its tile loads
(lower/matmul.py), so the transpose is never written to memory: one kernel and one round trip of the
operand fewer. A transpose that moves other axes too is left alone (what remains would still be a
transpose kernel), and so is one still read by another node (it stays for that node; the matmul reads
its input directly). simplify() applies these rules after its own (TRANSPOSE_RULES).

| fuse-attention | matmul(softmax(s), v), s = matmul(q, b) or matmul_t(q, k) {trans_b}, | fused_attention(q, b, v) |
| | optionally scaled (s x c, c x s, s / c, c a scalar constant) | {scale, trans_b} |

fuse-attention needs the scores, the scaled scores and the probabilities read by nothing else (and no
graph output), the softmax along the last axis and A not transposed; it is a decision, not a
simplification: `attention_rules(graph, decide)` asks `decide` (the fuse pass's should_fuse, given an
AttentionCandidate) before each rewrite. The fuse pass applies them first (passes/fuse.py)."""

from __future__ import annotations

from collections.abc import Callable

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.passes.pattern import C, Match, P, Rule, V


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


AttentionDecision = Callable[[Graph, Node, tuple[Node, ...]], bool]


def attention_rules(graph: Graph, decide: AttentionDecision) -> list[Rule]:
    """The fuse-attention rules for rewriting `graph` (its users and outputs decide which intermediates
    are private to the chain); `decide(new graph, fused_attention node, absorbed node names)` accepts
    or declines each match (the new node not yet added; the absorbed nodes in order, the root last)."""
    users, outputs = graph.users(), set(graph.outputs.values())

    def build(new: Graph, node: Node, m: Match) -> str | None:
        scores, probs = new[m["s"]], new[m["p"]]
        scale, chain = 1.0, [m["s"]]
        if "scaled" in m:
            scaled = new[m["scaled"]]
            c = new[m["c"]].attrs["value"]
            if c.size != 1 or c.reshape(-1)[0] == 0 or scaled.type != scores.type:
                return None
            c = float(c.reshape(-1)[0])
            scale = 1 / c if scaled.op == "div" else c
            chain.append(m["scaled"])
        chain.append(m["p"])
        if probs.attrs["axis"] != probs.type.rank - 1:
            return None
        trans = transpose_flags(scores)
        if trans[0] or any(set(users[n]) != {after} or n in outputs
                           for n, after in zip(chain, [*chain[1:], node.name], strict=True)):
            return None
        fused = Node(node.name, "fused_attention", (m["q"], m["b"], m["v"]), node.type,
                     {"scale": scale, "trans_b": trans[1]})
        if not decide(new, fused, (*(new[n] for n in chain), node)):
            return None
        return new.emit("fused_attention", fused.inputs, fused.attrs, name=node.name).name

    rules = []
    for mm in ("matmul", "matmul_t"):
        s = P(mm, V("q"), V("b"), name="s")
        for scores in (s, P("mul", s, C(name="c"), name="scaled"), P("div", s, C(name="c"), name="scaled")):
            rules.append(Rule("fuse-attention", P("matmul", P("softmax", scores, name="p"), V("v")), build))
    return rules


def transpose_flags(node: Node) -> tuple[bool, bool]:
    """A matmul's (trans_a, trans_b): matmul_t's flags, a plain matmul's (False, False)."""
    return (bool(node.attrs["trans_a"]), bool(node.attrs["trans_b"])) if node.op == "matmul_t" else (False, False)
