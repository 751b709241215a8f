"""Hand-written SASS listings for tests: one instruction (or a few) between loads of per-lane inputs and
stores of per-lane outputs, run through the executor, so each opcode's lanes are checked against a model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpusim.functional import GlobalMemory, Launch, execute
from gpusim.isa.program import Param
from gpusim.isa.sass import read_sass


def listing(body: list[str], name: str = "k", controls: list[int] | None = None) -> str:
    """A listing of `body` (instruction texts), 16 bytes apart; `controls`: each one's 23-bit control code
    (written into the second encoding word as ptxas does), none by default."""
    lines = [f"\t.section\t.text.{name},\"ax\",@progbits", f"{name}:"]
    for k, text in enumerate(body):
        if text.endswith(":"):
            lines.append(text)
            continue
        pc = sum(1 for t in body[:k] if not t.endswith(":"))
        hexs = ""
        if controls is not None:
            hexs = f" /* 0x{0:016x} */\n        /* 0x{controls[pc] << 41:016x} */"
        lines.append(f"        /*{pc * 16:04x}*/   {text} ;{hexs}")
    return "\n".join(lines) + "\n"


def program(body: list[str], params: list[tuple[str, str]], controls=None, shared: int = 0, arch: int = 90):
    """A SassProgram of `body` whose parameters (name, type) lie at sm_90's c[0x0][0x210...] in order."""
    prog = read_sass(listing(body, controls=controls), "<test>")
    off, ps = 0, []
    for name, t in params:
        size = 8 if t.endswith("64") else 4
        off = -(-off // size) * size
        ps.append(Param(name, t, off))
        off += size
    return replace(prog, params=tuple(ps), param_base=0x210, arch=arch, shared_window=shared)


# load lane i's inputs a[i], b[i], c[i] into R4, R5, R6 (pointers in params a, b, c), store R7 to d[i]
PROLOGUE = ["S2R R0, SR_TID.X", "LDC.64 R2, c[0x0][0x210]", "IMAD.WIDE.U32 R2, R0, 0x4, R2",
            "LDG.E R4, desc[UR4][R2.64]", "LDC.64 R2, c[0x0][0x218]", "IMAD.WIDE.U32 R2, R0, 0x4, R2",
            "LDG.E R5, desc[UR4][R2.64]", "LDC.64 R2, c[0x0][0x220]", "IMAD.WIDE.U32 R2, R0, 0x4, R2",
            "LDG.E R6, desc[UR4][R2.64]", "LDC.64 R2, c[0x0][0x228]", "IMAD.WIDE.U32 R2, R0, 0x4, R2"]
EPILOGUE = ["STG.E desc[UR4][R2.64], R7", "EXIT"]
PARAMS = [("a", "u64"), ("b", "u64"), ("c", "u64"), ("d", "u64")]


def run_lanes(ops: list[str], a, b=None, c=None, out_regs: int = 1, preds: bool = False) -> np.ndarray:
    """Run `ops` (reading R4, R5, R6 = a[i], b[i], c[i]; writing R7 [R8 ...]) on len(a) lanes; the lanes'
    R7 (or, with out_regs > 1, R7..R7+n-1 as columns) as uint32."""
    a = np.asarray(a).view(np.uint32) if np.asarray(a).dtype.itemsize == 4 else np.asarray(a, np.uint32)
    n = a.size
    b = np.zeros(n, np.uint32) if b is None else np.asarray(b).view(np.uint32)
    c = np.zeros(n, np.uint32) if c is None else np.asarray(c).view(np.uint32)
    stores = []
    for k in range(out_regs):
        stores += [f"LDC.64 R2, c[0x0][0x{0x228 + 8 * k:x}]", "IMAD.WIDE.U32 R2, R0, 0x4, R2",
                   f"STG.E desc[UR4][R2.64], R{7 + k}"]
    body = PROLOGUE[:-2] + ops + stores + ["EXIT"]
    params = PARAMS[:3] + [(f"d{k}", "u64") for k in range(out_regs)]
    prog = program(body, params)
    mem = GlobalMemory(1 << 16)
    args = {"a": mem.alloc_array(a), "b": mem.alloc_array(b), "c": mem.alloc_array(c)}
    outs = [mem.alloc_array(np.zeros(n, np.uint32)) for _ in range(out_regs)]
    args.update({f"d{k}": o for k, o in enumerate(outs)})
    execute(prog, Launch(1, n), args, mem)
    res = np.stack([mem.read(o, np.uint32, n) for o in outs], -1)
    return res[:, 0] if out_regs == 1 else res
