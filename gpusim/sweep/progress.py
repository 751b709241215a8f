"""A sweep's progress on a terminal: a tqdm bar when tqdm is installed (the `progress` extra), else a plain
counter rewritten on one line."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """Counts points as they finish, `cached` and `failed` ones apart, on `stream` (default stderr)."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total, self.done, self.cached, self.failed = total, 0, 0, 0
        self.stream = stream or sys.stderr
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(total=total, unit="point", desc="sweep", file=self.stream, leave=False)

    def update(self, *, cached: bool, failed: bool) -> None:
        self.done += 1
        self.cached += cached
        self.failed += failed
        if self.bar is not None:
            self.bar.set_postfix(cached=self.cached, failed=self.failed, refresh=False)
            self.bar.update(1)
        else:
            self.stream.write(f"\rsweep: {self.done}/{self.total} points ({self.cached} cached, "
                              f"{self.failed} failed)")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            self.stream.write("\n")
            self.stream.flush()


__all__ = ["Progress"]
