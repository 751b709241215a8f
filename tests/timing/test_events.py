"""The engine's next event (gpusim/timing/engine.py): the tournament tree over the SMs' pending events
names, after any mix of posts and takes, the SM a search over every SM finds — the earliest cycle, ties
to the event posted first — or none when no SM has one."""

from __future__ import annotations

import numpy as np
import pytest

from gpusim.timing import engine
from gpusim.timing.jit import to_struct


def _earliest(events) -> int:
    """The SM whose pending event comes first (cycle, then posting order), by looking at every SM."""
    best = -1
    for s in range(events.n):
        if events.on[s] and (best < 0 or (events.time[s], events.seq[s]) < (events.time[best], events.seq[best])):
            best = s
    return best


@pytest.mark.parametrize("n", [1, 5, 108])
def test_tree_names_the_event_a_full_search_finds(n):
    rng = np.random.default_rng(n)
    events = engine.make_events(n, engine.NEVER)
    E = to_struct(events)  # (shares the arrays of `events`)
    assert events.win[1] == -1
    taken = 0
    for _ in range(3000):
        if rng.random() < 0.55:
            s = int(rng.integers(n))
            if not events.on[s]:
                engine.post(E, s, int(rng.integers(0, 40)))  # (a narrow range: many ties)
        else:
            s = int(events.win[1])
            assert s == _earliest(events)
            if s >= 0:  # the engine takes it
                events.on[s] = False
                engine._replay(E, s)
                taken += 1
        assert events.win[1] == _earliest(events)
    assert taken > 500
