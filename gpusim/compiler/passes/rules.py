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

Two more are decisions, not simplifications: the fuse pass (passes/fuse.py) applies them before it
groups, each where its `should_fuse` takes the candidate (cost_based_fusion: where the modelled cycles
with launches drop):

| kind | before | after |
|---|---|---|
| batch-matmul | x @ w1, x @ w2, ... (weights parameters or constants of one shape), each | remap_i(x @ stack(w1, ..)) |
| | read only by transpose_i (after a reshape splitting its last axis, or not) | replacing transpose_i |
| fuse-attention | matmul(softmax(s), v), s = matmul(q, b) or matmul_t(q, k) {trans_b}, | fused_attention(q, b, v) |
| | optionally scaled (s x c, c x s, s / c, c a scalar constant) | {scale, trans_b} |

batch-matmul (`batch_projections(graph, decide)`, horizontal fusion: a sibling group, not a tree, so
written over the graph rather than as a pattern) runs one batched matmul (grid z = the projection) for
the group and composes each projection's head-split transpose with the slice of its batch into one
remap, so the slices cost no kernel; stacked constants are folded, parameters stacked by a concat
kernel. fuse-attention (`attention_rules(graph, decide)`, patterns) needs the scores, the scaled scores
and the probabilities read by nothing else (and no graph output), the softmax along the last axis and A
not transposed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpusim.compiler.ir import Graph, Node
from gpusim.compiler.passes.base import Change
from gpusim.compiler.passes.pattern import C, Match, P, Rule, V


def swaps_last_two(graph: Graph, node: Node) -> bool:
    """Whether transpose `node` swaps its last two axes and keeps the others in place."""
    perm = tuple(node.attrs["perm"])
    r = len(perm)
    return r >= 2 and perm == (*range(r - 2), r - 1, r - 2)


def _fold(new: Graph, node: Node, m: Match) -> str | None:
    flags = list(transpose_flags(node))
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
    are private to the chain); `decide(new graph, fused_attention node, absorbed nodes)` accepts or
    declines each match (the new node not yet added; the absorbed nodes in order, the root last)."""
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


# --- horizontal fusion: projections of one operand batched into one matmul ---------------------------------

@dataclass(frozen=True, slots=True)
class Projection:
    """One matmul x @ w of a batch and its only reader, a transpose (after a reshape splitting its last
    axis, or not), which becomes a remap of the batched result."""

    matmul: Node
    reshape: Node | None
    transpose: Node


BatchDecision = Callable[[Graph, tuple[Projection, ...], tuple[Node, ...]], bool]


def batch_projections(graph: Graph, decide: BatchDecision) -> tuple[Graph, list[Change]]:
    """The horizontal fusion of the module doc: every group of two or more 2-D matmuls of one left operand
    x whose right operands are parameters or constants of one shape (d x n) and dtype, each read only by
    a transpose (directly or through a reshape splitting its last axis: attention's head split), becomes
    one batched matmul x @ W (W the weights stacked, (count, d, n): a constant folded now when every
    weight is one, else a concat kernel of views), read by a remap per projection that replaces its
    transpose: the transpose composed with the reshape and the slice of its batch, so no slice kernel
    is added. A projection read otherwise (an epilogue, a graph output) stays a matmul of its own.
    `decide(new graph, projections, replacement nodes)` accepts or declines each group. Change kind:
    `batch-matmul`."""
    users, outputs = graph.users(), set(graph.outputs.values())
    groups: dict[tuple, list[Node]] = {}
    for n in graph.topo_order():
        if n.op != "matmul" or n.name in outputs:
            continue
        x, w = (graph[i] for i in n.inputs)
        if x.type.rank == 2 and w.type.rank == 2 and w.op in ("parameter", "constant") and x.name != w.name:
            groups.setdefault((x.name, w.type), []).append(n)
    new, changes = graph, []
    for members in groups.values():
        if len(members) < 2:
            continue
        projections = tuple(p for p in (_projection(graph, users, outputs, m) for m in members) if p is not None)
        if len(projections) < 2:
            continue
        batched = _batched(new, projections)
        if batched is None:
            continue
        candidate, replacement = batched
        if decide(new, projections, tuple(replacement.nodes.values())):
            new = candidate
            ops = ", ".join(f"%{p.matmul.name} -> %{p.transpose.name}" for p in projections)
            changes.append(Change("batch-matmul", f"{ops} = remaps of one matmul of %{members[0].inputs[0]}"))
    return new, changes


def _projection(graph: Graph, users: dict[str, list[str]], outputs: set[str], mm: Node) -> Projection | None:
    s, n = mm.shape
    reader = users[mm.name]
    if len(reader) != 1:
        return None
    after = graph[reader[0]]
    reshape = None
    if (after.op == "reshape" and after.name not in outputs and len(users[after.name]) == 1
            and after.shape[0] == s and math.prod(after.shape[1:]) == n):
        reshape, after = after, graph[users[after.name][0]]
    if after.op == "transpose":  # the remap takes its name: it may be an output
        return Projection(mm, reshape, after)
    return None


def _remap_attrs(index: int, split: tuple[int, ...], perm: tuple[int, ...], shape: tuple[int, ...]) -> dict:
    """The remap reading batch `index` of the batched (count, s, n) result for a projection reshaped to
    (s, *split) (prod(split) = n) and transposed by `perm` (to `shape`): output coordinate k is the
    reshaped coordinate perm[k], so row s of the input is output axis perm⁻¹(0) and column n is
    sum_j stride_j x output axis perm⁻¹(1 + j)."""
    inverse = [perm.index(m) for m in range(len(perm))]
    unit = [[int(k == inverse[m]) for k in range(len(shape))] for m in range(len(perm))]
    column = [sum(math.prod(split[j + 1:]) * unit[1 + j][k] for j in range(len(split))) for k in range(len(shape))]
    return {"shape": tuple(shape), "coef": ((0,) * len(shape), tuple(unit[0]), tuple(column)),
            "offset": (index, 0, 0), "wrap": (False, False, False), "fill": 0.0}


def _batched(graph: Graph, projections: tuple[Projection, ...]) -> tuple[Graph, Graph] | None:
    """`graph` with the projections batched, and a graph of the replacement nodes alone (None: the
    group is not in `graph` any more)."""
    if any(p.matmul.name not in graph for p in projections):
        return None
    removed = {n.name for p in projections for n in (p.matmul, p.reshape, p.transpose) if n is not None}
    new = graph.derive()
    for node in graph.topo_order():
        if node.name not in removed:
            new.add_node(node)
    replacement = Graph("batched")
    x = projections[0].matmul.inputs[0]
    weights = [graph[p.matmul.inputs[1]] for p in projections]
    d, n = weights[0].shape
    if all(w.op == "constant" for w in weights):  # stacked at compile time
        stacked = new.constant(np.stack([w.attrs["value"] for w in weights]), weights[0].dtype)
    else:
        stacked = new.emit("concat", [new.reshape(w.name, (1, d, n)) for w in weights], {"axis": 0})
    batch = new.matmul(x, stacked)
    for i, p in enumerate(projections):
        split = p.reshape.shape[1:] if p.reshape is not None else (n,)
        new.emit("remap", (batch,), _remap_attrs(i, split, tuple(p.transpose.attrs["perm"]), p.transpose.shape),
                 name=p.transpose.name)
    for out, name in graph.outputs.items():
        new.output(name, out)
    keep = set(new.nodes) - set(graph.nodes) | {p.transpose.name for p in projections}
    for node in new.topo_order(keep):
        if node.name in keep:
            replacement.add_node(node)
    return new, replacement
