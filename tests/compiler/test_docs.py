"""docs/compiler.md shows real output: the MLP before and after the pipeline, and the report; the
calibrated model's errors."""

from __future__ import annotations

from pathlib import Path

from gpusim.compiler import models, run_pipeline
from gpusim.compiler.cost import Calibration

DOC = (Path(__file__).resolve().parents[2] / "docs" / "compiler.md").read_text()


def test_mlp_examples_are_current():
    before = models.mlp2(32, 64, 128, 10)
    after, report = run_pipeline(before)
    for text in (str(before), str(after), str(report)):
        assert text in DOC, text


def test_calibration_numbers_are_current():
    """The held-out errors quoted in the doc are those of the shipped calibration."""
    report = Calibration.load().training
    for key in ("mape_held_out_analytical", "mape_held_out_calibrated"):
        assert f"{report[key]:.1f} %" in DOC, key
