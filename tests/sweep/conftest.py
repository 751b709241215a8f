"""Fixtures of the sweep tests: no test writes to the user's cache, and a counter of the simulations run
in this process."""

import pytest

from gpusim.sweep import worker


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.fixture
def simulations(monkeypatch):
    """The params of each point simulated in this process (sweeps run with LocalExecutor(1))."""
    calls = []
    real = worker.simulate

    def counted(wl, cfg, **kw):
        calls.append(kw)
        return real(wl, cfg, **kw)

    monkeypatch.setattr(worker, "simulate", counted)
    return calls
