"""Sweeps on a Dask distributed cluster give exactly the local results; without Dask, a clear error."""

import sys

import pytest

from gpusim.cli.main import main
from gpusim.errors import GpusimError
from gpusim.sweep import DaskExecutor, LocalExecutor, sweep

distributed = pytest.importorskip("dask.distributed")

GRID = {"block": [64, 128, 2048]}
VOLATILE = ("cached", "wall_seconds")


@pytest.fixture(scope="module")
def cluster():
    """One single-threaded worker in this process: light on a small machine."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c:
        yield c


def _stable(rows):
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


def test_a_distributed_sweep_gives_exactly_the_local_results(cluster):
    kw = {"grid": GRID, "params": {"n": 4096}, "overrides": {"sm_count": [54, 108]}}
    local = sweep("saxpy", "a100", executor=LocalExecutor(1), **kw)
    remote = sweep("saxpy", "a100", executor=DaskExecutor(cluster.scheduler_address), **kw)
    assert _stable(remote.rows) == _stable(local.rows)
    assert [r["status"] for r in remote.rows] == ["ok", "ok", "error"] * 2
    assert remote.best()["point"] == local.best()["point"]


def test_the_cli_runs_on_a_scheduler_address(cluster, tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "saxpy", "--block", "64,128", "--set", "n=4096", "--dask-scheduler",
                 cluster.scheduler_address, "--no-cache", "--csv", str(out)]) == 0
    assert "best" in capsys.readouterr().out and len(out.read_text().splitlines()) == 3


def test_a_local_cluster_started_for_the_sweep():
    s = sweep("saxpy", "a100", grid={"block": [128]}, params={"n": 2048},
              executor=DaskExecutor(workers=1, processes=False))
    assert s.rows[0]["status"] == "ok"


def test_without_dask_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(GpusimError, match=r'pip install -e "\.\[distributed\]"'):
        DaskExecutor()
    assert main(["sweep", "saxpy", "--dask", "--no-cache"]) == 2
