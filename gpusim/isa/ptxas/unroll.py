"""Counted inner loops unrolled by UNROLL, as ptxas does: in the real sm_90 SASS of matmul_naive,
`for (k = 0; k < n; k++)` runs 16 iterations per trip (nvcc's PTX has it 4x unrolled, ptxas unrolls that
4x again), the loads of several iterations issued ahead of their FFMAs; softmax's `j += blockDim.x` and
histogram's grid-stride loops, whose step is not a constant, stay one load per iteration.

A loop qualifies when it is
- one basic block ending in its own backward branch `@p bra HEAD` (bottom-tested, entered only at HEAD,
  no exit, branch or label inside; so it is innermost);
- counted: p comes from the body's last `setp.CMP.T p, i, N` (or `N, i`), i is a 32-bit integer
  register written once in the body, before the setp, by `add i, i, C` / `sub i, i, C` with C a nonzero
  immediate, and N is an immediate or a register the body does not write; the loop goes on while
  i < N / i <= N (C > 0), i > N / i >= N (C < 0) or i != N (C = +-1), signed or unsigned as the setp;
- free of warp-synchronous and ordering operations (bar, shfl, vote, mma, ldmatrix, cp.async, membar,
  fence), and no longer than MAX_BODY instructions; p is read by the branch only;
- not marked `.pragma "nounroll"` in PTX (nvcc's mark on the remainder loops of the loops it unrolled).
Anything else is left as it is.

The loop becomes (K = (UNROLL-1)*|C|; `lim` computed once, saturating, so that `i < lim` holds exactly when
the next UNROLL tests would all pass, with no wrap-around):

        sub.sat.T lim, N, K              // (add.sat for a descending loop; N an immediate: lim too)
    HEAD:                                // the next iteration runs (the loop's entry, or a test passed)
        setp.lt.T q, i, lim              // and the UNROLL - 1 after it?
        @!q bra ONE
        body (copy 1) ... body (copy UNROLL)    // the tests left out; registers local to an
        setp.CMP.T p, i, N                      // iteration renamed in copies 2..UNROLL
        @p bra HEAD                      // the last copy's test
        bra EXIT
    ONE:
        body; setp.CMP.T p, i, N         // one iteration as written
        @p bra HEAD
    EXIT:

so no iteration runs that the original would not have run (nothing is speculated past the loop's exit),
and every register live after the loop holds what it held. A register is renamed when the body writes
it and it is live neither at the loop's head nor after the loop: its value never crosses an iteration.
One header, HEAD, takes both back edges (as one loop, the sampler's loop caps cut the unrolled and the
single iterations alike: a loop of its own for the rest would run whatever a cut left).
(`i != N` takes `sub.u32 t, N, i; setp.ge.u32 q, t, UNROLL` instead of the lim test.)"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusim.isa.program import Instruction, Operand, Program
from gpusim.isa.ptxas.code import Code, Label, branch, imm, make, reg
from gpusim.isa.ptxas.dataflow import liveness
from gpusim.isa.types import TYPES

UNROLL = 4  # ptxas's factor seen in matmul_naive's SASS: 4x over nvcc's 4x unrolled PTX (16 per trip)
MAX_BODY = 32  # instructions of a loop body (test and branch included) still unrolled: a model assumption
SYNC_OPS = frozenset({"bar", "shfl", "vote", "mma", "ldmatrix", "cp", "membar", "fence"})
INVERSE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le",
           "lo": "hs", "hs": "lo", "ls": "hi", "hi": "ls"}
MIRROR = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le",
          "lo": "hi", "hi": "lo", "ls": "hs", "hs": "ls"}
UP = {"lt": "lt", "le": "le", "lo": "lt", "ls": "le"}  # i rising to N
DOWN = {"gt": "gt", "ge": "ge", "hi": "gt", "hs": "ge"}  # i falling to N


@dataclass(frozen=True, slots=True)
class CountedLoop:
    head: int  # pc of the first body instruction
    end: int  # pc of the backward branch
    setp: int  # pc of the test
    induction: int  # register i
    step: int  # C, signed
    cmp: str  # the continue condition `i CMP N`, normalised: lt/le (rising), gt/ge (falling) or ne
    type: str  # the setp's type (signedness of the comparison)
    bound: Operand  # N (an immediate or a register)


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def counted_loop(prog: Program, end: int, targeted: set[int]) -> CountedLoop | None:
    """The counted loop closed by the branch at `end`, or None when it is not one the pass unrolls."""
    instrs = prog.instructions
    br = instrs[end]
    if br.opcode != "bra" or br.guard < 0 or br.target > end:
        return None
    head = br.target
    if instrs[head].line in prog.nounroll:
        return None  # `.pragma "nounroll"` (PTX): ptxas leaves the loop as it is
    body = instrs[head:end]
    if not body or len(body) + 1 > MAX_BODY:
        return None
    if any(i.opcode in ("bra", "exit") or i.opcode in SYNC_OPS for i in body):
        return None
    if any(head < t <= end for t in targeted):
        return None
    p = br.guard
    defs_p = [i for i in body if p in i.regs_written()]
    if len(defs_p) != 1 or any(p in i.regs_read() for i in body):
        return None
    st = defs_p[0]
    if st.opcode != "setp" or st.guard >= 0 or len(st.srcs) != 2 or TYPES[st.type].bits != 32 \
            or not TYPES[st.type].is_int:
        return None
    cmp = next((q for q in st.quals if q in INVERSE), None)
    if cmp is None:
        return None
    if br.guard_negate:
        cmp = INVERSE[cmp]
    a, b = st.srcs
    written = set()
    for i in body:
        written.update(i.regs_written())
    for i_op, n_op, c in ((a, b, cmp), (b, a, MIRROR[cmp])):
        if i_op.kind != "reg" or (n_op.kind == "reg" and n_op.reg in written) or n_op.kind not in ("reg", "imm"):
            continue
        r = i_op.reg
        defs = [i for i in body if r in i.regs_written()]
        if len(defs) != 1:
            continue
        inc = defs[0]
        if inc.pc > st.pc or inc.guard >= 0 or inc.opcode not in ("add", "sub") or "sat" in inc.quals \
                or TYPES[inc.type].bits != 32 or not TYPES[inc.type].is_int:
            continue
        x, y = inc.srcs
        if inc.opcode == "add" and y.kind == "reg" and y.reg == r:
            x, y = y, x
        if x.kind != "reg" or x.reg != r or y.kind != "imm":
            continue
        step = _signed(int(y.value), 32) * (-1 if inc.opcode == "sub" else 1)
        if step == 0:
            continue
        if c in UP and step > 0:
            c = UP[c]
        elif c in DOWN and step < 0:
            c = DOWN[c]
        elif not (c == "ne" and abs(step) == 1):
            continue
        return CountedLoop(head, end, st.pc, r, step, c, st.type, n_op)
    return None


def unroll_loops(prog: Program) -> Program:
    targeted = {i.target for i in prog.instructions if i.opcode == "bra"}
    loops = [lp for i in prog.instructions if (lp := counted_loop(prog, i.pc, targeted)) is not None]
    if not loops:
        return prog
    live_in, live_out = liveness(prog)
    code = Code.of(prog)
    exits = {lp.head: _exit_label(code, lp.end + 1) for lp in loops}
    spans = {lp.head: lp for lp in loops}
    items: list = []
    end = -1  # while inside a loop already rewritten: the pc of its branch
    for it in code.items:
        if end >= 0:
            if not isinstance(it, Label) and it.pc == end:
                end = -1
            continue
        lp = None if isinstance(it, Label) else spans.get(it.pc)
        if lp is None:
            items.append(it)
            continue
        # the labels that stood at the loop's head (already in items) now mark its preheader
        items.extend(_unrolled(code, prog, lp, exits[lp.head], live_in, live_out))
        end = lp.end
    code.items = items
    return code.build()


def _bound_limit(lp: CountedLoop) -> int | None:
    """lim for an immediate N: the saturated N - K (N + K falling), as the setp's type holds it."""
    t = TYPES[lp.type]
    lo, hi = (-(1 << 31), (1 << 31) - 1) if t.kind == "s" else (0, (1 << 32) - 1)
    n = _signed(int(lp.bound.value), 32) if t.kind == "s" else int(lp.bound.value) & 0xFFFFFFFF
    return min(hi, max(lo, n + _limit_delta(lp)))


def _limit_delta(lp: CountedLoop) -> int:
    """lim = N + delta: K = (UNROLL-1)|C| below N rising (K-1 for <=), above it falling (K-1 for >=)."""
    k = (UNROLL - 1) * abs(lp.step)
    k = k - 1 if lp.cmp in ("le", "ge") else k
    return -k if lp.cmp in ("lt", "le") else k


def _check(code: Code, lp: CountedLoop, lim: Operand | None, q: int, like: Instruction) -> list[Instruction]:
    """q = at least UNROLL more iterations run from here (their tests would all pass)."""
    t = lp.type
    i = reg(lp.induction, t)
    if lp.cmp == "ne":
        d = code.fresh_register("u32", code.registers[lp.induction].name)
        n = lp.bound if lp.bound.kind == "imm" else reg(lp.bound.reg, "u32")
        n = replace(n, type="u32")
        a, b = (n, reg(lp.induction, "u32")) if lp.step > 0 else (reg(lp.induction, "u32"), n)
        return [make("sub", ("u32",), (reg(d, "u32"),), (a, b), like=like),
                make("setp", ("u32",), (reg(q, "pred"),), (reg(d, "u32"), imm(UNROLL, "u32")), quals=("ge",),
                     like=like)]
    cmp = "lt" if lp.cmp in ("lt", "le") else "gt"
    return [make("setp", (t,), (reg(q, "pred"),), (i, lim), quals=(cmp,), like=like)]


def _unrolled(code: Code, prog: Program, lp: CountedLoop, exit_label: str, live_in: list[int],
              live_out: list[int]) -> list:
    instrs = prog.instructions
    body = [instrs[pc] for pc in range(lp.head, lp.end) if pc != lp.setp]
    setp, br = instrs[lp.setp], instrs[lp.end]
    t = lp.type
    out: list = []
    # the preheader: lim
    lim: Operand | None = None
    if lp.cmp != "ne":
        if lp.bound.kind == "imm":
            lim = imm(_bound_limit(lp), t)
        else:
            limr = code.fresh_register(t, "%lim")
            delta = _limit_delta(lp)
            op = "sub" if delta < 0 else "add"
            out.append(make(op, (t,), (reg(limr, t),), (reg(lp.bound.reg, t), imm(abs(delta), t)), quals=("sat",),
                            like=setp))
            lim = reg(limr, t)
    q = code.fresh_register("pred", "%q")
    head, one = code.fresh_label("head"), code.fresh_label("one")
    out.append(Label(head))
    out += _check(code, lp, lim, q, setp)
    out.append(branch(one, like=br, guard=q, negate=True))
    # UNROLL copies of the body without their tests, then the last one's test
    carried = live_in[lp.head] | live_out[lp.end]
    local = sorted({r for ins in body for r in ins.regs_written() if not carried >> r & 1})
    for copy in range(UNROLL):
        names = {r: r if copy == 0 else code.fresh_register(prog.registers[r].type, prog.registers[r].name)
                 for r in local}
        out += [_renamed(ins, names) for ins in body]
    out.append(setp)
    out.append(replace(br, srcs=tuple(replace(o, name=head) if o.kind == "label" else o for o in br.srcs)))
    out.append(branch(exit_label, like=br))
    # one iteration as written, for the 0..UNROLL-1 left
    out.append(Label(one))
    out += list(instrs[lp.head:lp.end])
    out.append(replace(br, srcs=tuple(replace(o, name=head) if o.kind == "label" else o for o in br.srcs)))
    return out


def _exit_label(code: Code, pc: int) -> str:
    """A label at pc (the instruction after a loop): one that is there, or one added to the code."""
    k = next(k for k, it in enumerate(code.items) if not isinstance(it, Label) and it.pc == pc)
    if k > 0 and isinstance(code.items[k - 1], Label):
        return code.items[k - 1].name
    name = code.fresh_label("exit")
    code.items.insert(k, Label(name))
    return name


def _renamed(ins: Instruction, names: dict[int, int]) -> Instruction:
    if not names or all(v == k for k, v in names.items()):
        return ins

    def op(o: Operand) -> Operand:
        return replace(o, reg=names[o.reg]) if o.kind in ("reg", "addr") and o.reg in names else o

    return replace(ins, dsts=tuple(map(op, ins.dsts)), srcs=tuple(map(op, ins.srcs)),
                   guard=names.get(ins.guard, ins.guard))
