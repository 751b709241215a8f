"""The closed-form FIFO server (gpusim/timing/fifo.py: an L2 slice's data port, a DRAM channel)
against an explicit SimPy model of the same server: one `simpy.Resource(capacity=1)` served first
come first served, with a second Resource of `queue_depth` slots for a bounded queue (a request holds
a slot from when it is accepted until its service starts). A bounded queue delays acceptance, never a
request's start, so the closed form needs no queue: its starts equal the bounded server's."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from gpusim.timing.fifo import make_fifos, serve


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


def _closed_form(arrivals, services):
    f = make_fifos(1)
    start = [float(serve(f, 0, a, s)) for a, s in zip(arrivals, services, strict=True)]
    return start, f


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
    start, f = _closed_form(arrivals, services)
    _, ref_start = _simpy_fifo(arrivals, services)
    assert start == pytest.approx(ref_start, abs=1e-9)
    assert f.requests[0] == len(arrivals)
    assert f.busy_cycles[0] == pytest.approx(sum(services))
    assert f.queue_cycles[0] == pytest.approx(sum(s - a for s, a in zip(start, arrivals, strict=True)))


@pytest.mark.parametrize("seed", range(20))
def test_start_times_match_simpy_integer_arrivals_with_ties(seed):
    # Integer cycles with several requests per cycle (ties served in arrival = call order).
    rng = np.random.default_rng(1000 + seed)
    arrivals = np.sort(rng.integers(0, 400, size=200)).astype(float).tolist()
    services = rng.choice([1.0, 2.0, 3.0], size=200).tolist()
    start, _ = _closed_form(arrivals, services)
    _, ref_start = _simpy_fifo(arrivals, services)
    assert start == pytest.approx(ref_start, abs=1e-9)


@pytest.mark.parametrize("depth", [1, 2, 4, 16])
@pytest.mark.parametrize("seed", range(10))
def test_a_bounded_queue_delays_acceptance_not_service(seed, depth):
    arrivals, services = _random_sequence(2000 + seed)
    start, _ = _closed_form(arrivals, services)
    ref_acc, ref_start = _simpy_fifo(arrivals, services, depth)
    assert start == pytest.approx(ref_start, abs=1e-9)
    assert all(arr <= a <= s for arr, a, s in zip(arrivals, ref_acc, start, strict=True))


def test_starts_by_hand():
    # service 10, five requests at t=0 start at 0, 10, 20, 30, 40; one at t=25 waits for the server
    # until 50; once the server has drained, a request starts on arrival.
    f = make_fifos(1)
    assert [serve(f, 0, 0.0, 10.0) for _ in range(5)] == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert serve(f, 0, 25.0, 10.0) == 50.0
    assert serve(f, 0, 100.0, 10.0) == 100.0
    assert f.queue_cycles[0] == 10 + 20 + 30 + 40 + 25 and f.requests[0] == 7
