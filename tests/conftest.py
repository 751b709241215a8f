"""Test-session set-up shared by every layer's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def compiled_timing_engine():
    """Compile the timing engine once, at the start of the session, into Numba's on-disk cache, so that
    the tests that start gpusim in subprocesses load it instead of each compiling it anew."""
    from gpusim.timing import warm_up

    warm_up()


@pytest.fixture(autouse=True)
def progress_bars_by_default():
    """Each test starts with progress bars decided by the terminal: `main([..., "--quiet"])` switches them
    off for the rest of its process, as a command line does, which must not reach the next test."""
    from gpusim import progress

    progress.set_enabled(None)
    yield
    progress.set_enabled(None)
