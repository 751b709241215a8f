"""Test-session set-up shared by every layer's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def compiled_timing_engine():
    """Compile the timing engine once, at the start of the session, into Numba's on-disk cache, so that
    the tests that start gpusim in subprocesses load it instead of each compiling it anew."""
    from gpusim.timing import warm_up

    warm_up()
