"""`gpusim run --sample auto|on|off`: the estimate and its bound in the summary and the JSON, auto's
full simulation of a small kernel, and the errors; `gpusim bench --sampling --quick`."""

import json

import pytest

from gpusim.cli.main import main

SMALL = ["--config-set", "chip.sm_count=4"]  # a wave is 32 blocks of 256 threads


def test_sample_on_prints_and_writes_the_estimate(tmp_path, capsys):
    js = tmp_path / "s.json"
    # 64 iterations: the loop model's four levels (1/2/4/8) simulate fewer warp instructions than the kernel
    assert main(["run", "ffma_peak", "--sample", "on", *SMALL, "--set", "n=4096", "--set", "iters=64",
                 "--json", str(js)]) == 0
    text = capsys.readouterr().out
    assert "estimate" in text and "cycles +-" in text and "loops cut at" in text and "error bound" in text
    d = json.loads(js.read_text())
    assert d["mode"] == "sampled" and d["verified"] is True and d["workload"] == "ffma_peak"
    assert d["verification"]["elements"] == 5 * 256 and "verified             yes: 1,280 of 4,096" in text
    assert d["params"] == {"n": 4096, "block": 256, "iters": 64}
    assert d["cycles_low"] <= d["cycles"] <= d["cycles_high"] and 0 < d["confidence"] < 0.05
    s = d["sampling"]
    assert s["requested"] == "on" and s["decision"] == "sampled" and s["blocks_per_wave"] == 32
    assert s["grid_blocks"] == 16 and s["loop_trips"] == {"20": 63}  # the loop at pc 20, 64 iterations
    assert [r["loop_cap"] for r in s["runs"]] == [1, 2, 4, 8] and all(r["blocks"] == 16 for r in s["runs"])
    assert s["warp_instructions_simulated"] == sum(r["warp_instructions"] for r in s["runs"])
    assert s["warp_instructions_simulated"] < s["warp_instructions_estimated"]
    assert set(s["bounds_cycles"]) == {"loops"} and s["model"]["waves_extrapolated"] == 0
    assert d["detail"]["kernel"]["cycles"] == max(r["cycles"] for r in s["runs"])
    assert d["detail"]["verified"] is None


def test_sample_auto_runs_a_small_kernel_in_full(tmp_path, capsys):
    js = tmp_path / "a.json"
    assert main(["run", "saxpy", "--sample", "auto", "--set", "n=4096", "--json", str(js)]) == 0
    text = capsys.readouterr().out
    assert "full simulation (a small kernel" in text and "warp states" in text
    d = json.loads(js.read_text())
    assert d["mode"] == "timing" and d["verified"] is True and d["confidence"] == 0.0
    assert d["sampling"]["decision"] == "full" and d["sampling"]["requested"] == "auto"
    assert d["sampling"]["cycles"] == d["kernel"]["cycles"]


def test_sample_off_is_todays_output(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["run", "vecadd", "--set", "n=2048", "--json", str(a)]) == 0
    assert main(["run", "vecadd", "--set", "n=2048", "--sample", "off", "--json", str(b)]) == 0
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert "sampling" not in da and "sampling" not in db
    da.pop("wall_seconds"), db.pop("wall_seconds"), da.pop("exec_seconds"), db.pop("exec_seconds")
    assert da == db


def test_sample_budget_moves_the_loop_levels(tmp_path):
    caps = []
    for budget in ("1", "100000000"):
        js = tmp_path / f"{budget}.json"
        assert main(["run", "ffma_peak", "--sample", "on", *SMALL, "--set", "n=4096", "--set", "iters=40",
                     "--sample-budget", budget, "--json", str(js)]) == 0
        caps.append([r["loop_cap"] for r in json.loads(js.read_text())["sampling"]["runs"]])
    assert caps == [[1, 2, 4, 8], [4, 8, 16, 32]]  # the cheapest plan; the highest levels (4s < 40)


def test_sampled_csv_and_trace_describe_the_largest_sampled_run(tmp_path):
    cs, tr = tmp_path / "s.csv", tmp_path / "t.json"
    assert main(["run", "saxpy", "--sample", "on", *SMALL, "--set", "n=65536", "--csv", str(cs),
                 "--trace", str(tr), "--json", str(tmp_path / "s.json")]) == 0
    d = json.loads((tmp_path / "s.json").read_text())
    rows = [line.split(",") for line in cs.read_text().splitlines()]
    assert sum(1 for r in rows if r[2] == "block") == 3 * 96  # start, end, cycles of each block
    assert d["sampling"]["runs"] == [{**d["sampling"]["runs"][0], "purpose": "waves", "blocks": 96}]
    assert json.loads(tr.read_text())


@pytest.mark.parametrize("argv, message", [
    (["run", "saxpy", "--sample", "on", "--set", "n=4096"], "cannot sample: nothing to extrapolate"),
    (["run", "saxpy", "--sample", "on", "--functional"], "--sample needs the timing model"),
    (["run", "saxpy", "--sample-budget", "1000"], "--sample-budget needs --sample auto or on"),
])
def test_sample_errors(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_bad_sample_value_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "saxpy", "--sample", "sometimes"])
    assert e.value.code == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err


def test_bench_sampling_quick_reports_error_and_speedup(tmp_path, capsys):
    cfg = tmp_path / "a100_4sm.yaml"
    cfg.write_text("extends: a100\nchip:\n  sm_count: 4\n")
    out = tmp_path / "b.json"
    assert main(["bench", "--sampling", "--quick", "--sample", "on", "--only", "saxpy", "--config", str(cfg),
                 "--json", str(out)]) == 0
    assert "speed-up" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["mode"] == "sampling" and doc["sample"] == "on"
    [r] = doc["results"]
    assert r["workload"] == "saxpy" and r["decision"] == "sampled" and r["params"] == {"n": 65536, "block": 256}
    assert r["error_pct"] == pytest.approx(100 * (r["sampled_cycles"] - r["full_cycles"]) / r["full_cycles"])
    assert abs(r["error_pct"]) < 5
    assert r["speedup"] == pytest.approx(r["full_cpu_seconds"] / r["sampled_cpu_seconds"])  # CPU: the machine is shared
    assert r["wall_speedup"] == pytest.approx(r["full_wall_seconds"] / r["sampled_wall_seconds"])
    assert r["sampled_warp_instructions"] < r["full_warp_instructions"]
    assert r["within_bound"] == (abs(r["error_pct"]) <= r["confidence_pct"])
    s = doc["summary"]
    assert (s["compared"], s["rows"]) == (1, 1)
    assert s["geomean_error_pct"] == pytest.approx(max(abs(r["error_pct"]), 1e-3))


def test_bench_sampling_keeps_full_runs_in_a_references_file_and_writes_markdown(tmp_path, capsys):
    cfg = tmp_path / "a100_4sm.yaml"
    cfg.write_text("extends: a100\nchip:\n  sm_count: 4\n")
    refs, md = tmp_path / "refs.jsonl", tmp_path / "t.md"
    argv = ["bench", "--sampling", "--quick", "--only", "saxpy", "--config", str(cfg), "--references", str(refs)]
    assert main([*argv, "--sample", "off", "--json", str(tmp_path / "a.json")]) == 0  # the full runs alone
    [a] = json.loads((tmp_path / "a.json").read_text())["results"]
    assert a["decision"] == "not run" and not a["full_cached"] and len(refs.read_text().splitlines()) == 1
    stored = json.loads(refs.read_text())
    assert stored["cycles"] == a["full_cycles"] and stored["kernel"]["cycles"] == a["full_cycles"]
    assert main([*argv, "--sample", "on", "--json", str(tmp_path / "b.json"), "--markdown", str(md)]) == 0
    [b] = json.loads((tmp_path / "b.json").read_text())["results"]
    assert b["full_cached"] and b["full_cycles"] == a["full_cycles"] and len(refs.read_text().splitlines()) == 1
    table = md.read_text()
    assert f"| saxpy | n=65536, block=256 | {a['full_cycles']:,} | {b['sampled_cycles']:,} |" in table
    assert "geometric-mean |error|" in table
    refs.write_text("not json\n")
    assert main([*argv, "--sample", "off"]) == 2
    assert f"{refs}:1: not a reference record" in capsys.readouterr().err


def test_bench_sampling_reports_a_workload_it_cannot_sample(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["bench", "--sampling", "--quick", "--sample", "on", "--only", "saxpy", "--json", str(out)]) == 0
    assert "cannot sample" in capsys.readouterr().out  # 256 blocks on a100: under one wave, no loop
    [r] = json.loads(out.read_text())["results"]
    assert r["decision"] == "error" and "nothing to extrapolate" in r["reason"] and "error_pct" not in r
