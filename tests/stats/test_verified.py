"""One place decides "verified" (issue 37, item 3): a kernel checked against a reference is verified yes
or NO; one nothing checked (gpusim.launch has no reference) is "not checked" in the terminal, null in
the JSON and the CSV, and said so in the HTML report: never "verified yes"."""

import json

import numpy as np

import gpusim
from gpusim.data import data_dir
from gpusim.plot.report import report_html
from gpusim.workloads.verify import verified_text

SAXPY = data_dir("workloads") / "saxpy" / "saxpy.sasm"


def _launched():
    x, y = np.arange(256, dtype=np.float32), np.ones(256, dtype=np.float32)
    return gpusim.launch(SAXPY, 2, 128, [x, y, np.float32(2.0), 256], config="a100")


def test_a_launch_is_not_checked_anywhere():
    r = _launched()
    assert r.verified is None and r.run.verified is None and r.run.ok  # (nothing differs: exit status 0)
    assert "\nverified             not checked (no reference)\n" in r.summary_table()
    assert json.loads(json.dumps(r.to_dict()))["verified"] is None
    assert [row["value"] for row in r.rows() if row["metric"] == "verified"] == [None]
    page = report_html(r)
    assert "not checked (no reference)" in page and "verified against" not in page
    fn = gpusim.launch(SAXPY, 2, 128, [np.zeros(256, np.float32), np.ones(256, np.float32), np.float32(2.0), 256],
                       mode="functional")
    assert fn.verified is None and fn.summary()["verified"] is None


def test_a_workload_with_a_reference_is_checked():
    r = gpusim.simulate("saxpy", "a100", n=1024)
    assert r.verified is True and "\nverified             yes\n" in r.summary_table()
    assert "verified against the numpy reference" in report_html(r)
    assert [verified_text(v) for v in (True, False, None)] == ["yes", "NO", "not checked (no reference)"]
