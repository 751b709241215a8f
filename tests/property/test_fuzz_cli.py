"""Property: whatever argument vector a user types, `gpusim` ends with exit status 0, 1 or 2, and never
with a traceback; a status of 2 ends with one `gpusim COMMAND: error: ...` line (after argparse's usage,
for a usage error).

Each example is a subcommand, a positional argument and a random set of that subcommand's flags with
values drawn from awkward pools (numbers out of range, non-numbers, unwritable paths, unknown names,
malformed assignments), then a few random tokens. Each subcommand's vector starts with flags that keep
the work small (tiny sizes, one job, a temporary cache); the drawn flags come after them, and argparse
lets a later flag win, but no pool holds a large size. Not drawn: `bench` past its argument checks (it
spawns processes; it always gets `--only` of no suite entry), `sweep --dask` and `--scheduler ADDRESS`
(a cluster), `compile --search grid` and `--cost simulated` (tens of seconds), and `program
transformer_layer` (20 s)."""

from __future__ import annotations

import atexit
import contextlib
import io
import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gpusim.cli.main import main

from .profiles import budget

TMP = Path(tempfile.mkdtemp(prefix="gpusim-fuzz-cli-"))
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
(TMP / "file").write_text("not a result\n")
(TMP / "folder").mkdir()
(TMP / "bad.sasm").write_text(".kernel k\n    frob %r0;\n")
(TMP / "model.py").write_text("def build(**sizes):\n    return 42\n")

NUMBERS = ("0", "1", "2", "-1", "3", "64", "1e3", "x", "", "9" * 30, "nan", "inf", "0x10", "1.5", " 7", "-0")
PATHS = (str(TMP / "out.json"), str(TMP / "out.csv"), str(TMP / "out.png"), str(TMP / "out.svg"), str(TMP),
         str(TMP / "folder"), str(TMP / "file" / "x.json"), str(TMP / "missing" / "x.json"), "-", "",
         str(TMP / "file"), "/proc/x.json")
CONFIGS = ("a100", "gtx980", "cpu_like", "nope", "a100,gtx980", str(TMP / "file"), str(TMP / "missing.yaml"), "")
CONFIG_SETS = ("chip.sm_count=2", "sm_count=2", "chip.sm_count=0", "chip.sm_count=-3", "x=1", "chip.clock_mhz=abc",
               "=", "chip.sm_count", "chip.clock_mhz=1e9", "scheduler.policy=lrr")
WORKLOAD_SETS = ("n=64", "n=-1", "n=0", "n=x", "block=0", "block=32", "block=2048", "=", "n", "foo=1", "n=1e3",
                 "n=32,64", "block=64,128", "n=1.5")
WORKLOADS = ("saxpy", "vecadd", "reduce_sum", "divergence", "nope", str(TMP / "folder"), str(TMP / "file"), "")
TOKENS = ("--", "-", "-x", "--json", "--set", "--config", "=", "--help=no", "\u00e9", "\x7f", "--no-such-flag",
          "-c", "a100", "n=64", "0", "-1")

# subcommand -> (positional choices or None, flags that keep it small, {flag: value pool or None for a switch})
COMMANDS = {
    "run": (WORKLOADS, ["--set", "n=256"], {
        "--config": CONFIGS, "--config-set": CONFIG_SETS, "--set": WORKLOAD_SETS,
        "--warp-scheduler": ("lrr", "gto", "two_level", "bad"), "--functional": None, "--seed": NUMBERS,
        "--max-steps": NUMBERS, "--max-cycles": NUMBERS, "--sample": ("auto", "on", "off", "bad"),
        "--sample-budget": NUMBERS, "--json": PATHS, "--csv": PATHS, "--trace": PATHS}),
    "sweep": (WORKLOADS, ["--set", "n=256", "--jobs", "1", "-q", "--cache-dir", str(TMP / "cache")], {
        "--config": CONFIGS, "--block": ("32,64", "0", "x", "64", ""), "--grid": ("1", "2,4", "0"),
        "--set": WORKLOAD_SETS, "--config-set": ("sm_count=2,4", "x=1", "sm_count=0", "sm_count"),
        "--warp-scheduler": ("lrr,gto", "bad", ""), "--seed": NUMBERS, "--no-verify": None,
        "--dask-scheduler": ("lrr", "gto"), "--jobs": NUMBERS, "--cache-dir": PATHS, "--no-cache": None,
        "--csv": PATHS, "--json": PATHS}),
    "info": (None, [], {"--config": CONFIGS, "--config-set": CONFIG_SETS, "--list": None, "--json": PATHS}),
    "occupancy": (None, [], {
        "--config": CONFIGS, "--config-set": CONFIG_SETS, "--workload": WORKLOADS + ("matmul_tiled",),
        "--set": WORKLOAD_SETS, "--block-size": NUMBERS, "--regs": NUMBERS, "--smem": NUMBERS,
        "--carveout": NUMBERS, "--json": PATHS, "--plot": PATHS}),
    "asm": (WORKLOADS + (str(TMP / "bad.sasm"),), [], {"--plain": None}),
    "list": (None, [], {"--json": PATHS}),
    "bench": (None, ["--only", "nope"], {
        "--config": CONFIGS, "--quick": None, "--only": ("saxpy", "x,y", ""), "--json": PATHS,
        "--repeat": NUMBERS, "--functional": None, "--long": None, "--sampling": None, "--sample": ("auto", "x")}),
    "plot": (("RESULT", "SWEEP", str(TMP / "file"), str(TMP / "missing.json")),
             ["-o", str(TMP / "chart.png"), "--kind", "sweep"], {
        "--kind": ("sweep", "stalls", "units", "memory", "roofline", "occupancy", "timeline", "bad"),
        "--output": PATHS, "--metric": ("cycles", "bad"), "--intensity": ("dram", "moved", "bad"),
        "--config": CONFIGS, "--config-set": CONFIG_SETS}),
    "compile": (("mlp2", "attention", "nope", str(TMP / "model.py"), str(TMP / "file")), ["--budget", "4"], {
        "--config": CONFIGS, "--set": ("seq=8", "x=1", "batch=0", "seq=-1", "="), "--shape": ("x=1,4", "x=a", "="),
        "--dtype": ("f32", "f16", "bad"), "--cost": ("analytical", "calibrated", "bad"), "--tune": None,
        "--search": ("local", "bad"), "--budget": NUMBERS[:5], "--search-cost": ("analytical", "bad"),
        "--top-k": NUMBERS, "--cache-dir": PATHS, "--json": PATHS}),
    "compare": (("saxpy", "vecadd", "matmul_tiled", "nope"),
                ["--sizes", "1e1..1e2", "--config", "gtx980", "--max-simulated", "128"], {
        "--config": ("gtx980", "cpu_8core,a100", "nope", ""), "--sizes": ("1e1..1e2", "50", "1e2..1e1", "x", ""),
        "--per-decade": NUMBERS[:5], "--include-transfers": None, "--max-simulated": ("64", "0", "x", "inf"),
        "--plot": PATHS, "--json": PATHS}),
    "program": (("two_streams", "allreduce_overlap", "nope", str(TMP / "file"), str(TMP / "folder")), [], {
        "--config": ("a100", "dgx_a100", "nope"), "--set": ("tokens=8",), "--chunks": NUMBERS,
        "--gpus": ("1,2", "0", "x"), "--json": PATHS, "--trace": PATHS}),
}


def _inputs() -> dict[str, str]:
    """A small result JSON and sweep CSV for `gpusim plot`."""
    result, table = TMP / "result.json", TMP / "sweep.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", "saxpy", "--set", "n=256", "--json", str(result)]) == 0
        assert main(["sweep", "saxpy", "--set", "n=256", "--block", "32,64", "--jobs", "1", "-q", "--no-cache",
                     "--csv", str(table)]) == 0
    return {"RESULT": str(result), "SWEEP": str(table)}


INPUTS: dict[str, str] = {}


@st.composite
def argvs(draw) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    positionals, small, flags = COMMANDS[command]
    argv = [command]
    if positionals is not None:
        argv.append(draw(st.sampled_from(positionals)))
    argv += small
    for flag in draw(st.lists(st.sampled_from(sorted(flags)), max_size=4)):
        pool = flags[flag]
        argv += [flag] if pool is None else [flag, draw(st.sampled_from(pool))]
    if draw(st.integers(0, 3)) == 0:  # a stray token now and then: mostly usage errors, which are cheap
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(TOKENS)))
    return argv


@given(argvs())
@budget(60)
def test_any_argument_vector_exits_0_1_or_2_without_a_traceback(argv):
    if not INPUTS:
        INPUTS.update(_inputs())
    argv = [INPUTS.get(a, a) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(TMP), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:  # in TMP: a relative path ('-' as a cache folder) lands there
            status = main(argv)
        except SystemExit as exc:  # argparse: usage errors (2), --help (0)
            status = exc.code
    text = err.getvalue()
    assert status in (0, 1, 2), (argv, status, text[-2000:])
    assert "Traceback" not in text, (argv, text[-2000:])
    if status == 2:
        lines = text.rstrip("\n").splitlines()
        if lines[-1].startswith("see gpusim"):  # the one-line error is followed by where to read more
            lines = lines[:-1]
        last = lines[-1]
        assert last.startswith(f"gpusim {argv[0]}: error: ") or last.startswith("gpusim: error: "), (argv, text)
