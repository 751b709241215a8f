"""A first run compiles the engine's loop in this process while a second process compiles everything else a
simulation calls compiled (gpu.py `_compile_aside`, gpusim.timing `compile_aside`): the engine's views of the
units, its start, the feeder's stream pool and the LD/ST address stage. That process must compile the very
signatures a simulation calls, or the first run compiles them again after the loop; and the loop is compiled
for the machine's type before any view of it is built (`engine_type`), so the views' constructors are
left to the second process too."""

import subprocess
import sys
import textwrap

import numba
import pytest

from gpusim.timing import engine, gpu, jit, ldst, sm

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="compiled code only")


def test_compile_plan_gives_the_signature_a_simulation_calls():
    from gpusim.stats.simulate import simulate

    r = simulate("saxpy", "a100", n=4096)  # plans loads and a store through the address stage
    assert r.run.ok and len(ldst._plan.signatures) == 1
    ldst.compile_plan()
    assert len(ldst._plan.signatures) == 1  # (a second entry: compile_plan's argument types differ)


def test_after_compile_aside_a_simulation_calls_nothing_new_but_the_loop():
    """In a fresh process: compile_aside, then three kernels (global loads and stores, shared memory,
    barriers); of every compiled function only the engine's loop gains a signature (loaded from the test
    session's cache). A constructor, feeder step, address stage or functional lane loop (fma.rn.f32's,
    a shared load's) that compile_aside missed, or compiled for other argument types, would be named here."""
    code = textwrap.dedent("""
        from gpusim.functional import ieee, kernels
        from gpusim.timing import compile_aside, jit
        compile_aside()
        watched = jit.ENGINE_FUNCTIONS + [jit._make, ieee._compiled_fma_f32.dispatcher,
                                          kernels.load_shared_lanes.dispatcher]
        before = {id(d): len(d.signatures) for d in watched}
        from gpusim import simulate
        for name, p in (("saxpy", {"n": 4096}), ("matmul_tiled", {"n": 64}),
                        ("transpose_shared", {"rows": 64, "cols": 64})):
            assert simulate(name, "a100", **p).run.ok
        print(sorted(d.py_func.__qualname__ for d in watched if len(d.signatures) != before[id(d)]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "['run']"


def test_the_loop_is_compiled_for_the_type_of_the_machines_view():
    """engine_type (worked out from the NamedTuples) is the type to_struct's view has: the loop compiled
    for the one is the loop called with the other."""
    from gpusim.timing import _warm_up_kernel

    g, prog, launch, streams, _ = _warm_up_kernel()
    M, stage, _ = g.build(prog, launch)
    M, Ms, E, events, feeder, views = g.begin(M, stage, streams)
    assert jit.engine_type(M) == numba.typeof(Ms)
    assert jit.engine_type(events) == numba.typeof(E)
    assert jit.engine_type(M.W) == numba.typeof(jit.to_struct(M.W))
    assert jit.engine_type(M.W) != jit.engine_type(M.P)  # (types of different units differ)


def test_no_second_process_when_what_it_compiles_is_cached():
    from gpusim.timing import compile_aside

    compile_aside()  # (cached by now, in the test session's cache)
    assert gpu._compile_aside() is None


def test_the_issue_paths_single_callers_are_compiled_inside_their_callers():
    """run_sm, _step, issue, _issue_other and global_access have one caller each and are spliced into it
    (jit.njit_inline): not separately compiled engine functions, so the chain below the loop is not
    optimized and turned into machine code once per level."""
    listed = {id(d) for d in jit.ENGINE_FUNCTIONS}
    for fn in (sm.run_sm, sm._step, sm.issue, sm._issue_other, sm.global_access):
        assert fn.targetoptions.get("inline") == "always" and id(fn) not in listed
    assert id(engine.run) in listed and id(sm.next_instr) in listed


@numba.njit
def _next_instr_with_each_state(M, w, t):
    B = engine.borrow(M)  # (as the loop passes the machine)
    sm.next_instr(B, w, t, t + 1, sm.WAIT_STATE)
    sm.next_instr(B, w, t, t + 1, sm.LONG_SB)
    sm.next_instr(B, w, t, t + 1, sm.BARRIER_STATE)


def test_next_instr_is_compiled_once_whatever_state_its_callers_pass():
    """The warp states the issue path passes as constants are 64-bit values, not Python ints, which Numba
    would compile next_instr for once per constant (four compiles of it and of what it calls, where one
    does)."""
    from gpusim.timing import _warm_up_kernel

    g, prog, launch, streams, _ = _warm_up_kernel()
    M, stage, _ = g.build(prog, launch)
    M, Ms, E, events, feeder, views = g.begin(M, stage, streams)
    _next_instr_with_each_state.compile((numba.typeof(Ms), numba.types.int64, numba.types.int64))
    assert len(sm.next_instr.signatures) == 1
