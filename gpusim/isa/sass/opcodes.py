"""The SASS opcodes gpusim executes (sm_80 and sm_90, as ptxas emits them for ordinary CUDA C kernels):
for each, the execution-unit class that runs it (the functional statistics' `by_unit`; the timing model
reads its port, latency and issue interval from the architecture's table, gpusim/data/sass/sm_XX.yaml)
and the modifiers it takes. An opcode or modifier outside this table is a located AssemblyError when the
kernel is read, never a silently wrong value. Facts on what each computes: docs/isa.md, "SASS".

Modifiers that change nothing gpusim models are accepted and ignored: cache and eviction hints (.EF, .EL,
.LU, .EU, .NA, .CONSTANT, .BYPASS, .LTC64B/128B/256B), memory ordering and scope (.STRONG, .SYS, .GPU, .SM,
.CTA, .WEAK), the `.E` of 64-bit generic addresses, .DEFER_BLOCKING, .MMA on HFMA2 (which pipe issues it),
.NOINC/.NODEC/.REL/.ABS on calls and returns, and .reuse on operands."""

from __future__ import annotations

from dataclasses import dataclass

from gpusim.isa.opcodes import Unit

HINTS = frozenset({"E", "EF", "EL", "LU", "EU", "NA", "CONSTANT", "BYPASS", "LTC64B", "LTC128B", "LTC256B",
                   "STRONG", "SYS", "GPU", "SM", "CTA", "WEAK", "PRIVATE", "ZFILL", "ZD"})
MEM_WIDTHS = frozenset({"U8", "S8", "U16", "S16", "32", "64", "128"})
CMP = frozenset({"EQ", "NE", "LT", "LE", "GT", "GE", "F", "T"})
FCMP = CMP | frozenset({"EQU", "NEU", "LTU", "LEU", "GTU", "GEU", "NUM", "NAN", "MAX", "MIN"})
BOOL = frozenset({"AND", "OR", "XOR"})
INT_T = frozenset({"U32", "S32", "U64", "S64"})
ROUND = frozenset({"RN", "RZ", "RM", "RP"})
ATOM_OPS = frozenset({"ADD", "MIN", "MAX", "INC", "DEC", "AND", "OR", "XOR", "EXCH", "CAS", "POPC"})
ATOM_T = frozenset({"32", "64", "S32", "U32", "F32", "FTZ", "RN", "U64", "S64", "F64"})


@dataclass(frozen=True, slots=True)
class SassOp:
    name: str
    unit: Unit
    mods: frozenset[str]
    doc: str = ""


def _op(name, unit, mods=(), doc=""):
    return SassOp(name, unit, frozenset(mods), doc)


SASS_OPCODES: dict[str, SassOp] = {o.name: o for o in (
    # integer arithmetic and logic
    _op("IMAD", Unit.INT, {"WIDE", "HI", "X", "MOV", "IADD", "SHL", "U32", "S32"},
        "d = a * b + c (low 32 bits); .WIDE: 64-bit d = a * b + c.64; .HI: d = (a * b + c.64) >> 32; .X: + carry"),
    _op("IADD3", Unit.INT, {"X"}, "d = a + b + c (-x negates, ~x inverts); carries out to up to two predicates"),
    _op("VIADD", Unit.INT, (), "d = a + b (sm_90)"),
    _op("IABS", Unit.INT, (), "d = |a|"),
    _op("LEA", Unit.INT, {"HI", "X", "SX32"}, "d = (a << s) + b; .HI: the high word of (c:a) << s, + b"),
    _op("LOP3", Unit.INT, {"LUT"}, "d = LUT(a, b, c): bit i of the 8-bit table for bits (a, b, c) = i"),
    _op("SHF", Unit.INT, {"L", "R", "U32", "S32", "U64", "S64", "HI", "W"}, "funnel shift of (c:a) by b"),
    _op("PRMT", Unit.INT, (), "byte permute of (b:a) by the selector c"),
    _op("POPC", Unit.INT, (), "d = number of set bits"),
    _op("FLO", Unit.INT, {"U32", "S32", "SH"}, "d = position of the highest set bit (-1: none)"),
    _op("BREV", Unit.INT, (), "d = a with its bits reversed"),
    _op("IMNMX", Unit.INT, {"U32", "S32"}, "d = min(a, b) with PT, max with !PT"),
    _op("VIMNMX", Unit.INT, {"U32", "S32"}, "d = min(a, b) with PT, max with !PT (sm_90)"),
    _op("ISETP", Unit.INT, CMP | {"U32", "S32", "EX"} | BOOL, "p = (a CMP b) BOOL c, q = !(a CMP b) BOOL c"),
    _op("SEL", Unit.INT, (), "d = p ? a : b"),
    _op("MOV", Unit.INT, (), "d = a"),
    _op("PLOP3", Unit.INT, {"LUT"}, "p = LUT(a, b, c) of predicates, q = LUT2(a, b, c)"),
    _op("P2R", Unit.INT, {"B0", "B1", "B2", "B3"}, "d = the predicates P0..P6 as bits, masked"),
    _op("R2P", Unit.INT, {"B0", "B1", "B2", "B3"}, "P0..P6 = bits of a, masked"),
    _op("CS2R", Unit.INT, {"32"}, "d (64-bit) = a special register (SRZ: zero)"),
    _op("S2R", Unit.INT, (), "d = a special register (thread and block indices, lane, lane masks)"),
    # uniform datapath: one value for the warp
    _op("UMOV", Unit.INT, (), "uniform d = a"),
    _op("UIADD3", Unit.INT, {"X"}, "uniform IADD3"),
    _op("UIMAD", Unit.INT, {"WIDE", "HI", "U32"}, "uniform IMAD"),
    _op("ULEA", Unit.INT, {"HI", "X", "SX32"}, "uniform LEA"),
    _op("ULOP3", Unit.INT, {"LUT"}, "uniform LOP3"),
    _op("USHF", Unit.INT, {"L", "R", "U32", "S32", "U64", "S64", "HI", "W"}, "uniform SHF"),
    _op("USEL", Unit.INT, (), "uniform SEL"),
    _op("UISETP", Unit.INT, CMP | {"U32", "S32", "EX"} | BOOL, "uniform ISETP"),
    _op("UPLOP3", Unit.INT, {"LUT"}, "uniform PLOP3"),
    _op("ULDC", Unit.INT, {"64", "U8", "S8", "U16", "S16"}, "uniform d = constant bank word"),
    _op("S2UR", Unit.INT, (), "uniform d = a special register"),
    _op("R2UR", Unit.INT, (), "uniform d = a of the warp's first active lane"),
    _op("UFLO", Unit.INT, {"U32"}, "uniform FLO"),
    _op("UPOPC", Unit.INT, (), "uniform POPC"),
    _op("UBREV", Unit.INT, (), "uniform BREV"),
    _op("VOTEU", Unit.INT, {"ANY", "ALL"}, "uniform ballot of a predicate over the active lanes"),
    # constant bank
    _op("LDC", Unit.INT, {"64", "U8", "S8", "U16", "S16"}, "d = constant bank c[bank][a + offset]"),
    # float
    _op("FADD", Unit.FP32, {"FTZ", "SAT"} | ROUND, "d = a + b"),
    _op("FMUL", Unit.FP32, {"FTZ", "SAT", "D2", "D4", "M2", "M4", "M8"} | ROUND, "d = a * b"),
    _op("FFMA", Unit.FP32, {"FTZ", "SAT"} | ROUND, "d = a * b + c, rounded once"),
    _op("FMNMX", Unit.FP32, {"FTZ"}, "d = min(a, b) with PT, max with !PT; NaN loses to a number"),
    _op("FSEL", Unit.FP32, (), "d = p ? a : b"),
    _op("FSETP", Unit.FP32, FCMP | BOOL | {"FTZ"}, "p = (a CMP b) BOOL c, q = !(a CMP b) BOOL c"),
    _op("MUFU", Unit.SFU, {"RCP", "RSQ", "SQRT", "EX2", "LG2", "SIN", "COS", "TANH", "RCP64H", "RSQ64H"},
        "d = an approximate function of a"),
    _op("DADD", Unit.FP64, ROUND, "d.64 = a.64 + b.64"),
    _op("DMUL", Unit.FP64, ROUND, "d.64 = a.64 * b.64"),
    _op("DFMA", Unit.FP64, ROUND, "d.64 = a.64 * b.64 + c.64"),
    _op("DSETP", Unit.FP64, FCMP | BOOL, "p = (a.64 CMP b.64) BOOL c"),
    _op("HFMA2", Unit.FP32, {"MMA", "FTZ", "F32", "BF16_V2", "RELU"}, "two f16 lanes: d = a * b + c"),
    _op("HADD2", Unit.FP32, {"FTZ", "F32"}, "two f16 lanes: d = a + b (.F32: one f32 result)"),
    _op("HMUL2", Unit.FP32, {"FTZ"}, "two f16 lanes: d = a * b"),
    # conversions
    _op("F2I", Unit.SFU, {"FTZ", "TRUNC", "FLOOR", "CEIL", "NTZ", "U32", "S32", "U64", "S64", "F64", "U8", "S8",
                          "U16", "S16"}, "float -> integer, saturating, NaN -> 0"),
    _op("I2F", Unit.SFU, {"U32", "S32", "U64", "S64", "F64", "F16", "U16", "S16", "U8", "S8"} | ROUND,
        "integer -> float"),
    _op("I2FP", Unit.FP32, {"F32", "U32", "S32"} | ROUND, "integer -> f32 (sm_90, on the FMA pipe)"),
    _op("F2F", Unit.SFU, {"F16", "F32", "F64", "BF16", "FTZ"} | ROUND, "float -> float of another width"),
    _op("F2FP", Unit.FP32, {"PACK_AB", "F16", "BF16", "F32", "RZ"}, "two f32 -> packed f16x2 / bf16x2"),
    # warp-level
    _op("SHFL", Unit.LDST, {"DOWN", "UP", "BFLY", "IDX"}, "d = a of another lane of the warp"),
    _op("VOTE", Unit.INT, {"ANY", "ALL", "EQ"}, "d = ballot of p over the active lanes; q = any/all/eq"),
    # memory
    *(_op(n, Unit.LDST, MEM_WIDTHS | HINTS, d) for n, d in (
        ("LDG", "d = global memory"), ("STG", "global memory = a"), ("LDS", "d = shared memory"),
        ("STS", "shared memory = a"), ("LDL", "d = local memory"), ("STL", "local memory = a"),
        ("LD", "d = memory at a generic (global) address"), ("ST", "generic (global) store"))),
    *(_op(n, Unit.LDST, ATOM_OPS | ATOM_T | HINTS, d) for n, d in (
        ("ATOMS", "shared atomic: d = old, memory = old OP b"), ("ATOMG", "global atomic: d = old, memory = old OP b"),
        ("ATOM", "generic (global) atomic"), ("RED", "global reduction (no result)"),
        ("REDG", "global reduction (no result; sm_90's name)"))),
    _op("LDGSTS", Unit.LDST, {"128", "64", "32"} | HINTS, "cp.async: global -> shared, no register"),
    _op("LDGDEPBAR", Unit.LDST, (), "cp.async.commit_group"),
    _op("DEPBAR", Unit.LDST, {"LE"}, "wait until at most N committed copy groups are in flight (DEPBAR.LE SB0, N)"),
    _op("LDSM", Unit.LDST, {"16", "M88", "MT88", "1", "2", "4"}, "ldmatrix: 8x8 b16 matrices from shared memory"),
    _op("MEMBAR", Unit.SYNC, {"SC", "ALL", "GPU", "CTA", "SYS", "VC"},
        "memory fence (the functional memory is sequentially consistent)"),
    _op("ERRBAR", Unit.SYNC, (), "error barrier (nothing to do)"),
    _op("CCTL", Unit.LDST, {"IVALL", "E", "PF1", "PF2"}, "cache control (nothing to do)"),
    # tensor cores
    _op("HMMA", Unit.TENSOR, {"16816", "1688", "F32", "F16", "BF16", "TF32"}, "mma.sync m16n8k16 / m16n8k8"),
    _op("IMMA", Unit.TENSOR, {"16832", "S8", "U8", "SAT"}, "mma.sync m16n8k32 .s8/.u8"),
    # control
    _op("BRA", Unit.BRANCH, {"U", "DIV", "CONV"}, "jump; a guarded one may diverge"),
    _op("EXIT", Unit.BRANCH, (), "the active lanes finish"),
    _op("CALL", Unit.BRANCH, {"REL", "ABS", "NOINC"}, "jump to a subroutine (the return address is in a register)"),
    _op("RET", Unit.BRANCH, {"REL", "ABS", "NODEC"}, "jump to the address in the register"),
    _op("BSSY", Unit.BRANCH, (), "convergence barrier: the lanes that must meet at its label"),
    _op("BSYNC", Unit.BRANCH, (), "wait for the lanes of the convergence barrier"),
    _op("WARPSYNC", Unit.BRANCH, {"ALL", "EXCLUSIVE"}, "the lanes of the mask converge"),
    _op("BAR", Unit.SYNC, {"SYNC", "DEFER_BLOCKING", "ARV"}, "block-wide barrier"),
    _op("NOP", Unit.INT, (), "nothing"),
    _op("YIELD", Unit.BRANCH, (), "a hint to switch warps (nothing to compute)"),
    _op("NANOSLEEP", Unit.BRANCH, (), "sleep (nothing to compute)"),
)}
