"""docs/compiler.md shows real output: the MLP before and after the pipeline, and the report."""

from __future__ import annotations

from pathlib import Path

from gpusim.compiler import models, run_pipeline

DOC = (Path(__file__).resolve().parents[2] / "docs" / "compiler.md").read_text()


def test_mlp_examples_are_current():
    before = models.mlp2(32, 64, 128, 10)
    after, report = run_pipeline(before)
    for text in (str(before), str(after), str(report)):
        assert text in DOC, text
