"""Tiny simulated kernels (well under a second each), simulated once per session, and their JSON files."""

import pytest

from gpusim import simulate
from gpusim.cli.common import emit_json


@pytest.fixture(scope="session")
def saxpy():
    return simulate("saxpy", "a100", n=4096)


@pytest.fixture(scope="session")
def matmul():
    return simulate("matmul_tiled", "a100", n=32)


@pytest.fixture(scope="session")
def result_files(tmp_path_factory, saxpy, matmul):
    """{"saxpy": path, "matmul": path} of `gpusim run --json`-shaped files."""
    folder = tmp_path_factory.mktemp("results")
    paths = {}
    for name, r in (("saxpy", saxpy), ("matmul", matmul)):
        paths[name] = folder / f"{name}.json"
        emit_json(r.to_dict(), str(paths[name]))
    return paths
