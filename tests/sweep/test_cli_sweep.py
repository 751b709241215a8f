"""`gpusim sweep`: the table, the best point, CSV and JSON files pandas reads, the cache across runs, the
progress display, and one-line errors for bad input."""

import io
import json
import sys

import pandas as pd
import pytest

from gpusim.cli.main import main

BASE = ["sweep", "saxpy", "--set", "n=4096", "--jobs", "1"]


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_sweep_prints_the_table_and_best_and_writes_both_files(tmp_path, capsys):
    cs, js = tmp_path / "s.csv", tmp_path / "s.json"
    argv = BASE + ["--block", "64,128,256,2048", "--cache-dir", str(tmp_path / "c"), "--csv", str(cs),
                   "--json", str(js)]
    assert main(argv) == 1  # a point failed
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split()[:4] == ["#", "block", "status", "cycles"]
    assert "block.x is 2048; the limit is 1024" in out and "\nbest        block=" in out and "top stall" in out
    assert "4 points: 4 simulated, 0 from the cache" in out
    assert "1 of 4 points failed" in err and "\rsweep:" not in err  # stderr is not a terminal: no progress
    df = pd.read_csv(cs)
    assert df["block"].tolist() == [64, 128, 256, 2048] and df["status"].tolist() == ["ok"] * 3 + ["error"]
    d = json.loads(js.read_text())
    best = df.loc[df["cycles"].idxmin()]
    assert d["best"] == best["point"] and f"best        block={best['block']}:" in out
    assert pd.DataFrame(d["points"])["cycles"].tolist()[:3] == df["cycles"].tolist()[:3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "s.csv", "s.json"]  # no temp files left

    assert main(argv) == 1
    assert "4 points: 1 simulated, 3 from the cache" in capsys.readouterr().out  # the failed point runs again


def test_csv_to_stdout_prints_nothing_else(capsys):
    assert main(BASE + ["--block", "128,256", "--no-cache", "--csv", "-"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(df) == 2 and df["cycles"].dtype == "int64" and not df["cached"].any()


def test_overrides_configs_and_warp_schedulers(capsys):
    assert main(BASE + ["--block", "128", "--config", "a100,gtx980", "--config-set", "sm_count=8,16",
                        "--warp-scheduler", "lrr,gto", "--no-cache", "--json", "-"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["points"]) == 8 and "override.chip.sm_count" in d["columns"]
    assert {(p["config"], p["override.chip.sm_count"], p["warp_scheduler"]) for p in d["points"]} == {
        (c, n, w) for c in ("a100", "gtx980") for n in (8, 16) for w in ("lrr", "gto")}


@pytest.mark.parametrize("argv, message", [
    (["sweep", "pointer_chase", "--block", "64"], "workload 'pointer_chase' has no parameter 'block'; its parameters: "
                                                  "footprint, stride, steps"),
    (["sweep", "saxpy", "--grid", "1,2"], "workload 'saxpy' has no parameter 'grid'; its parameters: n, block"),
    (["sweep", "saxpy", "--config-set", "latency_ns=1"], "ambiguous config field: it may be pcie.latency_ns, "
                                                         "nvlink.latency_ns"),
    (["sweep", "saxpy", "--config-set", "sm_cnt=1"], "did you mean chip.sm_count?"),
    (["sweep", "saxpy", "--config-set", "sm_count"], "expected NAME=VALUE"),
    (["sweep", "saxpy", "--block", "64", "--set", "block=128"], "'block' is given twice"),
    (["sweep", "saxpy", "--dask-scheduler", "gto"], "use --warp-scheduler gto"),
    (["sweep", "saxpy", "--dask-scheduler", "tcp://h:1", "--jobs", "2"], "--jobs sets local workers"),
    (["sweep", "saxpy", "--warp-scheduler", "fifo"], "'fifo' is not one of lrr, gto, two_level"),
    (["sweep", "saxpy", "--config", "a100,nope"], "no built-in config or file named 'nope'"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv + ["--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusim sweep: error: ") and message in err and err.count("\n") == 1


def test_progress_on_a_terminal_unless_quiet(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the plain counter: its output is exact
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(BASE + ["--block", "128,256", "--no-cache"]) == 0
    assert tty.getvalue() == "\rsweep: 1/2 points (0 cached, 0 failed)\rsweep: 2/2 points (0 cached, 0 failed)\n"
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(BASE + ["--block", "128,256", "--no-cache", "--quiet"]) == 0
    assert tty.getvalue() == ""


def test_corrupt_cache_entries_are_a_one_line_warning(tmp_path, capsys):
    argv = BASE + ["--block", "128", "--cache-dir", str(tmp_path)]
    assert main(argv) == 0
    (entry,) = (tmp_path / "sweep").iterdir()
    entry.write_text("{")
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err == (f"gpusim sweep: warning: cache entry {entry}: not valid JSON (truncated?); "
                   "simulating the point again\n")


def test_interrupt_says_how_to_resume(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("gpusim.sweep.sweep", interrupted)  # (sweep_cmd imports it when it runs)
    assert main(BASE + ["--block", "128"]) == 130
    assert "run the same command again to resume" in capsys.readouterr().err
