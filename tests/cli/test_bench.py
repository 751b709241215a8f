"""`gpusim bench`: the figures and their JSON (no assertions on speed)."""

import json
import math

import pytest

from gpusim.cli import bench_cmd
from gpusim.cli.main import main

TIMING_COLUMNS = {"workload", "params", "verified", "warp_instructions", "thread_instructions", "cycles",
                  "wall_seconds", "exec_seconds", "warp_instructions_per_second", "cycles_per_second",
                  "peak_rss_mib"}


def test_acceptance_suite_is_on_the_timing_model_at_the_issue_sizes():
    suite = dict(bench_cmd.SUITE)
    assert suite["saxpy"] == {"n": 1 << 20} and suite["matmul_tiled"] == {"n": 256}
    assert suite["reduce_sum"] == {"n": 1 << 22} and suite["transpose_shared"] == {"rows": 2048, "cols": 2048}
    assert [n for n, _ in bench_cmd.QUICK] == [n for n, _ in bench_cmd.SUITE]
    assert bench_cmd.TARGET_WARP_IPS == 4_000_000


@pytest.mark.slow
def test_the_suites_pinned_cycles_are_the_models():
    # `gpusim bench` exits 1 when a run's cycles leave these pins: a model change must move them too
    import gpusim

    got = {name: gpusim.simulate(name, "a100", **params).timing.cycles for name, params in bench_cmd.SUITE}
    assert got == bench_cmd.PINNED_CYCLES


def test_quick_saxpy_json_has_every_column(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["bench", "--quick", "--only", "saxpy", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "warp-instr/s" in text and "cycles/s" in text and "target 4,000,000/s" in text
    data = json.loads(out.read_text())
    assert data["mode"] == "timing" and data["config"] == "a100" and data["quick"] is True
    assert data["target_warp_instructions_per_second"] == 4_000_000
    [r] = data["results"]
    assert TIMING_COLUMNS <= set(r)
    assert r["workload"] == "saxpy" and r["params"]["n"] == 1 << 14 and r["verified"] is True
    assert r["warp_instructions"] > 0 and r["cycles"] > 0 and r["wall_seconds"] > 0 and r["peak_rss_mib"] > 0
    assert r["thread_instructions"] >= r["warp_instructions"]
    assert math.isclose(r["warp_instructions_per_second"], r["warp_instructions"] / r["wall_seconds"], rel_tol=1e-9)
    assert math.isclose(r["cycles_per_second"], r["cycles"] / r["wall_seconds"], rel_tol=1e-9)
    assert data["median_warp_instructions_per_second"] == pytest.approx(r["warp_instructions_per_second"])
    assert data["target_met"] == (r["warp_instructions_per_second"] >= 4_000_000)
    # the engine is loaded (or compiled) before the clock starts, and its load time reported
    assert 0 < r["engine_load_seconds"] and 0 < r["cpu_seconds"]
    assert r["warp_instructions_per_cpu_second"] == pytest.approx(r["warp_instructions"] / r["cpu_seconds"])


def test_measure_timing_counts_match_the_functional_run():
    from gpusim import load_config, load_workload

    r = bench_cmd.measure_timing("saxpy", {"n": 1024}, "a100")
    # every warp of a full saxpy grid runs every instruction of the kernel as the ptxas model compiles it
    per_warp = len(load_workload("saxpy").for_config(load_config("a100")).program)
    assert r["verified"] and r["warp_instructions"] == 1024 // 32 * per_warp
    assert r["thread_instructions"] == 1024 * per_warp and r["cycles"] > 0


def test_functional_mode_still_reports_thread_instructions(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_cmd, "FUNCTIONAL_SUITE", [("vecadd", {"n": 2048})])
    out = tmp_path / "f.json"
    assert main(["bench", "--functional", "--only", "vecadd", "--json", str(out)]) == 0
    assert "M thr-instr/s" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["mode"] == "functional"
    [r] = data["results"]
    assert r["workload"] == "vecadd" and r["params"]["n"] == 2048 and r["verified"]
    assert r["thread_instructions_per_second"] > 0 and r["peak_rss_mib"] > 0


def test_functional_measure_counts():
    from gpusim import load_workload

    r = bench_cmd.measure("vecadd", {"n": 4096}, "a100")
    per_warp = len(load_workload("vecadd").program)
    assert r["verified"] and r["warp_instructions"] == 4096 // 32 * per_warp
    assert r["thread_instructions"] == 4096 * per_warp


def test_json_to_stdout_keeps_the_table_off_stdout(capsys):
    assert main(["bench", "--quick", "--only", "matmul_tiled", "--json", "-"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["results"][0]["workload"] == "matmul_tiled"
    assert "warp-instr/s" in cap.err


@pytest.mark.parametrize("argv", [["--only", "nosuch"], ["--quick", "--only", "saxpy,nosuch"],
                                  ["--functional", "--only", "nosuch"]])
def test_unknown_only_name_is_a_clear_error(argv, capsys):
    assert main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "not in the" in err and "saxpy" in err


def test_long_sizes_from_a_linear_fit(monkeypatch):
    # warp instructions = 100 + 3 * knob: the fitted values hit target / 10 and target
    monkeypatch.setattr(bench_cmd, "_in_child", lambda f, name, params, cfg: 100 + 3 * params["k"])
    assert bench_cmd._long_value("w", {}, "k", (10, 20), 30_000, "a100") == (967, 9967)


def test_long_mode_reports_both_lengths(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_cmd, "LONG", [("ffma_peak", {"n": 256, "block": 128}, "iters", (1, 2))])
    monkeypatch.setattr(bench_cmd, "LONG_TARGET_QUICK", 20_000)
    out = tmp_path / "l.json"
    assert main(["bench", "--long", "--quick", "--json", str(out)]) == 0
    assert "under 2048 MiB" in capsys.readouterr().out
    data = json.loads(out.read_text())
    [e] = data["results"]
    assert data["mode"] == "long" and e["workload"] == "ffma_peak" and e["length_param"] == "iters"
    assert e["short"]["params"]["iters"] < e["long"]["params"]["iters"]
    assert e["long"]["warp_instructions"] == pytest.approx(20_000, rel=0.05)
    assert e["short"]["warp_instructions"] == pytest.approx(2_000, rel=0.1)
    assert e["long"]["peak_rss_mib"] > 0 and e["long"]["cycles"] > 0


def test_repeat_reports_the_fastest_run(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["bench", "--quick", "--only", "saxpy", "--repeat", "2", "--json", str(out)]) == 0
    assert "the fastest of 2 runs of each" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["repeat"] == 2
    [r] = data["results"]
    assert len(r["wall_seconds_runs"]) == 2 and r["wall_seconds"] == min(r["wall_seconds_runs"])
    assert math.isclose(r["warp_instructions_per_second"], r["warp_instructions"] / r["wall_seconds"], rel_tol=1e-9)


def test_fastest_keeps_the_quickest_run_and_the_largest_memory():
    runs = [{"workload": "w", "cycles": 10, "warp_instructions": 5, "verified": True, "wall_seconds": w,
             "peak_rss_mib": m} for w, m in ((3.0, 100.0), (2.0, 90.0), (4.0, 120.0))]
    best = bench_cmd._fastest(runs)
    assert best["wall_seconds"] == 2.0 and best["wall_seconds_runs"] == [3.0, 2.0, 4.0]
    assert best["peak_rss_mib"] == 120.0


def test_repeated_runs_that_disagree_are_an_error():
    from gpusim.errors import GpusimError

    runs = [{"workload": "w", "cycles": c, "warp_instructions": 5, "verified": True, "wall_seconds": 1.0,
             "peak_rss_mib": 1.0} for c in (10, 11)]
    with pytest.raises(GpusimError, match=r"differ in cycles \(10 and 11\)"):
        bench_cmd._fastest(runs)


@pytest.mark.parametrize(("value", "message"), [("0", "0 is below the minimum 1"), ("x", "'x' is not an integer")])
def test_repeat_must_be_a_positive_count(value, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--repeat", value])
    assert exc.value.code == 2
    assert f"gpusim bench: error: argument --repeat: {message}\n" in capsys.readouterr().err


def test_repeat_is_for_the_timing_suite_only(capsys):
    assert main(["bench", "--functional", "--repeat", "2"]) == 2
    assert "--repeat applies to the timing suite only" in capsys.readouterr().err


def test_tune_reports_the_candidates_and_the_winner(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["bench", "--tune", "--size", "32", "--candidates", "3", "--jobs", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "tuning a 32x32x32 matmul on a100" in text and "candidates scored" in text and "winner" in text
    data = json.loads(out.read_text())
    assert data["mode"] == data["kind"] == "tune" and data["n"] == 32 and data["workers"] == 2
    assert data["candidates"] >= 3 and data["simulations"] >= data["candidates"] and data["wall_seconds"] > 0
    assert data["cycles"] == min(c for _, c in data["top"]) and data["rejected"] == []
    assert data["kernel_cycles"] < data["cycles"] and data["sampled"] is False
