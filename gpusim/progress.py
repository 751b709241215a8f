"""Progress bars for work that can take more than a couple of seconds (a long kernel's simulation, a
program of many kernels, a sampled run, a sweep): a tqdm bar on stderr that appears only after `DELAY`
seconds, so short runs print nothing, and only when stderr is a terminal. `gpusim ... --quiet`, or
`GPUSIM_PROGRESS=0` in the environment, turns every bar off; `set_enabled(True)` forces them on (tests).

    with progress.bar(total=n_blocks, desc="simulating saxpy", unit="block") as bar:
        ...
        bar.update(k)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO

DELAY = 2.0  # seconds before a bar is drawn: work that ends sooner prints nothing

_enabled: bool | None = None  # None: decide from the environment and the terminal


def set_enabled(on: bool | None) -> None:
    """Force progress bars on or off for this process (None: back to the default)."""
    global _enabled
    _enabled = on


def enabled(stream: TextIO | None = None) -> bool:
    """Whether bars are drawn on `stream` (default stderr): forced by `set_enabled`, else not when
    GPUSIM_PROGRESS is 0, else when the stream is a terminal."""
    if _enabled is not None:
        return _enabled
    if os.environ.get("GPUSIM_PROGRESS", "").strip() in ("0", "false", "no", "off"):
        return False
    stream = stream or sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def off() -> Iterator[None]:
    """No bars inside the block: for work run on behalf of a caller that draws its own (a sweep's points
    run in this process, counted by the sweep's bar)."""
    global _enabled
    before = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = before


class _Off:
    """The bar when bars are off: takes every call, draws nothing."""

    n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


@contextlib.contextmanager
def bar(total: int | None, desc: str, unit: str = "it", *, stream: TextIO | None = None,
        delay: float = DELAY) -> Iterator:
    """A tqdm bar over `total` units (None: a counter), closed (and erased) when the block ends."""
    stream = stream or sys.stderr
    if not enabled(stream):
        yield _Off()
        return
    from tqdm import tqdm

    b = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False, delay=delay, dynamic_ncols=True)
    try:
        yield b
    finally:
        b.close()


__all__ = ["DELAY", "bar", "enabled", "off", "set_enabled"]
