"""The opcode table: the ONE place that says, for every opcode, which execution-unit class runs it,
which types and qualifiers it takes, its operands and what it computes.

Operand signature letters (`sig`):
  d  destination register of the instruction type (double width with `.wide`; first type of `cvt`)
  s  source of the instruction type: register, immediate, special register or shared symbol
     (second type of `cvt`; for `.wide`, the third source of `mad` is double width)
  u  source read as `.u32` (shift amounts, shuffle lane/delta)
  P  destination predicate register
  Q  source predicate register (may be negated: `!%p`)
  M  memory address `[%reg]`, `[%reg+imm]`, `[symbol+imm]`, `[imm]`
  L  label
  B  barrier number (immediate, optional)
`optional` trailing operands of `sig` may be left out (`shfl`'s clamp and member mask, `vote`'s mask).
The timing model reads a latency and a throughput per unit class from the YAML config, and per opcode
where the config's `opcodes:` table lists it (its names: `gpusim.config.vocab.OPCODE_NAMES`, checked
below)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gpusim.config.vocab import OPCODE_NAMES


class Unit(StrEnum):
    FP32 = "FP32"
    INT = "INT"
    FP64 = "FP64"
    SFU = "SFU"
    LDST = "LDST"
    BRANCH = "BRANCH"
    SYNC = "SYNC"
    TENSOR = "TENSOR"


# Arithmetic whose unit follows its type: integer ALU, FP32 pipe (also f16), FP64 pipe.
BY_TYPE = "by-type"
# Special functions and division: the SFU for .f32/.f16 (MUFU and its Newton steps), the FP64 pipe for .f64
# (ptxas's DFMA sequences around MUFU.RCP64H/RSQ64H), the integer ALU for integer division.
BY_TYPE_SFU = "by-type-sfu"

INT16_T = frozenset({"b16", "u16", "s16"})
INT_T = frozenset({"b32", "u32", "s32", "b64", "u64", "s64"})
SINT_T = frozenset({"u32", "s32", "u64", "s64"})
FLOAT_T = frozenset({"f16", "f32", "f64"})
BITS_T = frozenset({"b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64", "pred"})
ALL_T = INT_T | FLOAT_T
MEM_T = frozenset({"b8", "u8", "s8", "b16", "u16", "s16", "f16", "b32", "u32", "s32", "f32",
                   "b64", "u64", "s64", "f64"})
CMP = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
                 "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"})
SPACES = frozenset({"global", "shared", "param"})
ATOM_OPS = frozenset({"add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec"})
BOOL_OPS = frozenset({"and", "or", "xor"})
RND_F = frozenset({"rn", "rz", "rm", "rp"})  # IEEE rounding: nearest-even, toward zero, toward -inf, toward +inf
DIRECTED = frozenset({"rz", "rm", "rp"})
TESTP = frozenset({"finite", "infinite", "number", "notanumber", "normal", "subnormal"})
VEC = frozenset({"v2", "v4"})
RND_CVT = frozenset({"rn", "rna", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi"})
CVT_T = (MEM_T - {"b8", "b16", "b32", "b64"}) | {"bf16", "tf32", "f16x2", "bf16x2"}
PACKED_CVT = ("f16x2", "bf16x2")  # cvt.rn/.rz.f16x2.f32 d, a, b: two f32 rounded and packed in one .b32
# mma.sync.aligned shapes and their (A/B type -> C/D type); PTX ISA 9.7.13.4 (mma) and 9.7.13.4.8-10
# (fragment layouts of m16n8k8, m16n8k16 and m16n8k32)
MMA_SHAPES = {"m16n8k16": ("f16", "bf16"), "m16n8k8": ("tf32",), "m16n8k32": ("s8", "u8")}
MMA_DIMS = {"m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8), "m16n8k32": (16, 8, 32)}  # shape -> (M, N, K)
MMA_T = frozenset({"f32", "f16", "bf16", "tf32", "s32", "s8", "u8"})


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str
    unit: Unit | str  # a Unit, or BY_TYPE
    sig: str
    types: frozenset[str]  # allowed instruction types; empty: the opcode takes no type
    quals: tuple[frozenset[str], ...] = ()  # qualifier groups, at most one of each
    required: tuple[int, ...] = ()  # groups that must be given
    ntypes: int = 1
    doc: str = ""
    optional: int = 0  # trailing operands of `sig` that may be left out

    def unit_for(self, type_name: str | None) -> Unit:
        if self.unit not in (BY_TYPE, BY_TYPE_SFU):
            return Unit(self.unit)
        if type_name == "f64":
            return Unit.FP64
        if type_name in ("f32", "f16"):
            return Unit.SFU if self.unit == BY_TYPE_SFU else Unit.FP32
        return Unit.INT


def _op(name, unit, sig, types, quals=(), required=(), ntypes=1, doc="", optional=0):
    return OpSpec(name, unit, sig, frozenset(types), tuple(frozenset(q) for q in quals),
                  tuple(required), ntypes, doc, optional)


OPCODES: dict[str, OpSpec] = {
    o.name: o
    for o in (
        # data movement
        _op("mov", Unit.INT, "ds", ALL_T | INT16_T | {"pred"}, doc="d = a (register, immediate, special register or "
            "shared-symbol address)"),
        _op("cvt", Unit.INT, "ds", CVT_T, [RND_CVT, {"sat"}], ntypes=2,
            doc="d = convert(a) from the second type to the first; float->int rounds toward zero (default, "
            ".rzi), to nearest even (.rni), down (.rmi) or up (.rpi) and saturates, NaN -> 0; int->float and "
            "narrowing float conversions (to .f16, .bf16) round to nearest even (.rn, the default), toward "
            "zero (.rz), down (.rm) or up (.rp); .tf32 only from .f32 with .rna (nearest, ties away: "
            "cvt.rna.tf32.f32); between floats .rni/.rzi/.rmi/.rpi round to an integral value; "
            ".sat to a float clamps to [0, 1], NaN -> +0.0; .sat between integers clamps to the range; "
            "cvt.rn/.rz.f16x2.f32 (and .bf16x2) d, a, b rounds a and b and packs them, a in the upper half"),
        # integer and float arithmetic
        _op("cvta", Unit.INT, "ds", {"u64"}, [{"to"}, {"global"}], required=(1,),
            doc="generic <-> global address: the identity (a gpusim global address is its generic address); "
            "the INT pipe's move, as the SASS IADD/MOV it becomes where ptxas keeps it"),
        _op("add", BY_TYPE, "dss", ALL_T | INT16_T, [RND_F, {"sat"}], doc="d = a + b (integers wrap)"),
        _op("add3", Unit.INT, "dsss", INT_T, doc="d = a + b + c (wrapping): SASS's IADD3, which ptxas makes of two "
            "dependent integer adds; gpusim's ptxas model (gpusim/isa/ptxas) writes it, a .sasm kernel may too"),
        _op("sub", BY_TYPE, "dss", ALL_T | INT16_T, [RND_F, {"sat"}], doc="d = a - b (integers wrap)"),
        _op("mul", BY_TYPE, "dss", ALL_T | INT16_T, [{"lo", "hi", "wide"} | RND_F],
            doc="integers: .lo low half (default), .hi high half, .wide full double-width product (of 16- or "
            "32-bit sources); "
            "floats: d = a * b rounded"),
        _op("mad", BY_TYPE, "dsss", ALL_T | INT16_T, [{"lo", "hi", "wide"} | RND_F],
            doc="d = a * b + c (.lo/.hi/.wide as mul; for floats a fused multiply-add)"),
        _op("fma", BY_TYPE, "dsss", FLOAT_T, [RND_F], doc="d = a * b + c, one rounding"),
        _op("fadd", Unit.FP32, "dss", {"f32", "f16"}, doc="alias of add.f32"),
        _op("fmul", Unit.FP32, "dss", {"f32", "f16"}, doc="alias of mul.f32"),
        _op("div", BY_TYPE_SFU, "dss", ALL_T, [RND_F | {"approx", "full"}],
            doc="integers: quotient rounded toward zero; x/0 gives all ones (-1 signed), MIN/-1 gives MIN; "
            "floats: IEEE division rounded by .rn (default) .rz .rm .rp (runs on the SFU for f32/f16, the FP64 "
            "unit for f64); .approx/.full f32 only"),
        _op("rem", Unit.INT, "dss", SINT_T, doc="remainder with the sign of a; x%0 gives x"),
        _op("min", BY_TYPE, "dss", ALL_T, doc="d = min(a, b); floats: NaN loses to a number, -0.0 < +0.0"),
        _op("max", BY_TYPE, "dss", ALL_T, doc="d = max(a, b); floats: NaN loses to a number, -0.0 < +0.0"),
        _op("abs", BY_TYPE, "ds", {"s32", "s64"} | FLOAT_T, doc="d = |a| (abs of MIN is MIN)"),
        _op("neg", BY_TYPE, "ds", {"s32", "s64"} | FLOAT_T, doc="d = -a"),
        _op("copysign", BY_TYPE, "dss", {"f32", "f64"}, doc="d = b with the sign of a (PTX's operand order)"),
        _op("testp", BY_TYPE, "Ps", {"f32", "f64"}, [TESTP], required=(0,),
            doc="p = a is finite / infinite / a number / not a number / normal (zeros included) / subnormal"),
        # logic and shifts
        _op("and", Unit.INT, "dss", BITS_T, doc="bitwise and (logical on .pred)"),
        _op("or", Unit.INT, "dss", BITS_T, doc="bitwise or"),
        _op("xor", Unit.INT, "dss", BITS_T, doc="bitwise exclusive or"),
        _op("not", Unit.INT, "ds", BITS_T, doc="bitwise complement"),
        _op("shl", Unit.INT, "dsu", INT_T | INT16_T, doc="d = a << b; b >= width gives 0"),
        _op("shr", Unit.INT, "dsu", INT_T | INT16_T, doc="d = a >> b, arithmetic on .s types; b >= width gives 0 "
            "(or the sign on .s)"),
        _op("popc", Unit.INT, "ds", INT_T, doc="d = number of set bits of a"),
        # comparison and selection
        _op("setp", BY_TYPE, "Pss", ALL_T | INT16_T, [CMP, BOOL_OPS], required=(0,),
            doc="p = a CMP b; lo/ls/hi/hs compare unsigned; *u comparisons are true when either is NaN "
            "(equ..geu, num, nan need a float type); with .and/.or/.xor a fourth operand: "
            "p = (a CMP b) BOOL q"),
        _op("selp", Unit.INT, "dssQ", ALL_T | INT16_T, doc="d = p ? a : b"),
        # special function unit (and, for f64, the FP64 unit)
        *(_op(n, BY_TYPE_SFU, "ds", FLOAT_T, [{"approx", "full"} | RND_F, {"ftz"}], doc=d) for n, d in (
            ("rcp", "d = 1 / a rounded by .rn .rz .rm .rp (.f32, .f64); .approx: f32/f16 approximate, "
             ".approx.ftz.f64 PTX's 20-bit gross approximation"),
            ("sqrt", "d = sqrt(a) rounded by .rn .rz .rm .rp (.f32, .f64); .approx f32/f16"),
            ("rsqrt", "d = 1 / sqrt(a), approximate (.approx.f64 to nearest; .approx.ftz.f64 PTX's 20-bit gross "
             "approximation)"))),
        *(_op(n, Unit.SFU, "ds", {"f32", "f16"}, [{"approx", "rn", "full"}], doc=d) for n, d in (
            ("sin", "d = sin(a), a in radians"), ("cos", "d = cos(a), a in radians"),
            ("ex2", "d = 2 ** a"), ("lg2", "d = log2(a)"))),
        # memory
        _op("ld", Unit.LDST, "dM", MEM_T, [SPACES, VEC], required=(0,),
            doc="d = memory[address]; sub-word loads zero- or sign-extend into a 32/64-bit register; .v2/.v4: "
            "{d0, d1[, d2, d3]} = the 2 or 4 consecutive elements at address (aligned to the vector's size), "
            "one instruction"),
        _op("st", Unit.LDST, "Ms", MEM_T, [SPACES - {"param"}, VEC], required=(0,),
            doc="memory[address] = a (truncated to the width); .v2/.v4: {a0, a1[, a2, a3]} to consecutive "
            "elements"),
        _op("atom", Unit.LDST, "dMs", SINT_T | {"b32", "b64", "f32", "f64"}, [SPACES - {"param"}, ATOM_OPS],
            required=(0, 1), doc="d = old memory[address]; memory[address] = old OP b (cas: old == b ? c : old; "
            ".inc.u32: old >= b ? 0 : old + 1; .dec.u32: old == 0 or old > b ? b : old - 1), lanes to the same "
            "address apply one after another in lane order; .f64: add only"),
        _op("red", Unit.LDST, "Ms", SINT_T | {"b32", "b64", "f32", "f64"},
            [SPACES - {"param"}, ATOM_OPS - {"cas", "exch"}], required=(0, 1),
            doc="memory[address] = memory[address] OP a, no result"),
        # asynchronous copies (PTX ISA 9.7.9.25): global -> shared without registers
        _op("cp", Unit.LDST, "MMs", (), [{"async"}, {"ca", "cg", "commit_group", "wait_group", "wait_all"},
                                         {"shared"}, {"global"}], required=(0, 1), ntypes=0,
            doc="cp.async.ca/.cg.shared.global [dst], [src], N[, src-size]: copy N (4, 8 or 16; .cg: 16) bytes from "
            "global to shared memory in the background, no register written (with src-size, an immediate or .u32 "
            "register 0..N: only that many bytes read, the rest zeros); the copy joins the warp's open group. "
            "cp.async.commit_group closes the open group; cp.async.wait_group N waits until at most the N newest "
            "committed groups are still in flight (the others' bytes are then in shared memory); cp.async.wait_all "
            "commits and waits for all. Until its wait, a copy's destination still holds the old bytes"),
        # tensor cores (PTX ISA 9.7.13)
        _op("mma", Unit.TENSOR, "dsss", MMA_T, [{"sync"}, {"aligned"}, set(MMA_SHAPES), {"row"}, {"col"},
                                                {"satfinite"}], required=(0, 1, 2, 3, 4), ntypes=4,
            doc="mma.sync.aligned.SHAPE.row.col.DT.AT.BT.CT {d}, {a}, {b}, {c}: D = A x B + C for the warp's "
            "16xN A (row-major) and B (column-major) fragments, PTX's fragment layouts; m16n8k16 .f32.f16.f16.f32 "
            "and .f32.bf16.bf16.f32, m16n8k8 .f32.tf32.tf32.f32, m16n8k32 .s32.s8.s8.s32 (.u8); products exact, "
            "summed and rounded once to f32 (integers: exact, wrapping in s32; .satfinite clamps)"),
        _op("ldmatrix", Unit.LDST, "dM", {"b16"}, [{"sync"}, {"aligned"}, {"m8n8"}, {"x1", "x2", "x4"}, {"trans"},
                                                   {"shared"}], required=(0, 1, 2, 3, 5),
            doc="ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16 {d0[, d1, d2, d3]}, [a]: N 8x8 matrices of 16-bit "
            "elements from shared memory, lanes 8i..8i+7 giving the row addresses of matrix i; lane l receives "
            "row l/4, elements 2(l%4) and 2(l%4)+1 of matrix i in d_i (.trans: column l/4)"),
        # warp-level
        _op("shfl", Unit.LDST, "dsuuu", {"b32", "u32", "s32", "f32"}, [{"up", "down", "bfly", "idx"}, {"sync"}],
            required=(0,), optional=2,
            doc="d = a of lane (up: lane-b, down: lane+b, bfly: lane^b, idx: b); a source lane outside the "
            "warp or inactive gives the lane's own a. With a clamp operand c (PTX's `shfl.sync`) the source "
            "lane must also lie within the segment c describes (c[4:0] the last lane, c[12:8] the segment "
            "mask, as in PTX, whose c = 0x1f, the whole 32-lane warp, is the whole warp of any width); `d|p` "
            "also writes p = the source lane was valid. The member mask (the last operand) is read and "
            "ignored: the warp's active lanes take part"),
        _op("vote", Unit.INT, "dQu", {"pred", "b32", "b64"}, [{"any", "all", "ballot", "uni"}, {"sync"}],
            required=(0,), optional=1,
            doc="across the warp's active lanes: any/all/uni of p (.pred result), ballot: bit i set when lane "
            "i's p is true (a .b32 result holds lanes 0..31, a .b64 one lanes 0..63); a member mask operand "
            "(`vote.sync`) is read and ignored"),
        # control
        _op("bra", Unit.BRANCH, "L", (), [{"uni"}], ntypes=0,
            doc="jump; with a guard predicate lanes may diverge and reconverge at the immediate "
            "post-dominator"),
        _op("exit", Unit.BRANCH, "", (), ntypes=0, doc="the active lanes finish"),
        _op("bar", Unit.SYNC, "B", (), [{"sync"}], required=(0,), ntypes=0,
            doc="wait until every thread of the block reaches this barrier"),
        _op("membar", Unit.SYNC, "", (), [{"cta", "gl", "sys"}], required=(0,), ntypes=0,
            doc="memory fence: the functional model's memory is sequentially consistent, so it orders nothing "
            "more; the timing model charges the SYNC unit's issue"),
        _op("fence", Unit.SYNC, "", (), [{"sc", "acq_rel"}, {"cta", "cluster", "gpu", "sys"}], required=(1,),
            ntypes=0, doc="memory fence (PTX `fence.sc/.acq_rel.scope`), as membar"),
    )
}

_ROUNDED = frozenset({"add", "sub", "mul", "mad", "fma", "div", "rcp", "sqrt"})


def type_rule(name: str, quals: tuple[str, ...] | list[str], types: tuple[str, ...] | list[str]) -> str | None:
    """What the table's qualifier groups cannot say: which qualifiers a type takes (PTX ISA 9.7.3). None when
    `name.quals.types` is well formed, else the reason."""
    q, t = set(quals), types[0] if types else None
    if q & DIRECTED and name in _ROUNDED and t not in ("f32", "f64"):
        return f"directed rounding (.rz .rm .rp) of {name} needs .f32 or .f64"
    if "ftz" in q and not (name in ("rcp", "rsqrt") and t == "f64" and "approx" in q):
        return ".ftz is read only as rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64"
    if t == "f64" and name in ("div", "sqrt") and q & {"approx", "full"}:
        return f"{name}.f64 rounds by .rn .rz .rm .rp (.approx and .full are .f32 forms)"
    if t == "f64" and name == "rcp" and q & {"approx", "full"} and q != {"approx", "ftz"}:
        return "rcp.f64 is rcp.rn/.rz/.rm/.rp.f64 or rcp.approx.ftz.f64"
    if name == "rsqrt" and q & (DIRECTED | {"full"}):
        return "rsqrt is approximate: use .approx"
    if t == "f64" and name in ("atom", "red") and not q & {"add"}:
        return f"{name}.f64 is {name}.add.f64 only"
    return None


if tuple(OPCODES) != OPCODE_NAMES:  # the config's `opcodes:` table is validated against OPCODE_NAMES
    raise ImportError("gpusim.config.vocab.OPCODE_NAMES must list the opcodes of gpusim/isa/opcodes.py in order: "
                      f"{tuple(OPCODES)}")
