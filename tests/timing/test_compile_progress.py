"""The first run's compile, shown as it goes (issue 36): a bar of the engine's functions compiled so far,
naming the one being compiled, then one line with the time it took (gpusim.timing.jit.CompileProgress,
from Numba's compile events). Two small functions stand in for the engine, so nothing large compiles."""

from __future__ import annotations

import functools
import io

import numba
import pytest

from gpusim import progress
from gpusim.timing import jit

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="nothing compiles with NUMBA_DISABLE_JIT=1")


def test_the_compile_is_counted_function_by_function_then_reported(monkeypatch):
    @numba.njit
    def leaf(x):
        return x + 1

    @numba.njit
    def loop(x):
        return leaf(x) * 2

    @numba.njit
    def not_the_engines(x):
        return x - 1

    monkeypatch.setattr(jit, "ENGINE_FUNCTIONS", [leaf, loop])
    monkeypatch.setattr(progress, "bar", functools.partial(progress.bar, delay=0))  # drawn at once
    progress.set_enabled(True)
    stream = io.StringIO()
    jit.watch_compile(loop, stream)
    assert not_the_engines(3) == 2  # compiled, but not the engine's: not counted
    assert loop(3) == 8
    text = stream.getvalue()
    said = text.splitlines()[-1]
    assert "compiling the timing engine:   0%" in text and "| 0/2 [" in text  # out of the engine's two
    assert "leaf" in text  # the function being compiled, named as it compiles
    assert said.startswith("gpusim: timing engine compiled in ") and said.endswith(
        f"s (2 functions), cached in {numba.config.CACHE_DIR}")
    # the listener removed itself: a later compile draws nothing more
    assert leaf(1.5) == 2.5 and stream.getvalue() == text


def test_no_bar_where_bars_are_off_only_the_line(monkeypatch):
    @numba.njit
    def only(x):
        return x * 3

    monkeypatch.setattr(jit, "ENGINE_FUNCTIONS", [only])
    progress.set_enabled(False)
    stream = io.StringIO()
    jit.watch_compile(only, stream)
    assert only(2) == 6
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpusim: timing engine compiled in ")
    assert "(1 function)" in lines[0]


@numba.njit
def _unit(x):  # (reached through a module global)
    return x * 3


def test_the_bar_counts_only_what_the_loop_calls(monkeypatch):
    """A listed function the loop never calls (the feeder's, compiled by a first run's second process) is not
    in the bar's total: the bar of a first run reaches its end rather than stopping short of it. Callees are
    found through closures and module globals, at any depth."""
    @numba.njit
    def step(x):
        return _unit(x) - 1

    @numba.njit
    def engine_loop(x):
        return step(x) + step(x + 1)

    @numba.njit
    def feeder_only(x):
        return x // 2

    monkeypatch.setattr(jit, "ENGINE_FUNCTIONS", [_unit, step, engine_loop, feeder_only])
    assert len(jit.loop_functions(engine_loop)) == 3 and len(jit.loop_functions(step)) == 2
    assert jit.loop_functions(feeder_only) == {id(feeder_only)}


def test_the_engines_loop_calls_the_units_not_the_feeder():
    """On the real engine: the walk reaches the issue path (through the functions spliced into their
    callers), the L1 and the events' tree, and not the feeder, the address stage or the engine's start
    (which a first run's second process compiles): 106 of them were compiled by the loop's process on
    2026-12-07, and _replay, which the start compiled first, makes 107."""
    from gpusim.timing import coalescer, engine, feeder, l1, ldst, sm

    reached = jit.called_by(engine.run)
    for fn in (sm.next_instr, l1.load, l1.prefetch_line, engine._replay, engine.post):
        assert id(fn) in reached, fn.py_func.__qualname__
    for fn in (feeder._append_steps, ldst._plan, coalescer.lines_into, engine.start):
        assert id(fn) not in reached, fn.py_func.__qualname__
    assert len(jit.loop_functions(engine.run)) == 107
