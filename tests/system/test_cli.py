"""`gpusim compare` and `gpusim program` through the real entry point."""

import json
import shutil

import pytest

from gpusim.cli.main import main
from gpusim.data import data_dir

PROGRAMS = data_dir("configs/programs")


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_compare_table_json_and_plot(capsys, tmp_path):
    status, out, _ = run(capsys, "compare", "saxpy", "--config", "cpu_8core,a100", "--sizes", "1e2..1e7",
                         "--max-simulated", "4096", "--json", str(tmp_path / "c.json"),
                         "--plot", str(tmp_path / "c.png"))
    assert status == 0
    assert "crossover at n = " in out and "latency of one element: cpu_8core" in out and "~" in out
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["configs"] == ["cpu_8core", "a100"] and len(data["points"]) == 12
    assert [p["extrapolated"] for p in data["points"][:6]] == [False, False, True, True, True, True]
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_bad_sizes(capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", "saxpy", "--sizes", "lots"])
    assert e.value.code == 2 and "argument --sizes: 'lots': expected LOW..HIGH" in capsys.readouterr().err


def test_compare_another_size_parameter(capsys):
    status, out, _ = run(capsys, "compare", "divergence", "--config", "cpu_8core,a100", "--size-param", "paths",
                         "--set", "n=1024", "--sizes", "1..32", "--per-decade", "1")
    assert status == 0
    assert out.splitlines()[1].split()[0] == "paths" and "latency of paths = 1" in out
    assert "Divergence: as paths goes from 1 to 32" in out


def test_compare_step_nvlink_vs_pcie(capsys, tmp_path):
    status, out, _ = run(capsys, "compare", "step", "--config", "dgx_a100,a100x8_pcie", "--sizes", "1e6..1e7",
                         "--json", "-")
    data = json.loads(out)
    assert status == 0 and data["configs"] == ["dgx_a100", "a100x8_pcie"] and data["sizes"] == [1_000_000, 10_000_000]
    assert "The bus" in data["explanation"]


@pytest.mark.parametrize("value", ["n", "=3", "n=lots"])
def test_compare_bad_setting(capsys, value):
    with pytest.raises(SystemExit) as e:
        main(["compare", "divergence", "--set", value])
    assert e.value.code == 2 and f"argument --set: {value!r}: expected NAME=NUMBER" in capsys.readouterr().err


def test_program_file(capsys, tmp_path):
    status, out, _ = run(capsys, "program", str(PROGRAMS / "two_streams.yaml"), "--config", "a100",
                         "--json", str(tmp_path / "r.json"), "--trace", str(tmp_path / "t.json"))
    assert status == 0 and "two_streams on a100" in out and "overlap" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert [op["kind"] for op in report["ops"]].count("kernel") == 2
    assert report["busy"][0]["overlap_seconds"] > 0
    trace = json.loads((tmp_path / "t.json").read_text())
    tracks = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"SMs", "copy engine 0", "copy engine 1", "stream a", "stream b"} <= tracks


def test_shipped_collective_program(capsys):
    status, out, _ = run(capsys, "program", str(PROGRAMS / "allreduce_overlap.yaml"), "--config", "dgx_a100",
                         "--json", "-")
    report = json.loads(out)
    assert status == 0 and report["busy"][0]["overlap_seconds"] == pytest.approx(1e-3)


def test_program_error_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    shutil.copy(PROGRAMS / "two_streams.yaml", bad)
    bad.write_text(bad.read_text().replace("bytes: 1 MiB", "bytes: four"))
    status, _, err = run(capsys, "program", str(bad))
    assert status == 2 and f"{bad}:7: ops[2].bytes: expected a size in bytes" in err


def test_transformer_layer(capsys):
    status, out, _ = run(capsys, "program", "transformer_layer", "--config", "dgx_a100", "--gpus", "1,2", "--json", "-")
    data = json.loads(out)
    assert status == 0 and [r["gpus"] for r in data["rows"]] == [1, 2]
    assert data["rows"][1]["speedup"] > 1.5
