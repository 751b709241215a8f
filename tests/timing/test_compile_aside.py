"""A first run compiles the LD/ST address stage (`ldst._plan`) in a second process while it compiles the
engine (gpu.py `_compile_aside`): that process must compile the very signature the feeder calls, or the
first run compiles it again after the engine."""

import numba
import pytest

from gpusim.timing import gpu, ldst

pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="compiled code only")


def test_compile_plan_gives_the_signature_a_simulation_calls():
    from gpusim.stats.simulate import simulate

    r = simulate("saxpy", "a100", n=4096)  # plans loads and a store through the address stage
    assert r.run.ok and len(ldst._plan.signatures) == 1
    ldst.compile_plan()
    assert len(ldst._plan.signatures) == 1  # (a second entry: compile_plan's argument types differ)


def test_no_second_process_when_the_address_stage_is_cached():
    ldst.compile_plan()  # (cached by now, in the test session's cache)
    assert gpu._compile_aside() is None
