"""Comparing a kernel's output buffers with the numpy reference, and the record of one workload run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusim.errors import VerificationError
from gpusim.functional.launch import Launch

MAX_SHOWN = 10  # mismatching indices kept per output
CHUNK = 1 << 18  # elements compared at a time (their temporaries stay in the caches)
NOT_CHECKED = "not checked (no reference)"


def verified_text(verified: bool | None) -> str:
    """How every report says a run's `verified`: "yes" (checked against a reference and equal), "NO"
    (checked, and it differs) or "not checked (no reference)" (None: nothing compared it)."""
    return NOT_CHECKED if verified is None else "yes" if verified else "NO"


def compare(outputs: dict[str, np.ndarray], expected: dict[str, np.ndarray], *, rtol: float,
            atol: float) -> dict[str, dict[str, Any]]:
    """{output name: {"count", "first_indices", "got", "expected"}} for every output that differs.
    Floating-point buffers compare like np.allclose (NaN equals NaN); integer buffers exactly.
    Indices are ints for 1-D buffers, tuples for multi-dimensional ones. Buffers are compared CHUNK
    elements at a time, so a large output costs no buffer-sized temporaries."""
    out: dict[str, dict[str, Any]] = {}
    for name, got in outputs.items():
        exp = np.broadcast_to(np.asarray(expected[name]), got.shape)
        g, e = got.reshape(-1), exp.reshape(-1)
        count = 0
        first: list[int] = []
        for i in range(0, g.size, CHUNK):
            bad = _differs(g[i:i + CHUNK], e[i:i + CHUNK], rtol, atol)
            n = int(np.count_nonzero(bad))
            count += n
            if n and len(first) < MAX_SHOWN:
                first += (i + np.flatnonzero(bad)[:MAX_SHOWN - len(first)]).tolist()
        if not count:
            continue
        if got.ndim <= 1:
            idx: list = first
        else:
            idx = [tuple(int(c) for c in t) for t in zip(*np.unravel_index(first, got.shape), strict=True)]
        out[name] = {"count": count, "first_indices": idx, "got": g[first].tolist(), "expected": e[first].tolist()}
    return out


def _differs(got: np.ndarray, exp: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Where one chunk of an output differs from the reference: np.isclose, asked only where the values
    are not equal (few, or none), for floating point; exact for integers."""
    bad = np.asarray(got != exp)
    if got.dtype.kind in "fc" and bad.any():
        at = np.flatnonzero(bad)
        bad[at] = ~np.isclose(got[at], exp[at], rtol=rtol, atol=atol, equal_nan=True)
    return bad


@dataclass(frozen=True)
class WorkloadRun:
    """One run of a workload on the functional executor: what ran, the executor's result, the output
    buffers read back, the reference's expectation and where they differ."""

    workload: str
    params: dict[str, int | float]
    launch: Launch
    result: Any  # gpusim.functional ExecResult
    outputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    mismatches: dict[str, dict[str, Any]]
    bytes_moved: int | float = 0
    flops: int | float | None = None
    seed: int = 0
    exec_seconds: float = 0.0  # wall time of the kernel's execution alone

    @property
    def ok(self) -> bool:
        """Nothing differs from the reference (also True when there is none: see `verified`)."""
        return not self.mismatches

    @property
    def verified(self) -> bool | None:
        """The one place that decides "verified": True when the outputs were compared with a reference and
        match, False when they differ, None when nothing was compared (no reference: `gpusim.launch`)."""
        return None if not self.expected and not self.mismatches else not self.mismatches

    def message(self) -> str:
        """One line per differing output (empty when verified)."""
        head = f"{self.workload} ({', '.join(f'{k}={v}' for k, v in self.params.items())})"
        lines = []
        for name, m in self.mismatches.items():
            size = self.outputs[name].size
            i0 = m["first_indices"][0]
            lines.append(f"{head}: output '{name}' differs from the reference at {m['count']} of {size} "
                         f"elements; first at index {i0}: got {m['got'][0]!r}, expected {m['expected'][0]!r} "
                         f"(first indices: {m['first_indices']})")
        return "\n".join(lines)

    def check(self) -> WorkloadRun:
        """Raise VerificationError naming the first mismatching indices unless the outputs verified."""
        if not self.ok:
            raise VerificationError(self.message(), mismatches=self.mismatches)
        return self

    def summary(self) -> dict[str, Any]:
        """A JSON-ready record: workload, params, launch, verified, stats, bytes moved, flops."""
        stats = self.result.stats.to_dict() if hasattr(self.result, "stats") else {}
        return {
            "workload": self.workload,
            "params": dict(self.params),
            "launch": {"grid": list(self.launch.grid), "block": list(self.launch.block)},
            "seed": self.seed,
            "verified": self.verified,
            "mismatches": {k: {**v, "first_indices": [list(i) if isinstance(i, tuple) else i
                                                      for i in v["first_indices"]]}
                           for k, v in self.mismatches.items()},
            "stats": stats,
            "bytes_moved": self.bytes_moved,
            "flops": self.flops,
        }
