"""Acceptance 8: the closed-form FIFO server (gpusim/timing/fifo.py) against an explicit SimPy model
of the same server: one `simpy.Resource(capacity=1)` served first come first served, with a second
Resource of `queue_depth` slots for the bounded queue (a request holds a slot from when it is
accepted until its service starts)."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from gpusim.timing.fifo import FifoServer


def _simpy_fifo(arrivals, services, queue_depth=None):
    """(accepted, start) per request, from a SimPy model; requests are created in arrival order."""
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    slots = simpy.Resource(env, capacity=queue_depth) if queue_depth is not None else None
    accepted = [None] * len(arrivals)
    start = [None] * len(arrivals)

    def request(i, arrival, service):
        yield env.timeout(arrival)
        slot = None
        if slots is not None and server.count:  # it must wait: it needs a place in the queue
            slot = slots.request()
            yield slot
        accepted[i] = env.now
        with server.request() as req:
            yield req
            start[i] = env.now
            if slot is not None:
                slots.release(slot)
            yield env.timeout(service)

    for i, (a, s) in enumerate(zip(arrivals, services, strict=True)):
        env.process(request(i, a, s))
    env.run()
    return accepted, start


def _closed_form(arrivals, services, queue_depth=None):
    f = FifoServer() if queue_depth is None else FifoServer(queue_depth)
    out = [f.serve(a, s) for a, s in zip(arrivals, services, strict=True)]
    return [o[0] for o in out], [o[1] for o in out], f


def _random_sequence(seed: int, n: int = 300, load: float | None = None):
    rng = np.random.default_rng(seed)
    if load is None:
        load = rng.uniform(0.3, 1.5)  # from lightly loaded to overloaded
    service = rng.choice([1.0, 2.0, 4.0, 5.5], size=n)
    gaps = rng.exponential(service.mean() / load, size=n)
    arrivals = np.cumsum(gaps)
    return arrivals.tolist(), service.tolist()


@pytest.mark.parametrize("seed", range(20))
def test_start_times_match_simpy_unbounded(seed):
    arrivals, services = _random_sequence(seed)
    acc, start, f = _closed_form(arrivals, services)
    ref_acc, ref_start = _simpy_fifo(arrivals, services)
    assert start == pytest.approx(ref_start, abs=1e-9)
    assert acc == arrivals  # no back-pressure without a queue bound
    assert f.requests == len(arrivals)
    assert f.busy_cycles == pytest.approx(sum(services))
    assert f.queue_cycles == pytest.approx(sum(s - a for s, a in zip(start, arrivals, strict=True)))


@pytest.mark.parametrize("seed", range(20))
def test_start_times_match_simpy_integer_arrivals_with_ties(seed):
    # Integer cycles with several requests per cycle (ties served in arrival = call order).
    rng = np.random.default_rng(1000 + seed)
    arrivals = np.sort(rng.integers(0, 400, size=200)).astype(float).tolist()
    services = rng.choice([1.0, 2.0, 3.0], size=200).tolist()
    _, start, _ = _closed_form(arrivals, services)
    _, ref_start = _simpy_fifo(arrivals, services)
    assert start == pytest.approx(ref_start, abs=1e-9)


@pytest.mark.parametrize("depth", [1, 2, 4, 16])
@pytest.mark.parametrize("seed", range(10))
def test_bounded_queue_matches_simpy(seed, depth):
    arrivals, services = _random_sequence(2000 + seed)
    acc, start, _ = _closed_form(arrivals, services, depth)
    ref_acc, ref_start = _simpy_fifo(arrivals, services, depth)
    assert start == pytest.approx(ref_start, abs=1e-9)
    assert acc == pytest.approx(ref_acc, abs=1e-9)
    # a bounded queue delays acceptance, never service order: starts equal the unbounded server's
    _, free_start, _ = _closed_form(arrivals, services)
    assert start == pytest.approx(free_start, abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_overloaded_bounded_queue_delays_acceptance_like_simpy(seed):
    arrivals, services = _random_sequence(3000 + seed, load=1.5)
    acc, start, _ = _closed_form(arrivals, services, 2)
    ref_acc, _ = _simpy_fifo(arrivals, services, 2)
    delayed = sum(a > arr for a, arr in zip(acc, arrivals, strict=True))
    assert delayed > len(arrivals) // 4  # back-pressure is exercised
    assert acc == pytest.approx(ref_acc, abs=1e-9)
    # never accepted before arriving, never started before accepted
    assert all(arr <= a <= s for arr, a, s in zip(arrivals, acc, start, strict=True))


def test_queue_depth_back_pressure_by_hand():
    # Queue of 2, service 10, five requests at t=0:
    #   r0 starts at once (0); r1, r2 wait (start 10, 20) and fill the queue;
    #   r3 finds it full: accepted when r1 leaves the queue to start, t=10; starts at 30;
    #   r4: the queue is full again (r2, r3) until r2 starts at t=20; starts at 40.
    f = FifoServer(queue_depth=2)
    got = [f.serve(0.0, 10.0) for _ in range(5)]
    assert got == [(0.0, 0.0), (0.0, 10.0), (0.0, 20.0), (10.0, 30.0), (20.0, 40.0)]
    # A later arrival at t=25: waiting are r3 (starts 30) and r4 (40), full: accepted at 30, starts 50.
    assert f.serve(25.0, 10.0) == (30.0, 50.0)
    # At t=45 only r5 (start 50) waits: accepted on arrival, starts at 60.
    assert f.serve(45.0, 10.0) == (45.0, 60.0)
    # Once the server has drained, a request starts on arrival.
    assert f.serve(100.0, 10.0) == (100.0, 100.0)
    assert f.requests == 8
    assert f.busy_cycles == 80.0


def test_unbounded_queue_never_delays_acceptance():
    f = FifoServer()
    got = [f.serve(0.0, 10.0) for _ in range(100)]
    assert all(acc == 0.0 for acc, _ in got)
    assert [s for _, s in got] == [10.0 * i for i in range(100)]
