"""The published figures of `gpusim validate` (gpusim/data/validation/published.yaml) for the A100 and the
GTX 980: how many there are, that each names a source defined in the file's header, and that the ones
this revision added are measured by the benches they name and land where the configs say."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from gpusim.analysis.validate import measure, references
from gpusim.cli.main import main
from gpusim.data import data_dir
from tests.timing.helpers import time_kernel

N = 32


def _header_tags() -> set[str]:
    text = (data_dir("validation") / "published.yaml").read_text()
    return set(re.findall(r"^#\s+\[(\w+)\]", text, flags=re.M))


def test_at_least_30_published_figures_for_a100_and_gtx980():
    a100, gtx980 = references("a100"), references("gtx980")
    published = [r for r in a100 + gtx980 if "measured" not in r[3]]
    assert len(published) == len(a100) + len(gtx980)  # no real-GPU measurement for either yet
    assert (len(a100), len(gtx980)) == (23, 17)
    assert len(published) >= 30


def test_every_published_figure_cites_a_source_from_the_header():
    tags = _header_tags()
    assert {"PG", "PG8", "WPA", "GB"} <= tags
    for config in ("a100", "gtx980"):
        for fig, value, source, entry in references(config):
            cited = set(re.findall(r"\[([A-Z][A-Z0-9]+)\]", source))
            assert cited and cited <= tags, (config, fig["id"], source)
            assert value > 0
            gap = entry.get("known_gap")
            assert gap is None or len(gap) > 40, (config, fig["id"])  # a reason, not a placeholder


def _independent(op: str, n: int) -> str:
    # n independent ops from %x into 8 rotating destinations: they issue at the opcode's port interval
    body = [f"    {op} %a{i % 8}, %x{', 1' if op.startswith(('shl', 'min')) else ''};" for i in range(n)]
    return "\n".join([".kernel chain", ".param .u64 out", ".reg .u32 %a<8>, %x", ".reg .u64 %b",
                      "    mov.u32 %x, 12345;", "    mov.u32 %a0, 0;", *body,
                      "    ld.param.u64 %b, [out];", "    st.global.u32 [%b], %a0;", "    exit;"])


@pytest.mark.parametrize("op, interval", [("popc.b32", 4), ("shl.b32", 2), ("min.u32", 2), ("not.b32", 1)])
def test_gtx980_opcode_table_gives_the_guide_throughputs(op, interval):
    # One warp on one SMM: N more independent ops cost N x ceil(32 / lanes) cycles of the INT port.
    # gtx980.yaml: popc 8 lanes (32 per SMM per clock), shl and min 16 (64), the rest INT's 32 (128).
    def cycles(n):
        return time_kernel(_independent(op, n), "gtx980", arrays={"out": np.zeros(32, np.uint32)}).cycles

    assert cycles(2 * N) - cycles(N) == N * interval


def test_new_figures_through_the_command(capsys):
    assert main(["validate", "--config", "gtx980", "--figure", "popc_throughput", "--figure", "shl_throughput",
                 "--json", "-"]) == 0
    rows = {r["figure"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    # the PG's 32 and 64 per clock per SMM, less the loop's counter, compare and branch between chains
    assert rows["popc_throughput"]["reference"] == 32 and 0.9 < rows["popc_throughput"]["simulated"] / 32 <= 1
    assert rows["shl_throughput"]["reference"] == 64 and 0.9 < rows["shl_throughput"]["simulated"] / 64 <= 1
    assert {r["status"] for r in rows.values()} == {"ok"}


def test_a_cvt_gap_is_known_and_reported(capsys):
    assert main(["validate", "--config", "a100", "--figure", "cvt_throughput"]) == 0
    out = capsys.readouterr().out
    assert "known gap: an opcodes: entry applies to every type pair" in out and "1 known gaps" in out


def test_l2_bandwidth_per_second_is_bytes_per_clock_at_the_config_clock():
    per_clock = measure("a100", {"bench": "l2_bandwidth", "words": 262144})
    per_second = measure("a100", {"bench": "l2_bandwidth", "words": 262144, "per_second": True})
    assert per_second == pytest.approx(per_clock * 1410 / 1000)
