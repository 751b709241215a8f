"""Reading results and sweep tables, the points the charts draw, configs by hash, and atomic PNG/SVG output."""

import json

import pytest

from gpusim import simulate
from gpusim.errors import GpusimError
from gpusim.plot import KernelPoint, SweepTable, load_input, result_points, save_figure, sweep_points
from gpusim.plot.common import new_figure
from gpusim.plot.io import point_config
from tests.plot.helpers import assert_png, assert_svg, error_row, sweep_row


def write_csv(path, rows):
    import csv

    columns = list(dict.fromkeys(c for r in rows for c in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, columns)
        w.writeheader()
        w.writerows([{k: "" if v is None else v for k, v in r.items()} for r in rows])


def test_result_json_loads_as_a_dict(result_files, saxpy):
    r = load_input(result_files["saxpy"])
    assert isinstance(r, dict) and r["kernel"]["cycles"] == saxpy.cycles
    [p] = result_points([r])
    assert p.label == "saxpy n=4096 block=256" and p.config == "a100" and p.source == str(result_files["saxpy"])
    assert p.kernel["warp_states_pct"] == pytest.approx(saxpy.kernel["warp_states_pct"])


def test_points_from_several_configs_name_them(saxpy):
    other = {**saxpy.to_dict(), "config": "gtx980"}
    assert [p.label for p in result_points([saxpy, other])] == ["saxpy n=4096 block=256 on a100",
                                                                 "saxpy n=4096 block=256 on gtx980"]


@pytest.mark.parametrize("form", ["csv", "list", "points", "columns"])
def test_sweep_table_in_each_form(tmp_path, saxpy, form):
    rows = [sweep_row(saxpy, 0), error_row(1, block=2048, n=4096)]
    path = tmp_path / ("t.csv" if form == "csv" else "t.json")
    if form == "csv":
        write_csv(path, rows)
    elif form == "list":
        path.write_text(json.dumps(rows))
    else:  # gpusim sweep's JSON: {"kind": "sweep", ..., "columns": [...], "points": [...]}
        columns = {"columns": list(rows[0])} if form == "columns" else {}
        path.write_text(json.dumps({"kind": "sweep", "workload": "saxpy", **columns, "points": rows}))
    t = load_input(path)
    assert isinstance(t, SweepTable) and len(t.rows) == 2 and t.errors == 1
    assert t.params == ["n", "block"]  # not seed, verdict_reason or the metrics
    assert t.rows[0]["cycles"] == saxpy.cycles and t.rows[0]["verified"] is True
    assert t.rows[1]["error"].startswith("launch")
    [p] = sweep_points(t)  # the error row is skipped
    assert p.kernel["cycles"] == saxpy.cycles
    for nested, key in (("warp_states_pct", "long_scoreboard"), ("unit_utilisation_pct", "fp32")):
        assert p.kernel[nested][key] == pytest.approx(saxpy.kernel[nested][key])


def test_sweep_points_carry_overrides_and_varying_params(saxpy):
    rows = [sweep_row(saxpy, 0, label="a100 sm_count=54", overrides={"chip.sm_count": 54}),
            {**sweep_row(saxpy, 1), "block": 128}]
    [p0, p1] = sweep_points(SweepTable("t.csv", rows, list(rows[0])))
    assert p0.label == "a100 sm_count=54 block=256" and p1.label == "a100 block=128"
    assert p0.overrides == {"chip.sm_count": 54, "scheduler.policy": "gto"}
    cfg = point_config(KernelPoint("x", {}, "a100", overrides=p0.overrides))
    assert cfg.chip.sm_count == 54


def test_a_rows_warp_scheduler_is_part_of_its_config(saxpy):
    lrr = simulate("saxpy", "a100", scheduler="lrr", n=1024)
    [p] = sweep_points(SweepTable("t.csv", [sweep_row(lrr, 0)], list(sweep_row(lrr, 0))))
    assert point_config(p).hash() == lrr.provenance["config_hash"] != saxpy.provenance["config_hash"]


def test_config_hash_mismatch_is_an_error(saxpy):
    p = KernelPoint("x", {}, "a100", config_hash=saxpy.provenance["config_hash"], overrides={"chip.sm_count": 54},
                    source="r.json")
    with pytest.raises(GpusimError, match=r"r.json: ran on config 'a100' with hash .*--config"):
        point_config(p)


@pytest.mark.parametrize("text, message", [
    ('{"hello": 1}', "neither a result"),
    ("not json", "not JSON"),
    ('[1, 2]', "sweep row 0 is not an object"),
    ('[{"config": "a100"}]', "no column status"),
])
def test_bad_inputs_name_the_file(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(GpusimError, match=message) as exc:
        load_input(path)
    assert str(path) in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(GpusimError, match="nope.json: cannot read"):
        load_input(tmp_path / "nope.json")


def test_functional_result_has_no_kernel_metrics(saxpy):
    functional = {k: v for k, v in saxpy.to_dict().items() if k != "kernel"}
    with pytest.raises(GpusimError, match="no kernel metrics"):
        result_points([functional])


def test_save_png_and_svg(tmp_path):
    fig = new_figure(3, 2)
    fig.subplots().plot([1, 2], [3, 4])
    save_figure(fig, tmp_path / "a.png")
    save_figure(fig, tmp_path / "sub" / "a.svg")
    assert_png(tmp_path / "a.png")
    assert_svg(tmp_path / "sub" / "a.svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "sub"]  # no temporary files left
    with pytest.raises(GpusimError, match=r"a.pdf: unknown image format"):
        save_figure(fig, tmp_path / "a.pdf")
