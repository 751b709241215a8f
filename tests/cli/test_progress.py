"""Progress bars: drawn on a terminal once work passes the delay, never when stderr is not a terminal,
with GPUSIM_PROGRESS=0 or under --quiet; a long simulation counts its blocks."""

import contextlib
import io

from gpusim import progress, simulate


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_bars_only_on_a_terminal(monkeypatch):
    assert not progress.enabled(io.StringIO())
    assert progress.enabled(_Tty())
    monkeypatch.setenv("GPUSIM_PROGRESS", "0")
    assert not progress.enabled(_Tty())
    progress.set_enabled(True)
    assert progress.enabled(io.StringIO())


def test_a_bar_counts_and_is_erased_at_the_end():
    out = _Tty()
    with progress.bar(10, "simulating saxpy", "block", stream=out, delay=0) as bar:
        bar.update(4)
        bar.update(6)
        assert bar.n == 10
    text = out.getvalue()
    assert "simulating saxpy" in text and "/10" in text and "block" in text
    assert text.endswith("\r")  # (erased: the line is blanked and the cursor back at its start)


def test_a_short_run_prints_nothing_before_the_delay():
    out = _Tty()
    with progress.bar(10, "quick", stream=out) as bar:  # (the default delay: 2 s)
        bar.update(10)
    assert "quick" not in out.getvalue()


def test_simulation_counts_its_blocks(monkeypatch, capsys):
    progress.set_enabled(True)
    seen = []
    real = progress.bar

    @contextlib.contextmanager
    def spy(total, desc, unit="it", **kw):
        with real(total, desc, unit, delay=0.0) as b:
            yield b
        seen.append((total, desc, unit, b.n))

    monkeypatch.setattr(progress, "bar", spy)
    simulate("saxpy", "a100", n=4096, block=64)
    assert seen == [(64, "simulating saxpy", "block", 64)]
    assert "simulating saxpy" in capsys.readouterr().err


def _bars_on_a_terminal() -> bool:
    return progress.enabled(_Tty())


def test_pool_workers_draw_no_bars_of_their_own():
    """A sweep's workers share the parent's terminal, where the parent counts the points."""
    import concurrent.futures as cf
    import multiprocessing as mp

    from gpusim.sweep.executors import worker_signals

    with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=worker_signals) as pool:
        assert pool.submit(_bars_on_a_terminal).result() is False
    assert _bars_on_a_terminal()  # (here, on a terminal, they are drawn)
