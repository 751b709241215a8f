"""Before/expected helpers for the ptxas model's pass tests: a small kernel in, the expected kernel out,
compared as disassembly (labels and instructions; register declarations aside), and both run on the
functional executor to show the pass kept every value."""

from __future__ import annotations

import numpy as np

import gpusim
from gpusim.isa import assemble, disassemble
from gpusim.isa.program import Program


def body(prog: Program) -> list[str]:
    """The kernel's labels and instructions as disassembled text, one a line."""
    return [ln.strip() for ln in disassemble(prog).splitlines() if not ln.startswith(".")]


def assert_rewrites(fn, before: str, expected: str) -> Program:
    """`fn(assemble(before))` disassembles as `expected` does; returns the rewritten program."""
    out = fn(assemble(before))
    want = assemble(expected)
    assert body(out) == body(want), "\n" + "\n".join(body(out))
    return out


def assert_unchanged(fn, before: str) -> None:
    prog = assemble(before)
    assert body(fn(prog)) == body(prog)


def outputs(prog: Program, args: list, grid=1, block=32, cfg="h200") -> list[np.ndarray]:
    """Run `prog` functionally on copies of `args` (arrays and numbers) and return the arrays after."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpusim.launch(prog, grid, block, copies, config=cfg, mode="functional", ptxas_model=False)
    return [a for a in copies if isinstance(a, np.ndarray)]


def assert_same_values(a: Program, b: Program, args: list, grid=1, block=32) -> None:
    for x, y in zip(outputs(a, args, grid, block), outputs(b, args, grid, block), strict=True):
        np.testing.assert_array_equal(x, y)
