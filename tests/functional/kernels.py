"""Small helpers for running hand-written kernels in tests."""

from __future__ import annotations

import numpy as np

from gpusim.functional import GlobalMemory, Launch, block_streams, execute
from gpusim.isa import assemble


def run(src: str, grid, block, arrays: dict, scalars: dict | None = None, **kw):
    """Assemble `src`, allocate `arrays` (name -> numpy array), run, and return
    (outputs: name -> array read back, stats)."""
    prog = assemble(src, "test.sasm")
    mem = GlobalMemory()
    addrs = {k: mem.alloc_array(v, k) for k, v in arrays.items()}
    res = execute(prog, Launch.make(grid, block), {**addrs, **(scalars or {})}, mem, **kw)
    outs = {k: mem.read(addrs[k], v.dtype, v.size).reshape(v.shape) for k, v in arrays.items()}
    return outs, res.stats


def streams(src: str, grid, block, arrays: dict, scalars: dict | None = None):
    prog = assemble(src, "test.sasm")
    mem = GlobalMemory()
    addrs = {k: mem.alloc_array(v, k) for k, v in arrays.items()}
    return list(block_streams(prog, Launch.make(grid, block), {**addrs, **(scalars or {})}, mem))


def elementwise(op_lines: str, decl: str, a, b=None, c=None, out_dtype=None, n=None):
    """Run `op_lines` computing %d from %a, %b, %c (loaded per thread from arrays a, b, c) and
    return the per-thread results."""
    a = np.asarray(a)
    n = n or a.size
    ins = {"a": a, "b": np.asarray(b if b is not None else a), "c": np.asarray(c if c is not None else a)}
    out = np.zeros(n, dtype=out_dtype or a.dtype)

    def w(x):
        return x.dtype.itemsize

    def ty(x):
        return {"f": "f", "i": "s", "u": "u", "b": "u"}[x.dtype.kind] + str(8 * w(x))

    src = f"""
.kernel ew
.param .u64 pa
.param .u64 pb
.param .u64 pc
.param .u64 pout
.reg .u32 %t
.reg .u64 %base, %off, %addr
.reg .pred %p
{decl}
    mov.u32 %t, %tid.x
    ld.param.u64 %base, [pa]
    mul.wide.u32 %off, %t, {w(ins['a'])}
    add.u64 %addr, %base, %off
    ld.global.{ty(ins['a'])} %a, [%addr]
    ld.param.u64 %base, [pb]
    mul.wide.u32 %off, %t, {w(ins['b'])}
    add.u64 %addr, %base, %off
    ld.global.{ty(ins['b'])} %b, [%addr]
    ld.param.u64 %base, [pc]
    mul.wide.u32 %off, %t, {w(ins['c'])}
    add.u64 %addr, %base, %off
    ld.global.{ty(ins['c'])} %c, [%addr]
{op_lines}
    ld.param.u64 %base, [pout]
    mul.wide.u32 %off, %t, {w(out)}
    add.u64 %addr, %base, %off
    st.global.{ty(out)} [%addr], %d
    exit
"""
    prog = assemble(src, "ew.sasm")
    mem = GlobalMemory()
    addrs = {f"p{k}": mem.alloc_array(v) for k, v in ins.items()}
    addrs["pout"] = mem.alloc_array(out)
    execute(prog, Launch.make(1, n), addrs, mem)
    return mem.read(addrs["pout"], out.dtype, n)
