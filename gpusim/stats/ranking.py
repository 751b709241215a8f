"""What "faster" means when results are compared (a sweep's best point, a sweep chart's default axis,
`gpusim compare`): fewer cycles where every result ran at one clock, less time where the clocks differ
(a design with a faster clock may take more cycles and less time). One definition for every caller."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CYCLES, TIME, ENERGY = "cycles", "kernel_seconds", "energy_j"
# what "best" can mean, the one vocabulary of `--metric` (gpusim compare, gpusim sweep): least time (fewest
# cycles at one clock), or least energy (the power model's energy_j; energy to solution in compare)
METRICS = ("time", "energy")


def ranked_by(rows: Iterable[dict[str, Any]], metric: str = "time") -> str:
    """The column that ranks `rows` (dicts with `clock_mhz`): with `metric` "energy", "energy_j"; else
    "cycles" at one clock, "kernel_seconds" where the clocks differ."""
    if metric == "energy":
        return ENERGY
    clocks = {r.get("clock_mhz") for r in rows}
    return TIME if len(clocks) > 1 else CYCLES


__all__ = ["CYCLES", "ENERGY", "METRICS", "TIME", "ranked_by"]
