"""Shared by the chart tests: sweep-table rows in the sweep's contract columns, and image checks."""

from pathlib import Path
from typing import Any

from gpusim.stats.metrics import flatten

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def sweep_row(result, point: int, *, label: str | None = None, overrides: dict | None = None,
              status: str = "ok") -> dict[str, Any]:
    """One sweep-table row for a SimResult, in the contract's column order."""
    p = result.provenance
    row = {"point": point, "workload": p["workload"], "config": p["config"], "config_hash": p["config_hash"],
           "label": label or p["config"], **p["params"]}
    row.update({f"override.{k}": v for k, v in (overrides or {}).items()})
    row.update({"warp_scheduler": p["scheduler"], "seed": p["seed"], "status": status, "error": None,
                "verified": result.verified, "cached": False, "wall_seconds": result.wall_seconds})
    row.update(flatten(result.kernel))
    row.update({"verdict": result.verdict.kind, "verdict_reason": result.verdict.summary})
    return row


def error_row(point: int, config: str = "a100", **params) -> dict[str, Any]:
    """A failed point: no metrics, status "error"."""
    return {"point": point, "workload": "saxpy", "config": config, "config_hash": None, "label": config, **params,
            "warp_scheduler": "gto", "status": "error", "error": "launch: block: block.x is 2048; the limit is 1024",
            "verified": None, "cached": False, "wall_seconds": 0.0}


def assert_png(path: str | Path) -> None:
    data = Path(path).read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000


def assert_svg(path: str | Path) -> None:
    text = Path(path).read_text()
    assert "<svg" in text and text.rstrip().endswith("</svg>")
