"""The issue path's small functions are inlined by LLVM into their callers (gpusim/timing/jit.py, INLINE):
every name listed is an engine function, and a caller compiled now holds no call to one, with the
callee's effect intact."""

from __future__ import annotations

import importlib

import numba
import pytest
from numba.core import itanium_mangler, types

from gpusim.config import load_config
from gpusim.timing import jit
from gpusim.timing import subpartition as _sp
from gpusim.timing.jit import NEVER
from gpusim.timing.subpartition import make_subpartitions
from gpusim.timing.warp import QUEUED, WAITING, make_warps

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the compiled engine's machine code")


def test_every_listed_function_is_an_engine_function_and_its_symbol_prefix_is_numbas():
    engine = {id(d) for d in jit.ENGINE_FUNCTIONS}
    for q in jit.INLINE:
        module, name = q.rsplit(".", 1)
        fn = getattr(importlib.import_module(module), name)
        assert id(fn) in engine, q
        # the symbol Numba gives the function starts with the prefix the marking looks for
        assert itanium_mangler.mangle(q, [types.int64], abi_tags=("v1",)).startswith(jit._mangled(q)), q
    assert not itanium_mangler.mangle("gpusim.timing.sm.launch", [types.int64]).startswith(
        jit._mangled("gpusim.timing.sm.launch_pending"))


@numba.njit
def _two_cycles(P, W, g, t):
    a = _sp.begin_cycle(P, W, g, t)
    b = _sp.begin_cycle(P, W, g, t + 1)
    return a, b


def test_a_caller_holds_no_call_to_a_listed_function_and_its_effect_stands():
    """begin_cycle (too large for LLVM's own choice) inlined, and it still moves a warp whose wait is
    over into the ready lists: warp 3 waits until cycle 10 on port 1; at cycle 9 no port opens, at 10 it does."""
    P = make_subpartitions(load_config("a100"), 2, 4)
    W = make_warps(8, 4)
    W.port[3] = 1
    W.sp[3] = 1
    P.soonest[1] = NEVER
    P.next_time[1] = NEVER
    refs = jit.to_struct(P), jit.to_struct(W)
    _sp.wait_until(*refs, 3, 10)
    assert _two_cycles(*refs, 1, 8) == (False, False) and P.queued[1, 1] == 0 and W.where[3] == WAITING
    assert _two_cycles(*refs, 1, 9) == (False, True)
    assert P.queued[1, 1] == 1 and W.where[3] == QUEUED and P.nwake[1] == 0 and P.seen[1, 1] == 1
    ir = _two_cycles.inspect_llvm(_two_cycles.signatures[0])
    callee = jit._mangled("gpusim.timing.subpartition.begin_cycle")
    assert [ln for ln in ir.splitlines() if " call " in ln and callee in ln] == []
