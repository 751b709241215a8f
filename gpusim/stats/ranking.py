"""What "faster" means when results are compared (a sweep's best point, a sweep chart's default axis,
`gpusim compare`): fewer cycles where every result ran at one clock, less time where the clocks differ
(a design with a faster clock may take more cycles and less time). One definition for every caller."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CYCLES, TIME = "cycles", "kernel_seconds"


def ranked_by(rows: Iterable[dict[str, Any]]) -> str:
    """The metric that ranks `rows` (dicts with `clock_mhz`): "cycles" at one clock, "kernel_seconds"
    where the clocks differ."""
    clocks = {r.get("clock_mhz") for r in rows}
    return TIME if len(clocks) > 1 else CYCLES


__all__ = ["CYCLES", "TIME", "ranked_by"]
