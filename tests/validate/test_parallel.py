"""`gpusim validate` and `validate --kernels` on worker processes (`--jobs N`, gpusim.analysis.parallel): the
same rows, in the same order, as one after the other; a piece that raises raises as it would have here."""

from __future__ import annotations

import dataclasses

import pytest

from gpusim.analysis.kernel_validation import validate_kernels
from gpusim.analysis.parallel import in_order
from gpusim.analysis.validate import validate
from gpusim.errors import GpusimError
from gpusim.sweep import LocalExecutor


def _timeless(rows):
    return [dataclasses.replace(r, seconds=0) for r in rows]


def test_figures_on_two_workers_are_the_serial_rows_in_order():
    figures = ["l1_hit_latency", "rsqrt_latency", "sin_latency", "shared_stride2_latency"]
    serial = validate("h200", figures=figures)
    pooled = validate("h200", figures=figures, executor=LocalExecutor(2))
    assert len(serial.rows) == 4
    assert _timeless(pooled.rows) == _timeless(serial.rows)
    assert pooled.markdown() == serial.markdown()


def test_kernels_on_two_workers_are_the_serial_rows_in_order():
    ask = {"kernels": ["saxpy", "transpose_naive"], "sizes": ["small"], "front_ends": ["sasm", "ptx"]}
    serial = validate_kernels("h200", **ask)
    seen = []
    pooled = validate_kernels("h200", **ask, executor=LocalExecutor(2), progress=seen.append)
    assert [(r.workload, r.front_end) for r in serial.rows] == [("saxpy", "sasm"), ("saxpy_cu", "ptx"),
                                                                  ("transpose_naive", "sasm")]
    assert _timeless(pooled.rows) == _timeless(serial.rows) and seen == pooled.rows


class _Shuffled:
    """An executor whose tasks finish last first, as a pool's may."""

    def run(self, fn, tasks):
        for i in reversed(range(len(tasks))):
            yield i, fn(tasks[i])


class _Kept(_Shuffled):
    """A shuffled executor that keeps the tasks it was given."""

    def run(self, fn, tasks):
        self.tasks = list(tasks)
        yield from super().run(fn, tasks)


def test_each_simulation_of_a_figure_is_a_task_of_its_own():
    """A figure's two sizes are two tasks (the 40 MiB chase's on two workers); the rows as serially, each row's
    seconds the sum of its simulations'."""
    figures = ["l1_hit_latency", "launch_overhead"]
    kept = _Kept()
    pooled = validate("h200", figures=figures, executor=kept)
    assert [(t.workload, t.params.get("steps", t.params.get("iters"))) for t in kept.tasks] == [
        ("latency_chase", 256), ("latency_chase", 512), ("op_chain", 0)]
    assert _timeless(pooled.rows) == _timeless(validate("h200", figures=figures).rows)
    assert all(r.seconds > 0 for r in pooled.rows)


def _reciprocal(x):
    return 1 / x


def test_in_order_yields_in_the_tasks_order_and_raises_where_a_task_raised():
    assert list(in_order(_reciprocal, [1, 2, 4], _Shuffled())) == [1.0, 0.5, 0.25]
    got = []
    with pytest.raises(ZeroDivisionError):
        for value in in_order(_reciprocal, [1, 0, 4], _Shuffled()):
            got.append(value)
    assert got == [1.0]  # what came before the failing task, nothing after it: as serially
    with pytest.raises(ZeroDivisionError):
        list(in_order(_reciprocal, [1, 0], LocalExecutor(2)))


class _Died:
    def run(self, fn, tasks):
        yield 0, {"error": "internal error: BrokenProcessPool: a process in the pool was terminated"}


def test_a_worker_that_died_is_one_error_line():
    with pytest.raises(GpusimError, match=r"^a worker failed: internal error: BrokenProcessPool"):
        list(in_order(_reciprocal, [1], _Died()))
