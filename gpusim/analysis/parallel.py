"""Independent pieces of an analysis on an executor, their results in the order they were asked for: the
figures of `gpusim validate`, the measured kernels of `validate --kernels`. An executor is anything with
`run(fn, tasks)` yielding `(position, fn(task))` as tasks finish — gpusim.sweep's `LocalExecutor` (a
process pool, `--jobs N`) or `DaskExecutor` — which the CLI builds; None runs them here, one after the
other. A piece that raises raises here, as it would have run here: the same error, the same results
before it, and nothing after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gpusim.errors import GpusimError


class _Raised:
    """What a task raised, carried back from its worker to be raised again in the caller."""

    def __init__(self, exc: BaseException):
        self.exc = exc


class _Catching:
    """`fn(task)`, or the exception it raised (picklable, for a process pool)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def __call__(self, task: Any) -> Any:
        try:
            return self.fn(task)
        except Exception as exc:
            return _Raised(exc)


def in_order(fn: Callable[[Any], Any], tasks: Sequence[Any], executor=None) -> Iterator[Any]:
    """fn(task) for each of `tasks`, in their order, each as soon as it and all before it have finished."""
    if executor is None:
        for task in tasks:
            yield fn(task)
        return
    done: dict[int, Any] = {}
    nxt = 0
    for i, outcome in executor.run(_Catching(fn), list(tasks)):
        done[i] = outcome
        while nxt in done:
            outcome = done.pop(nxt)
            if isinstance(outcome, _Raised):
                raise outcome.exc
            if isinstance(outcome, dict) and set(outcome) == {"error"}:  # (the worker died: the executor's failure)
                raise GpusimError(f"a worker failed: {outcome['error']}")
            yield outcome
            nxt += 1
