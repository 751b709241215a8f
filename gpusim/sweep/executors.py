"""Where a sweep's points run: `LocalExecutor` (a process pool on this machine's cores, or this process)
and `DaskExecutor` (a Dask distributed cluster: a scheduler's address, or a LocalCluster it starts).

Both have `run(fn, tasks)`, a generator of `(position in tasks, fn(task))` in the order the points finish.
A task whose worker dies yields `failure(exc)` in its place, so the sweep keeps every other result."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gpusim import progress
from gpusim.errors import GpusimError
from gpusim.sweep.worker import failure

Outcomes = Iterator[tuple[int, Any]]


def worker_signals() -> None:
    """A pool worker's initializer: workers leave Ctrl-C to the parent, which stops the sweep and keeps
    what is cached, and die quietly of SIGTERM (the parent's Python handler, which a forked worker
    inherits, would raise in the worker and print a traceback). They draw no progress bars of their own
    either: they share the parent's terminal, where the parent counts the points."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    progress.set_enabled(False)


def stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Stop `pool` now: cancel what has not started and terminate the workers running the rest."""
    workers = list((pool._processes or {}).values())  # no public handle on them before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        proc.terminate()


class LocalExecutor:
    """A process pool of `jobs` workers (default `os.cpu_count()`); `jobs=1` runs the points in this process."""

    def __init__(self, jobs: int | None = None):
        if jobs is not None and jobs < 1:
            raise GpusimError(f"--jobs {jobs}: must be at least 1")
        self.jobs = jobs or os.cpu_count() or 1

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Outcomes:
        """(position, fn(task)) for each task, as they finish."""
        if self.jobs == 1 or len(tasks) <= 1:
            for i, task in enumerate(tasks):
                with progress.off():  # the points draw no bars of their own, as pool workers do not
                    outcome = fn(task)
                yield i, outcome
            return
        pool = cf.ProcessPoolExecutor(max_workers=min(self.jobs, len(tasks)), initializer=worker_signals)
        try:
            futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
            for fut in cf.as_completed(futures):
                yield futures[fut], _outcome(fut)
        except BaseException:  # Ctrl-C, or the caller stopped early: stop now, not after the running points
            stop_pool(pool)
            raise
        pool.shutdown()


class DaskExecutor:
    """Points as Dask tasks on the cluster whose scheduler is at `address` (`tcp://HOST:PORT`), or on a
    LocalCluster of `workers` single-threaded workers (default `os.cpu_count()`; `processes=False` keeps
    them in this process) started for the sweep and closed after it. Needs the `distributed` extra."""

    def __init__(self, address: str | None = None, *, workers: int | None = None, processes: bool = True):
        self.address, self.workers, self.processes = address, workers, processes
        _distributed()  # fail now, with the extra's name, rather than mid-sweep

    def run(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Outcomes:
        """(position, fn(task)) for each task, as they finish on the cluster."""
        distributed = _distributed()
        with contextlib.ExitStack() as stack:
            if self.address is not None:
                try:
                    client = stack.enter_context(distributed.Client(self.address))
                except OSError as exc:  # refused, unreachable or timed out
                    raise GpusimError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
            else:
                with _sigint_ignored():  # the workers inherit it: Ctrl-C in a terminal stops the parent alone
                    cluster = stack.enter_context(distributed.LocalCluster(
                        n_workers=self.workers or os.cpu_count() or 1, threads_per_worker=1,
                        processes=self.processes, dashboard_address=":0", silence_logs=logging.ERROR))
                client = stack.enter_context(distributed.Client(cluster))
            futures = {client.submit(fn, task, pure=False): i for i, task in enumerate(tasks)}
            stack.callback(client.cancel, list(futures))
            for fut in distributed.as_completed(futures):
                yield futures[fut], _outcome(fut)


@contextlib.contextmanager
def _sigint_ignored():
    """Ignore SIGINT while processes are started, so that they begin with it ignored."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to change
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _outcome(fut) -> Any:
    try:
        return fut.result()
    except Exception as exc:  # the worker died or the task could not be sent: this point fails alone
        return failure(exc)


def _distributed():
    try:
        import dask.distributed
    except ImportError:
        raise GpusimError("running on Dask needs the optional extra: pip install -e \".[distributed]\" "
                          "(dask[distributed])") from None
    return dask.distributed


__all__ = ["DaskExecutor", "LocalExecutor", "stop_pool", "worker_signals"]
