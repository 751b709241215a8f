"""The command line against bad input, as a new user or a hostile tester gives it (docs/robustness.md, "The
command line"): output paths that cannot be written, numbers out of range, signals; and `--version` and
`gpusim list --json`. Each bad input is one line naming the flag, exit status 2, no traceback, and no
work done (no file written)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gpusim
from gpusim.cli.main import Terminated, main

ROOT = os.geteuid() == 0  # root writes read-only files and folders: those cases cannot fail for root


def _exit(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        status = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


# ---- output paths ---------------------------------------------------------------------------------------

# every output flag of every subcommand, with arguments that would otherwise run (large sizes where the
# subcommand simulates: were the check made after the work, these tests would take minutes)
FILE_OUTPUTS = [
    (["run", "saxpy", "--set", "n=16777216"], "--json"),
    (["run", "saxpy", "--set", "n=16777216"], "--csv"),
    (["run", "saxpy", "--set", "n=16777216"], "--trace"),
    (["sweep", "saxpy", "--set", "n=16777216", "--jobs", "1", "--no-cache"], "--csv"),
    (["sweep", "saxpy", "--set", "n=16777216", "--jobs", "1", "--no-cache"], "--json"),
    (["info"], "--json"),
    (["occupancy", "--block-size", "128"], "--json"),
    (["program", "two_streams"], "--json"),
    (["program", "two_streams"], "--trace"),
    (["compare", "saxpy"], "--json"),
    (["compile", "mlp2"], "--json"),
    (["bench"], "--json"),
    (["list"], "--json"),
]
IMAGE_OUTPUTS = [
    (["occupancy", "--block-size", "128"], "--plot"),
    (["plot", "missing.json", "--kind", "sweep"], "--output/-o"),
    (["compare", "saxpy"], "--plot"),
]
FOLDER_OUTPUTS = [
    (["sweep", "saxpy", "--set", "n=16777216", "--jobs", "1"], "--cache-dir"),
    (["compile", "mlp2", "--cost", "simulated"], "--cache-dir"),
]


def _bad_file_paths(tmp: Path, image: bool) -> list[tuple[str, str]]:
    """(path, what the message says) for each way a file output can be unwritable."""
    (tmp / "folder.png").mkdir()
    (tmp / "file").write_text("x")
    cases = [(str(tmp / "folder.png"), "is a folder"),
             (str(tmp / "file" / "out.png"), f"{tmp / 'file'} is a file, not a folder"),
             (str(tmp / "missing" / "out.png"), f"the folder {tmp / 'missing'} does not exist")]
    if image:
        cases.append((str(tmp / "out.pdf"), "unknown image format; name the file .png or .svg"))
    if not ROOT:
        (tmp / "readonly.png").write_text("x")
        (tmp / "readonly.png").chmod(0o444)
        (tmp / "locked").mkdir(mode=0o555)
        cases += [(str(tmp / "readonly.png"), "the file is read-only"),
                  (str(tmp / "locked" / "out.png"), f"cannot write in {tmp / 'locked'}: Permission denied")]
    if sys.platform == "linux":  # a folder even root cannot create files in
        cases.append(("/proc/out.png", "cannot write in /proc: "))
    return cases


@pytest.mark.parametrize(("argv", "flag"), FILE_OUTPUTS + IMAGE_OUTPUTS,
                         ids=[f"{a[0]} {f}" for a, f in FILE_OUTPUTS + IMAGE_OUTPUTS])
def test_an_unwritable_output_file_is_refused_before_any_work(argv, flag, tmp_path, capsys):
    for path, what in _bad_file_paths(tmp_path, (argv, flag) in IMAGE_OUTPUTS):
        t0 = time.perf_counter()
        status, out, err = _exit([*argv, flag.split("/")[0], path], capsys)
        assert status == 2, (path, err)
        assert err.startswith(f"gpusim {argv[0]}: error: argument {flag}: {path}: {what}"), err
        assert err.count("\n") == 1 and out == ""
        assert time.perf_counter() - t0 < 10  # refused, not simulated first
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["folder.png", "file"] + ([] if ROOT else ["readonly.png", "locked"]))


@pytest.mark.parametrize(("argv", "flag"), FOLDER_OUTPUTS, ids=[a[0] for a, _ in FOLDER_OUTPUTS])
def test_an_unusable_cache_folder_is_refused_before_any_work(argv, flag, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    cases = [(tmp_path / "file", "is a file, not a folder"),
             (tmp_path / "file" / "cache", f"{tmp_path / 'file'} is a file, not a folder")]
    if not ROOT:
        (tmp_path / "locked").mkdir(mode=0o555)
        cases.append((tmp_path / "locked", f"cannot write in {tmp_path / 'locked'}: Permission denied"))
    for path, what in cases:
        status, _, err = _exit([*argv, flag, str(path)], capsys)
        assert status == 2
        assert err == f"gpusim {argv[0]}: error: argument {flag}: {path}: {what}\n"


def test_a_missing_cache_folder_is_created(tmp_path, capsys):
    cache = tmp_path / "new" / "cache"
    status, _, _ = _exit(["sweep", "saxpy", "--set", "n=64", "--jobs", "1", "-q", "--cache-dir", str(cache)], capsys)
    assert status == 0 and len(list((cache / "sweep").iterdir())) == 1


def test_a_bad_second_output_leaves_no_first_output(tmp_path, capsys):
    good = tmp_path / "good.json"
    status, _, err = _exit(["run", "saxpy", "--set", "n=64", "--json", str(good), "--csv", str(tmp_path)], capsys)
    assert status == 2 and err == f"gpusim run: error: argument --csv: {tmp_path}: is a folder\n"
    assert not good.exists()


def test_two_outputs_to_one_file_are_refused(tmp_path, capsys):
    same = str(tmp_path / "out")
    status, _, err = _exit(["run", "saxpy", "--set", "n=64", "--json", same, "--trace", same], capsys)
    assert status == 2 and err == f"gpusim run: error: argument --trace: {same}: --json writes this file already\n"


def test_a_trace_to_stdout_is_no_file_named_dash(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, out, _ = _exit(["run", "saxpy", "--set", "n=64", "--trace", "-"], capsys)
    assert status == 0 and json.loads(out)["traceEvents"] and list(tmp_path.iterdir()) == []


def test_a_special_file_is_not_replaced(capsys):
    status, _, err = _exit(["info", "--json", os.devnull], capsys)
    assert status == 2
    assert err == f"gpusim info: error: argument --json: {os.devnull}: exists and is not a regular file\n"
    assert Path(os.devnull).is_char_device()


# ---- numbers --------------------------------------------------------------------------------------------

NUMERIC = [
    (["run", "saxpy"], "--seed", "-1", "-1 is below the minimum 0"),
    (["run", "saxpy"], "--seed", "1.5", "'1.5' is not an integer"),
    (["run", "saxpy"], "--seed", "9" * 40, f"'{'9' * 40}' is out of range (0 to 9223372036854775807)"),
    (["run", "saxpy"], "--max-steps", "0", "0 is below the minimum 1"),
    (["run", "saxpy"], "--max-cycles", "-5", "-5 is below the minimum 1"),
    (["run", "saxpy"], "--max-cycles", "1e9", "'1e9' is not an integer"),
    (["run", "saxpy", "--sample", "auto"], "--sample-budget", "0", "0 is below the minimum 1"),
    (["sweep", "saxpy"], "--jobs/-j", "0", "0 is below the minimum 1"),
    (["sweep", "saxpy"], "--jobs/-j", "5000", "'5000' is above the maximum 1024"),
    (["sweep", "saxpy"], "--seed", "-3", "-3 is below the minimum 0"),
    (["occupancy"], "--block-size/-b", "0", "0 is below the minimum 1"),
    (["occupancy", "-b", "128"], "--regs/-r", "-1", "-1 is below the minimum 0"),
    (["occupancy", "-b", "128"], "--smem/-s", "-1", "-1 is below the minimum 0"),
    (["occupancy", "-b", "128"], "--carveout", "-1", "-1 is below the minimum 0"),
    (["bench"], "--repeat", "0", "0 is below the minimum 1"),
    (["program", "transformer_layer"], "--chunks", "0", "0 is below the minimum 1"),
    (["program", "transformer_layer"], "--gpus", "1,0", "0 is below the minimum 1"),
    (["program", "transformer_layer"], "--gpus", "1,x", "'x' is not an integer"),
    (["compare", "saxpy"], "--per-decade", "0", "0 is below the minimum 1"),
    (["compare", "saxpy"], "--max-simulated", "0", "0 is below the minimum 1"),
    (["compare", "saxpy"], "--max-simulated", "inf", "'inf' is above the maximum 2.14748e+09"),
    (["compare", "saxpy"], "--max-simulated", "nan", "'nan' is not a number"),
    (["compare", "saxpy"], "--sizes", "1e9..1e2", "'1e9..1e2': LOW is above HIGH"),
    (["compare", "saxpy"], "--sizes", "0..10", "'0..10': expected LOW..HIGH, e.g. 1e2..1e8: 0 is below the minimum 1"),
    (["compile", "mlp2", "--tune"], "--budget", "0", "0 is below the minimum 1"),
    (["compile", "mlp2", "--tune"], "--top-k", "-2", "-2 is below the minimum 1"),
]


@pytest.mark.parametrize(("argv", "flag", "value", "message"), NUMERIC,
                         ids=[f"{a[0]} {f} {v[:8]}" for a, f, v, _ in NUMERIC])
def test_a_number_out_of_range_is_a_usage_error(argv, flag, value, message, capsys):
    status, out, err = _exit([*argv, flag.split("/")[0], value], capsys)
    assert status == 2 and out == ""
    assert err.splitlines() == [f"gpusim {argv[0]}: error: argument {flag}: {message}", f"see gpusim {argv[0]} --help"]


# ---- version, list ---------------------------------------------------------------------------------------

def test_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"gpusim {version('gpusim')}\n" == f"gpusim {gpusim.__version__}\n"


def test_list_json_is_a_pandas_table(capsys):
    pd = pytest.importorskip("pandas")
    status, out, _ = _exit(["list", "--json"], capsys)
    table = pd.read_json(io.StringIO(out))
    assert status == 0 and list(table.columns) == ["kind", "name", "description", "params", "source"]
    kinds = table.groupby("kind")["name"].apply(set)
    assert {"saxpy", "pointer_chase"} <= kinds["workload"] and set(gpusim.list_workloads()) == kinds["workload"]
    assert {"a100", "gtx980", "cpu_8core"} <= kinds["config"] and kinds["program"] == {"two_streams",
                                                                                        "allreduce_overlap"}
    saxpy = table[table.name == "saxpy"].iloc[0]
    assert saxpy.params == "n=1048576, block=256" and Path(saxpy.source, "workload.yaml").is_file()
    assert json.loads(out)[0]["kind"] == "workload"


def test_shipped_programs_run_by_name(capsys):
    status, out, _ = _exit(["program", "two_streams", "--config", "a100"], capsys)
    assert status == 0 and "two_streams on a100" in out
    status, _, err = _exit(["program", "three_streams"], capsys)
    assert status == 2 and err == ("gpusim program: error: three_streams: no such file, and no shipped program of "
                                   "that name (shipped: allreduce_overlap, two_streams)\n")


# ---- signals --------------------------------------------------------------------------------------------

def _handler_installed(pid: int) -> bool:
    """gpusim's SIGTERM handler is in place (Linux: /proc/PID/status lists the signals caught)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # no /proc: rely on the delay alone
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _interrupt(argv: list[str], sig: int, cwd: Path, *, after: float = 2.0, ready=None):
    """Start `gpusim ARGV`, send `sig` `after` seconds later (and after `ready()`, when given, is true),
    and return its exit status, stdout and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "gpusim", *argv], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60 and not (_handler_installed(proc.pid) and (ready is None or ready())):
        time.sleep(0.05)
    time.sleep(max(0.0, after - (time.monotonic() - t0)))
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.mark.parametrize(("sig", "status", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                     (signal.SIGTERM, 143, "terminated")], ids=["INT", "TERM"])
def test_run_stopped_by_a_signal_leaves_no_output(sig, status, word, tmp_path):
    argv = ["run", "saxpy", "--set", "n=16777216", "--json", "out.json", "--csv", "out.csv", "--trace", "t.json"]
    code, out, err = _interrupt(argv, sig, tmp_path)
    assert (code, out, err) == (status, "", f"gpusim run: {word}\n")
    assert list(tmp_path.iterdir()) == []  # no output, not even a temporary file


def test_sweep_stopped_by_sigterm_keeps_the_finished_points(tmp_path):
    cache = tmp_path / "cache"
    argv = ["sweep", "saxpy", "--set", "n=262144", "--block", "32,64,128,256,512,1024", "--jobs", "2", "-q",
            "--cache-dir", str(cache), "--csv", "s.csv"]

    def finished() -> list[Path]:
        return list((cache / "sweep").glob("*.json")) if (cache / "sweep").is_dir() else []

    code, out, err = _interrupt(argv, signal.SIGTERM, tmp_path, after=0, ready=lambda: len(finished()) >= 1)
    assert (code, out) == (143, "")
    assert err == ("gpusim sweep: terminated; the points that finished are cached: run the same command again to "
                   "resume\n")
    kept = finished()
    assert 1 <= len(kept) < 6 and sorted(p.name for p in (cache / "sweep").iterdir()) == sorted(p.name for p in kept)
    assert [p.name for p in tmp_path.iterdir()] == ["cache"]  # no s.csv


def test_a_signal_while_the_subcommands_load_names_the_command_typed(monkeypatch, capsys):
    """Ctrl-C before argument parsing has finished (the subcommands' modules still importing) reports the
    command on the command line, not bare "gpusim"."""
    from gpusim.cli import main as cli_main

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "build_parser", interrupted)
    assert cli_main.main(["run", "saxpy"]) == 130
    assert capsys.readouterr().err == "gpusim run: interrupted\n"
    assert cli_main.main(["--version"]) == 130
    assert capsys.readouterr().err == "gpusim: interrupted\n"


@pytest.mark.parametrize(("stop", "status", "word"), [(KeyboardInterrupt, 130, "interrupted"),
                                                      (Terminated, 143, "terminated")],
                         ids=["INT", "TERM"])
def test_a_signal_wrapped_by_code_called_from_c_still_stops_the_command(stop, status, word, monkeypatch, capsys):
    """A signal that lands while Numba loads a cached function comes out as Numba's `SystemError: ...
    returned a result with an exception set`, caused by the signal's exception (seen in CI on SIGTERM):
    the command still stops as the signal asks, with its status and one line, no traceback."""
    from gpusim.cli import main as cli_main

    def wrapped(*_):
        try:
            raise stop()
        except KeyboardInterrupt as exc:
            try:
                raise SystemError("<function _numba_unpickle> returned a result with an exception set") from exc
            except SystemError as inner:
                raise SystemError("CPUDispatcher(<function _line_arrays>) returned a result with an exception "
                                  "set") from inner

    monkeypatch.setattr(cli_main, "build_parser", wrapped)
    assert cli_main.main(["run", "saxpy"]) == status
    assert capsys.readouterr().err == f"gpusim run: {word}\n"
    assert cli_main.signal_behind(ValueError("no signal behind it")) is None


def test_a_signal_that_lands_in_a_finalizer_still_stops_the_command():
    """Python drops an exception raised in `__del__` (llvmlite frees the engine's objects that way): a
    SIGTERM arriving there was lost and the run went on to print its results with exit status 0."""
    code = ("import time\nfrom gpusim.cli.main import _signals\n"
            "class Slow:\n    def __del__(self):\n        t = time.monotonic()\n"
            "        while time.monotonic() - t < 1.0: pass\n"
            "try:\n    with _signals():\n        print('ready', flush=True)\n        x = Slow()\n        del x\n"
            "        time.sleep(10)\n        print('finished')\nexcept KeyboardInterrupt as exc:\n"
            "    print('stopped by', type(exc).__name__)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == "ready\n"
    time.sleep(0.3)  # inside Slow.__del__'s second
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert (out, err) == ("stopped by Terminated\n", "")
