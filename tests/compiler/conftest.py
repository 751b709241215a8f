"""Fixtures of the compiler tests: no test writes to the user's cache, and one simulation cache shared
by the tests of a session (a kernel simulated by one test is not simulated again by another)."""

import pytest

from gpusim.compiler.cost import SimulatedCost
from gpusim.config import load_config


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSIM_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.fixture(scope="session")
def sim_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("simulated")


@pytest.fixture
def sim(sim_cache):
    return SimulatedCost(sim_cache)


@pytest.fixture(scope="session")
def a100():
    return load_config("a100")


@pytest.fixture(scope="session")
def gtx980():
    return load_config("gtx980")
