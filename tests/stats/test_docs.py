"""docs/stats.md names every metric, warp state and verdict the code produces."""

from pathlib import Path

from gpusim.stats import KERNEL_METRICS, SM_METRICS, VERDICTS
from gpusim.stats.bottleneck import CONFLICT_FACTOR, SHARED_STALL_PCT, SIMT_THRESHOLD, THROUGHPUT_PCT
from gpusim.timing.decode import WARP_STATES

DOC = (Path(__file__).resolve().parents[2] / "docs" / "stats.md").read_text()


NESTED = {"unit_utilisation_pct": "unit_utilisation_pct.<unit>", "warp_states": "warp_states.<state>",
          "warp_states_pct": "warp_states_pct.<state>"}


def test_every_metric_and_warp_state_is_documented():
    missing = [n for n in [*KERNEL_METRICS, *SM_METRICS, *WARP_STATES] if f"`{NESTED.get(n, n)}`" not in DOC]
    assert not missing


def test_nsight_names_are_documented():
    names = [nsight.split()[0].strip("()") for _, nsight in KERNEL_METRICS.values()]
    missing = [n for n in names if "__" in n and n not in DOC]
    assert not missing


def test_verdict_rules_are_documented():
    for v in VERDICTS:
        assert f"**{v}**" in DOC
    assert f">= {THROUGHPUT_PCT:.0f}" in DOC and f"shared_conflict_factor >= {CONFLICT_FACTOR:.0f}" in DOC
    assert f">= {SHARED_STALL_PCT:.0f}%" in DOC and f"simt_efficiency < {SIMT_THRESHOLD}" in DOC
