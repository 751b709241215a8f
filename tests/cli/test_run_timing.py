"""`gpusim run` on the timing model (the default): summary table and verdict, --json / --csv / --trace,
--scheduler, --config-set, and --functional keeping the functional-only path."""

import csv
import io
import json

import gpusim
from gpusim.cli.main import main
from gpusim.stats import CSV_COLUMNS, VERDICTS
from tests.cli.broken import broken_vecadd


def test_default_run_is_timed_and_writes_every_output(tmp_path, capsys):
    js, cs, tr = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.trace.json"
    assert main(["run", "vecadd", "--config", "a100", "--set", "n=4096", "--json", str(js), "--csv", str(cs),
                 "--trace", str(tr)]) == 0
    text = capsys.readouterr().out
    assert "cycles" in text and "warp states" in text
    # 16 blocks, about 600 cycles: the verdict is the kernel's own, and its evidence says the launch is longer
    assert "bottleneck           latency-bound: no unit is near its peak" in text
    assert "is shorter than its 5,640-cycle (4.000 us) launch" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json", "r.trace.json"]  # no temp files

    d = json.loads(js.read_text())
    assert d["mode"] == "timing" and d["workload"] == "vecadd" and d["params"] == {"n": 4096, "block": 256}
    assert d["config"] == "a100" and d["config_hash"] == gpusim.load_config("a100").hash()
    assert d["gpusim_version"] == gpusim.__version__ and d["seed"] == 0 and d["scheduler"] == "gto"
    assert d["verified"] is True and d["launch"]["grid"] == [16, 1, 1]
    k = d["kernel"]
    assert k["cycles"] > 0 and k["blocks"] == 16 and k["warps"] == 128
    assert k["warp_instructions"] == d["stats"]["warp_instructions"]
    assert k["flops"] == 4096 and k["bytes_moved"] == 12 * 4096
    assert d["verdict"]["verdict"] == "latency-bound" and d["verdict"]["verdict"] in VERDICTS
    assert len(d["sms"]) == 108 and len(d["timeline"]) == 16
    assert max(b["end"] for b in d["timeline"]) == k["cycles"]

    rows = list(csv.reader(io.StringIO(cs.read_text())))
    assert tuple(rows[0]) == CSV_COLUMNS
    kernel = {r[5]: r[6] for r in rows[1:] if r[2] == "kernel"}
    assert int(kernel["cycles"]) == k["cycles"] and int(kernel["warp_instructions"]) == k["warp_instructions"]
    assert sum(1 for r in rows if r[2] == "block") == 3 * 16

    t = json.loads(tr.read_text())
    xs = [e for e in t["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 16 and t["displayTimeUnit"] == "ns"
    b0 = d["timeline"][0]
    assert xs[0]["ts"] == b0["start"] / 1410 and xs[0]["dur"] == (b0["end"] - b0["start"]) / 1410


def test_json_to_stdout_is_pure_json(capsys):
    assert main(["run", "saxpy", "--set", "n=2048", "--warp-scheduler", "lrr", "--json", "-"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["scheduler"] == "lrr" and d["kernel"]["blocks"] == 8


def test_csv_to_stdout_is_pure_csv(capsys):
    assert main(["run", "saxpy", "--set", "n=2048", "--csv", "-"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and all(r["workload"] == "saxpy" for r in rows)


def test_both_to_stdout_is_an_error(capsys):
    assert main(["run", "saxpy", "--set", "n=64", "--csv", "-", "--json", "-"]) == 2
    assert capsys.readouterr().err.strip() == "gpusim run: error: argument --csv: --json writes to stdout ('-') already"


def test_config_set_reaches_the_timing_model(capsys):
    assert main(["run", "vecadd", "--set", "n=2048", "--config-set", "chip.sm_count=2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["sms"]) == 2 and {b["sm"] for b in d["timeline"]} == {0, 1}


def test_functional_keeps_the_old_path(capsys):
    assert main(["run", "vecadd", "--set", "n=100", "--functional", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["mode"] == "functional" and "kernel" not in d and d["stats"]["threads"] == 256


def test_timing_options_with_functional_are_one_line_errors(tmp_path, capsys):
    assert main(["run", "vecadd", "--functional", "--trace", str(tmp_path / "t.json")]) == 2
    assert capsys.readouterr().err.strip() == ("gpusim run: error: --trace needs the timing model: "
                                               "drop --functional")
    assert main(["run", "vecadd", "--functional", "--csv", "x.csv", "--warp-scheduler", "gto"]) == 2
    assert "--warp-scheduler and --csv need the timing model" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_wrong_result_exits_1_after_writing_the_report(tmp_path, capsys):
    wl = broken_vecadd(tmp_path, 3, 0.0)
    out = tmp_path / "r.json"
    assert main(["run", str(wl), "--set", "n=64", "--json", str(out)]) == 1
    cap = capsys.readouterr()
    assert "differs from the reference at 1 of 64 elements; first at index 3" in cap.err
    assert "verified             NO" in cap.out
    d = json.loads(out.read_text())
    assert d["verified"] is False and d["mismatches"]["c"]["first_indices"] == [3]
